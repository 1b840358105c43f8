package scratchusage

import (
	"time"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// windowBuckets is how many slices a window is kept in: the windowed peak covers the window to
// within one slice (a minute of an hour), with a fixed memory cost per volume.
const windowBuckets = 60

// Stats are the figures kept for one volume.
type Stats struct {
	UsedBytes uint64
	SizeBytes uint64
	// PeakBytes is the most used since the agent first sampled the volume: since the pod
	// started, unless the agent restarted after it.
	PeakBytes uint64
	// WindowPeakBytes is the most used over the sliding window.
	WindowPeakBytes uint64
	// FullTotal counts the episodes the volume was observed full: each time a sample found it
	// full after one that did not (or after the first sample).
	FullTotal uint64
	// Full tells whether the last sample found the volume full.
	Full bool
	// Since is when the agent first sampled the volume; LastFull when a sample last found it full
	// (zero if never).
	Since, LastFull time.Time
	// LargePages is what the volume's tmpfs runs with; its State is empty until the agent knows.
	LargePages v1alpha1.VolumeLargePages
}

// tracker accumulates the samples of one volume.
type tracker struct {
	stats  Stats
	window slidingMax
}

func newTracker(window time.Duration) *tracker {
	return &tracker{window: slidingMax{width: max(window/windowBuckets, time.Nanosecond), span: window}}
}

// observe takes in one sample taken at now. fullBelow is the fraction of the size under which
// the free space counts as full.
func (t *tracker) observe(u Usage, now time.Time, fullBelow float64) {
	s := &t.stats
	if s.Since.IsZero() {
		s.Since = now
	}
	s.UsedBytes, s.SizeBytes = u.UsedBytes, u.SizeBytes
	s.PeakBytes = max(s.PeakBytes, u.UsedBytes)
	t.window.add(now, u.UsedBytes)
	s.WindowPeakBytes = t.window.max(now)
	full := isFull(u, fullBelow)
	if full && !s.Full {
		s.FullTotal++
	}
	if full {
		s.LastFull = now
	}
	s.Full = full
}

// isFull: nothing left, or less than the fraction fullBelow of the size. A database fails its
// write with ENOSPC when the next write does not fit, not only at zero, so a little slack counts.
func isFull(u Usage, fullBelow float64) bool {
	return u.FreeBytes == 0 || float64(u.FreeBytes) < fullBelow*float64(u.SizeBytes)
}

// slidingMax is the maximum of the values added over the last span, kept as the maxima of
// consecutive slices of the given width.
type slidingMax struct {
	width, span time.Duration
	buckets     []bucket
}

type bucket struct {
	start time.Time
	max   uint64
}

func (w *slidingMax) add(now time.Time, v uint64) {
	start := now.Truncate(w.width)
	if n := len(w.buckets); n > 0 && w.buckets[n-1].start.Equal(start) {
		w.buckets[n-1].max = max(w.buckets[n-1].max, v)
	} else {
		w.buckets = append(w.buckets, bucket{start: start, max: v})
	}
	w.expire(now)
}

// expire drops the slices that ended before the window began.
func (w *slidingMax) expire(now time.Time) {
	from := now.Add(-w.span)
	i := 0
	for i < len(w.buckets) && !w.buckets[i].start.Add(w.width).After(from) {
		i++
	}
	w.buckets = w.buckets[i:]
}

func (w *slidingMax) max(now time.Time) uint64 {
	w.expire(now)
	var m uint64
	for _, b := range w.buckets {
		m = max(m, b.max)
	}
	return m
}
