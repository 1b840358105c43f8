package scratchusage

import (
	"cmp"
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/nodeprofile"
)

// FieldManager owns status.scratchVolumes of the node's NodeIOProfile and nothing else, beside the
// agent's probe and read-ahead sides.
const FieldManager = v1alpha1.AgentFieldManager + "-scratchusage"

// DefaultReportInterval is the shortest time between two writes of the figures to the API, unless
// a volume has just filled up.
const DefaultReportInterval = 10 * time.Second

// publisher copies the sampler's figures into the node's NodeIOProfile status, where the operator
// reads them. It writes only when they changed, at most once per interval, except that a volume
// found full is reported at once: that is the figure a user waits for.
type publisher struct {
	profile  *nodeprofile.Writer
	interval time.Duration
	// last is what the last successful write sent; published is false until one succeeded, so that
	// the first write also clears what an earlier agent left for pods that are gone.
	last      []v1alpha1.ScratchVolumeUsage
	lastAt    time.Time
	published bool
	ensured   bool
}

// publish writes figures when they differ from the last write and the interval has passed, or a
// volume filled up since.
func (p *publisher) publish(ctx context.Context, figures map[Volume]Stats, now time.Time) error {
	cur := usageList(figures)
	if p.published && equality.Semantic.DeepEqual(cur, p.last) {
		return nil
	}
	if p.published && now.Sub(p.lastAt) < p.interval && !newlyFull(p.last, cur) && !pagesChanged(p.last, cur) {
		return nil
	}
	if !p.ensured {
		if _, err := p.profile.Ensure(ctx); err != nil {
			return err
		}
		p.ensured = true
	}
	if err := p.profile.ApplyStatus(ctx, &v1alpha1.NodeIOProfileStatus{ScratchVolumes: cur}); err != nil {
		return err
	}
	p.last, p.lastAt, p.published = cur, now, true
	return nil
}

// usageList is the status form of the figures, sorted by namespace, pod and ScratchVolume. Times
// are cut to the second, as the API stores them, so that an unchanged figure compares equal.
func usageList(figures map[Volume]Stats) []v1alpha1.ScratchVolumeUsage {
	out := make([]v1alpha1.ScratchVolumeUsage, 0, len(figures))
	for v, s := range figures {
		u := v1alpha1.ScratchVolumeUsage{
			Namespace: v.Namespace, Pod: v.Pod, ScratchVolume: v.ScratchVolume,
			SampledSince: metav1.NewTime(s.Since.Truncate(time.Second)),
			SizeBytes:    int64(s.SizeBytes), PeakBytes: int64(s.PeakBytes), WindowPeakBytes: int64(s.WindowPeakBytes),
			FullEpisodes: int64(s.FullTotal), Full: s.Full,
		}
		if s.LargePages.State != "" {
			lp := s.LargePages
			u.LargePages = &lp
		}
		if !s.LastFull.IsZero() {
			t := metav1.NewTime(s.LastFull.Truncate(time.Second))
			u.LastFullTime = &t
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b v1alpha1.ScratchVolumeUsage) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.ScratchVolume, b.ScratchVolume))
	})
	return out
}

// newlyFull reports whether some volume in cur has a full episode that last does not.
func newlyFull(last, cur []v1alpha1.ScratchVolumeUsage) bool {
	before := make(map[[3]string]int64, len(last))
	for _, u := range last {
		before[[3]string{u.Namespace, u.Pod, u.ScratchVolume}] = u.FullEpisodes
	}
	for _, u := range cur {
		if n, ok := before[[3]string{u.Namespace, u.Pod, u.ScratchVolume}]; u.FullEpisodes > 0 && (!ok || u.FullEpisodes > n) {
			return true
		}
	}
	return false
}

// pagesChanged reports whether some volume in cur runs with other pages than last said: what a
// user who just changed spec.largePages, or started a pod, waits to read.
func pagesChanged(last, cur []v1alpha1.ScratchVolumeUsage) bool {
	before := make(map[[3]string]v1alpha1.VolumeLargePages, len(last))
	for _, u := range last {
		if u.LargePages != nil {
			before[[3]string{u.Namespace, u.Pod, u.ScratchVolume}] = *u.LargePages
		}
	}
	for _, u := range cur {
		if u.LargePages != nil && !equality.Semantic.DeepEqual(before[[3]string{u.Namespace, u.Pod, u.ScratchVolume}], *u.LargePages) {
			return true
		}
	}
	return false
}
