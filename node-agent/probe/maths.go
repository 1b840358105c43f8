package probe

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Boundaries of etcd's etcd_disk_wal_fsync_duration_seconds histogram: FsyncBucketCount upper
// bounds starting at FsyncBucketStartSeconds, each FsyncBucketFactor times the previous one
// (0.001, 0.002, 0.004, … 8.192 s). They are constants so that a Prometheus histogram can be built
// with exactly these buckets: prometheus.ExponentialBuckets(FsyncBucketStartSeconds,
// FsyncBucketFactor, FsyncBucketCount). Sharing etcd's boundaries lets a node's figure be read
// against the etcd dashboards and alerts people already know.
const (
	FsyncBucketStartSeconds = 0.001
	FsyncBucketFactor       = 2
	FsyncBucketCount        = 14
)

// FsyncBucketBounds returns the upper bounds of the fdatasync histogram as durations, in a new
// slice on each call.
func FsyncBucketBounds() []time.Duration {
	bounds := make([]time.Duration, FsyncBucketCount)
	bound := time.Duration(FsyncBucketStartSeconds * float64(time.Second))
	for i := range bounds {
		bounds[i] = bound
		bound *= FsyncBucketFactor
	}
	return bounds
}

// PerSecond returns n divided by elapsed, truncated, or 0 when elapsed is not positive (a rate over
// no measurable time means nothing).
func PerSecond(n int64, elapsed time.Duration) int64 {
	if elapsed <= 0 || n <= 0 {
		return 0
	}
	return int64(float64(n) / elapsed.Seconds())
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of samples by the nearest-rank method: the
// smallest sample such that at least p percent of the samples are less than or equal to it, that is
// the ⌈p/100·N⌉-th smallest. Unlike interpolating methods it always returns a latency that was
// actually observed. It returns 0 for no samples and does not modify samples.
func Percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return percentileSorted(sorted, p)
}

func percentileSorted(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// CumulativeHistogram counts, for each upper bound, the samples at or below it, as a Prometheus
// histogram does. Samples above the last bound appear in no bucket (only in the total, which is
// len(samples)). Bounds must be ascending.
func CumulativeHistogram(samples, bounds []time.Duration) []HistogramBucket {
	buckets := make([]HistogramBucket, len(bounds))
	for i, b := range bounds {
		buckets[i].UpperBoundMicroseconds = b.Microseconds()
	}
	for _, s := range samples {
		if first, _ := slices.BinarySearch(bounds, s); first < len(buckets) {
			buckets[first].Count++
		}
	}
	for i := 1; i < len(buckets); i++ {
		buckets[i].Count += buckets[i-1].Count
	}
	return buckets
}

// CeilMicroseconds rounds d up to whole microseconds, so that a latency of a few hundred
// nanoseconds (an fdatasync on tmpfs) reads as 1 µs rather than as a meaningless 0.
func CeilMicroseconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// FormatRatio returns num/den with two decimals ("9.40"), or "" when either side is not positive:
// a missing or zero measurement has no honest ratio.
func FormatRatio(num, den float64) string {
	if num <= 0 || den <= 0 || math.IsInf(num, 0) || math.IsNaN(num) {
		return ""
	}
	return strconv.FormatFloat(num/den, 'f', 2, 64)
}

// summarizeFsync turns raw fdatasync latencies into the reported figures.
func summarizeFsync(writeBytes int64, samples []time.Duration) *FdatasyncResult {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	res := &FdatasyncResult{
		WriteSizeBytes: writeBytes,
		Samples:        int32(min(len(sorted), math.MaxInt32)),
		Buckets:        CumulativeHistogram(sorted, FsyncBucketBounds()),
	}
	if len(sorted) > 0 {
		res.P50Microseconds = CeilMicroseconds(percentileSorted(sorted, 50))
		res.P99Microseconds = CeilMicroseconds(percentileSorted(sorted, 99))
	}
	return res
}
