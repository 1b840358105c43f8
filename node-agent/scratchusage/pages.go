package scratchusage

// This file gives each pod's RAM volume the pages its ScratchVolume asks for (spec.largePages):
// decide what a volume needs from the wish, the kernel's facts and what was done before, act once,
// and keep the report that the sampler publishes beside the usage figures.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
)

// PagesConfig is what the page setter of one node needs.
type PagesConfig struct {
	// Enabled lets the agent change the volumes' tmpfs (--large-pages); when false it only reports
	// them Disabled.
	Enabled bool
	// Paths are where the kernel's facts and the mount table are read; zero for the usual places.
	Paths tmpfspages.Paths
	// Set changes a tmpfs's huge= option; nil means tmpfspages.Set.
	Set func(p tmpfspages.Paths, dir, value string) (tmpfspages.Change, error)
}

// pager remembers, per volume, what was asked for and what came of it, so that each volume is
// changed at most once per wish: a kernel that refuses is reported, not asked again every second.
// The kernel's facts are read again at each change, which is rare: an administrator may turn
// shmem_enabled to deny while the agent runs.
type pager struct {
	cfg  PagesConfig
	done map[key]pagesDone
}

type pagesDone struct {
	want   v1alpha1.LargePagesPolicy
	report v1alpha1.VolumeLargePages
}

// pagesOutcome is what one attempt found and did.
type pagesOutcome struct {
	report v1alpha1.VolumeLargePages
	// reconfigured is true when the attempt changed the tmpfs, false when it found it as wanted
	// (after an agent restart, say) or could not change it.
	reconfigured bool
	// retry is true when the volume is not a tmpfs mount yet: the next round tries again.
	retry bool
}

func newPager(cfg PagesConfig) *pager {
	if cfg.Set == nil {
		cfg.Set = tmpfspages.Set
	}
	return &pager{cfg: cfg, done: map[key]pagesDone{}}
}

// ensure gives the volume mounted at dir the pages want asks for, unless that was done (or
// found impossible) before for this wish. attempted is false when nothing was tried this time.
func (p *pager) ensure(v Volume, dir string, want v1alpha1.LargePagesPolicy, now time.Time) (o pagesOutcome, attempted bool) {
	if d, seen := p.done[v.key()]; seen && d.want == want {
		return pagesOutcome{report: d.report}, false
	}
	o = p.apply(dir, want)
	t := metav1.NewTime(now.Truncate(time.Second))
	o.report.Time = &t
	if !o.retry {
		p.done[v.key()] = pagesDone{want: want, report: o.report}
	}
	return o, true
}

// forget drops what is remembered of the volumes not present.
func (p *pager) forget(present map[key]bool) {
	for k := range p.done {
		if !present[k] {
			delete(p.done, k)
		}
	}
}

// apply acts on one volume and says what it runs with.
func (p *pager) apply(dir string, want v1alpha1.LargePagesPolicy) pagesOutcome {
	if !p.cfg.Enabled {
		return pagesOutcome{report: v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesDisabled, Huge: p.current(dir),
			Message: "the node agent runs with --large-pages=false, so the tmpfs keeps the pages the kubelet mounted it with; " +
				"install the agent with large pages (docs/install.md) to have them"}}
	}
	kernel, err := tmpfspages.ReadKernel(p.cfg.Paths)
	if err != nil {
		return pagesOutcome{report: failed(p.current(dir), fmt.Errorf("failed to read the kernel's transparent huge page settings: %w", err))}
	}
	value := tmpfspages.WithinSize
	if want == v1alpha1.LargePagesNever {
		// What a tmpfs mounted without huge= gets, which is how the kubelet mounted it.
		value = kernel.TmpfsDefault
	} else if !kernel.Supported() {
		return pagesOutcome{report: v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesUnsupported, Huge: tmpfspages.Never,
			Message: "the node's kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage/shmem_enabled), so the tmpfs keeps 4 KiB pages"}}
	}
	c, err := p.cfg.Set(p.cfg.Paths, dir, value)
	switch {
	case errors.Is(err, tmpfspages.ErrNotTmpfsMount):
		return pagesOutcome{retry: true}
	case errors.Is(err, tmpfspages.ErrRefused), errors.Is(err, tmpfspages.ErrUnsupported):
		return pagesOutcome{report: v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesUnsupported, Huge: c.Before,
			Message: fmt.Sprintf("the node's kernel does not give this tmpfs large pages: %v; the volume keeps its pages and the agent does not try again for this pod", err)}}
	case errors.Is(err, tmpfspages.ErrPermission):
		return pagesOutcome{report: failed(c.Before, fmt.Errorf("%w; the node agent's container needs the capability SYS_ADMIN (docs/install.md), or turn large pages off for the node agent", err))}
	case err != nil:
		return pagesOutcome{report: failed(c.Before, err)}
	}
	r := v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesApplied, Huge: c.After}
	if want == v1alpha1.LargePagesNever {
		r.State = v1alpha1.LargePagesDefault
	} else if why := kernel.Override(); why != "" {
		r.State, r.Message = v1alpha1.LargePagesOverridden, "huge="+c.After+" is set, but "+why
	}
	return pagesOutcome{report: r, reconfigured: c.Reconfigured}
}

// current is the volume's huge= option as the mount table shows it, "" when it cannot be read.
func (p *pager) current(dir string) string {
	v, err := tmpfspages.Current(p.cfg.Paths, dir)
	if err != nil {
		return ""
	}
	return v
}

func failed(huge string, err error) v1alpha1.VolumeLargePages {
	return v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesFailed, Huge: huge,
		Message: strings.TrimSpace("could not set the tmpfs's pages: " + err.Error())}
}
