package scratchusage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestTrackerFollowsSamples(t *testing.T) {
	const mib = 1 << 20
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sample := func(used uint64) Usage {
		return Usage{SizeBytes: 100 * mib, UsedBytes: used * mib, FreeBytes: (100 - used) * mib}
	}
	steps := []struct {
		at   time.Duration
		used uint64
		want Stats
	}{
		{0, 10, Stats{UsedBytes: 10 * mib, SizeBytes: 100 * mib, PeakBytes: 10 * mib, WindowPeakBytes: 10 * mib}},
		{time.Second, 70, Stats{UsedBytes: 70 * mib, SizeBytes: 100 * mib, PeakBytes: 70 * mib, WindowPeakBytes: 70 * mib}},
		// Under 1% free counts as full, and entering it is one episode however long it lasts.
		{2 * time.Second, 100, Stats{UsedBytes: 100 * mib, SizeBytes: 100 * mib, PeakBytes: 100 * mib, WindowPeakBytes: 100 * mib, FullTotal: 1, Full: true}},
		{3 * time.Second, 100, Stats{UsedBytes: 100 * mib, SizeBytes: 100 * mib, PeakBytes: 100 * mib, WindowPeakBytes: 100 * mib, FullTotal: 1, Full: true}},
		{4 * time.Second, 5, Stats{UsedBytes: 5 * mib, SizeBytes: 100 * mib, PeakBytes: 100 * mib, WindowPeakBytes: 100 * mib, FullTotal: 1}},
		{5 * time.Second, 100, Stats{UsedBytes: 100 * mib, SizeBytes: 100 * mib, PeakBytes: 100 * mib, WindowPeakBytes: 100 * mib, FullTotal: 2, Full: true}},
		// An hour and a minute later the full minute has left the window, not the pod's peak.
		{time.Hour + time.Minute + 5*time.Second, 20, Stats{UsedBytes: 20 * mib, SizeBytes: 100 * mib, PeakBytes: 100 * mib, WindowPeakBytes: 20 * mib, FullTotal: 2}},
	}
	tr := newTracker(time.Hour)
	for _, s := range steps {
		tr.observe(sample(s.used), start.Add(s.at), DefaultFullBelow)
		if diff := cmp.Diff(s.want, tr.stats, cmpopts.IgnoreFields(Stats{}, "Since", "LastFull")); diff != "" {
			t.Fatalf("after %d MiB at +%s (-want +got):\n%s", s.used, s.at, diff)
		}
	}
	if got := tr.stats.Since; !got.Equal(start) {
		t.Errorf("Since = %s, want the first sample's time %s", got, start)
	}
	if got, want := tr.stats.LastFull, start.Add(5*time.Second); !got.Equal(want) {
		t.Errorf("LastFull = %s, want the last full sample's time %s", got, want)
	}
}

func TestIsFull(t *testing.T) {
	tests := []struct {
		name      string
		u         Usage
		fullBelow float64
		want      bool
	}{
		{"nothing free", Usage{SizeBytes: 100, FreeBytes: 0}, 0, true},
		{"under the threshold", Usage{SizeBytes: 1000, FreeBytes: 9}, 0.01, true},
		{"at the threshold", Usage{SizeBytes: 1000, FreeBytes: 10}, 0.01, false},
		{"threshold off, a byte free", Usage{SizeBytes: 1000, FreeBytes: 1}, 0, false},
	}
	for _, tt := range tests {
		if got := isFull(tt.u, tt.fullBelow); got != tt.want {
			t.Errorf("%s: isFull(%+v, %g) = %t, want %t", tt.name, tt.u, tt.fullBelow, got, tt.want)
		}
	}
}

func TestSlidingMaxKeepsBoundedSlices(t *testing.T) {
	w := newTracker(time.Hour).window
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 * 3600 {
		w.add(start.Add(time.Duration(i)*time.Second), uint64(i))
	}
	if n := len(w.buckets); n > windowBuckets+1 {
		t.Errorf("after three hours of samples the window holds %d slices, want at most %d", n, windowBuckets+1)
	}
	if got, want := w.max(start.Add(3*time.Hour)), uint64(3*3600-1); got != want {
		t.Errorf("max = %d, want %d", got, want)
	}
}

func TestWindowLabel(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Hour: "1h", 30 * time.Minute: "30m", 90 * time.Minute: "1h30m", 24 * time.Hour: "24h", 45 * time.Second: "45s"} {
		if got := windowLabel(d); got != want {
			t.Errorf("windowLabel(%s) = %q, want %q", d, got, want)
		}
	}
}
