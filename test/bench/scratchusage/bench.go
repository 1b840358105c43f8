package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// Workloads: what one measured round does.
const (
	wStatfs = "statfs"
	wList   = "list/"   // + reader
	wSample = "sample/" // + reader
	wGather = "gather"
	wScrape = "scrape"
)

// seriesPerVolume is how many series the collector exports per volume: used, size, two peaks
// and the full counter.
const seriesPerVolume = 5

// Warm-up: the sampler keeps a volume's windowed peak in one slice per sixtieth of the window, so
// an agent that has run for a whole window holds 61 slices per volume. The warm-up moves the
// clock one slice per round for a window and a little more, so that the heap figure is the
// steady state of a long-running agent rather than that of its first seconds.
const (
	warmUpStep   = scratchusage.DefaultWindow / 60
	warmUpRounds = 60 + 2
)

// fixture is what every measurement shares: the pods of the largest count, each with a mounted
// volume, and what each volume should report.
type fixture struct {
	pods      []*corev1.Pod
	dirs      []string
	sizeBytes uint64
	used      map[types.UID]uint64
	scheme    *runtime.Scheme
}

// newFixture creates n pods and mounts and fills their volumes under workDir. Every fifth volume
// holds a quarter of its size and the third is full, so statfs reports used blocks and the
// sampler goes through its "full" path; the others are empty, as most are between queries.
func newFixture(n int, size resource.Quantity) (*fixture, error) {
	f := &fixture{used: map[types.UID]uint64{}, scheme: testenv.Scheme()}
	items := make([]corev1.Pod, n)
	for i := range n {
		f.pods = append(f.pods, podFor(i, size))
		items[i] = *f.pods[i]
	}
	vols := scratchusage.Discover(items, nodeName)
	if len(vols) != n {
		return nil, fmt.Errorf("the sampler's discovery finds %d of the %d pods' volumes", len(vols), n)
	}
	if err := mountVolumes(workDir, vols, size.Value()); err != nil {
		return nil, err
	}
	page := int64(unix.Getpagesize())
	f.sizeBytes = uint64((size.Value() + page - 1) / page * page)
	for i, v := range vols {
		dir := v.Dir(workDir)
		f.dirs = append(f.dirs, dir)
		write, want := fillOf(i, int64(f.sizeBytes))
		if err := fillVolume(dir, write); err != nil {
			return nil, fmt.Errorf("failed to fill %s: %w", dir, err)
		}
		f.used[v.PodUID] = uint64(want)
	}
	return f, nil
}

// fillOf returns how many bytes to write into volume i of the given size, and how many it
// should then report used.
func fillOf(i int, size int64) (write, used int64) {
	switch {
	case i == 2:
		return size + 1, size
	case i%5 == 0:
		return size / 4, size / 4
	}
	return 0, 0
}

// check verifies that the sampler saw the n first volumes with the figures they were given, so
// that no figure comes from a sampler that found nothing to read.
func (f *fixture) check(snap map[scratchusage.Volume]scratchusage.Stats, n int) error {
	if len(snap) != n {
		return fmt.Errorf("the sampler reports %d volumes, want %d", len(snap), n)
	}
	for v, st := range snap {
		if st.SizeBytes != f.sizeBytes || st.UsedBytes != f.used[v.PodUID] {
			return fmt.Errorf("the sampler reports %s/%s with %d of %d bytes used, want %d of %d",
				v.Namespace, v.Pod, st.UsedBytes, st.SizeBytes, f.used[v.PodUID], f.sizeBytes)
		}
	}
	return nil
}

// bench measures every workload at one volume count per call to measureCount.
type bench struct {
	fx      *fixture
	minTime time.Duration
	report  *Report
}

func (b *bench) measureCount(ctx context.Context, n int) error {
	dirs := b.fx.dirs[:n]
	if err := b.record(ctx, wStatfs, n, func() error { return statfsAll(dirs) }); err != nil {
		return err
	}
	for _, kind := range readers {
		if err := b.measureSampler(ctx, kind, n); err != nil {
			return fmt.Errorf("%d volumes, %s: %w", n, kind, err)
		}
	}
	return nil
}

func (b *bench) record(ctx context.Context, workload string, n int, round func() error) error {
	c, err := measure(ctx, b.minTime, round)
	if err != nil {
		return fmt.Errorf("%s at %d volumes: %w", workload, n, err)
	}
	b.report.addCost(workload, n, c)
	return nil
}

// statfsAll is the floor of a sampling round: the one system call per volume that cannot be
// avoided, without the sampler's listing and bookkeeping.
func statfsAll(dirs []string) error {
	var st unix.Statfs_t
	for _, d := range dirs {
		if err := unix.Statfs(d, &st); err != nil {
			return err
		}
	}
	return nil
}

// measureSampler builds a sampler over n pods served by the given reader, measures the heap it
// holds once warmed up, then the cost of a List alone and of a whole sampling round; over the
// cache-like reader, the one the agent has, also the cost of a scrape. Everything it builds is
// garbage when it returns, so that none of it is billed to the next measurement's heap.
func (b *bench) measureSampler(ctx context.Context, kind string, n int) error {
	base := liveHeap()
	reader, err := newReader(kind, b.fx.pods[:n], b.fx.scheme)
	if err != nil {
		return err
	}
	withStore := liveHeap()
	clk := &clock{now: time.Unix(1_800_000_000, 0)}
	cfg := scratchusage.Config{NodeName: nodeName, KubeletRoot: workDir, Now: clk.Now, Registerer: prometheus.NewRegistry()}
	s, err := scratchusage.NewSampler(cfg, reader, logr.Discard())
	if err != nil {
		return err
	}
	for range warmUpRounds {
		clk.advance(warmUpStep)
		if err := s.SampleOnce(ctx); err != nil {
			return err
		}
	}
	if err := b.fx.check(s.Snapshot(), n); err != nil {
		return err
	}
	b.report.addHeap(kind, n, liveHeap()-withStore, withStore-base)

	if err := b.record(ctx, wList+kind, n, func() error {
		var pods corev1.PodList
		return reader.List(ctx, &pods)
	}); err != nil {
		return err
	}
	// Each measured round is one interval later, as in the agent, which moves to a new window
	// slice every minute.
	if err := b.record(ctx, wSample+kind, n, func() error {
		clk.advance(scratchusage.DefaultInterval)
		return s.SampleOnce(ctx)
	}); err != nil {
		return err
	}
	if kind != cachedReader {
		return nil
	}
	return b.measureScrape(ctx, s, n)
}

// measureScrape measures what Prometheus costs the agent with n volumes: collecting the
// sampler's figures, and collecting and encoding them as a scrape does (without HTTP and gzip).
func (b *bench) measureScrape(ctx context.Context, s *scratchusage.Sampler, n int) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(s.Collector()); err != nil {
		return err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	series := 0
	for _, mf := range mfs {
		series += len(mf.GetMetric())
	}
	if series != seriesPerVolume*n {
		return fmt.Errorf("a scrape at %d volumes returns %d series, want %d", n, series, seriesPerVolume*n)
	}
	if err := b.record(ctx, wGather, n, func() error { _, err := reg.Gather(); return err }); err != nil {
		return err
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	return b.record(ctx, wScrape, n, func() error {
		mfs, err := reg.Gather()
		if err != nil {
			return err
		}
		enc := expfmt.NewEncoder(io.Discard, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return err
			}
		}
		return nil
	})
}
