package probe

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestPerSecond(t *testing.T) {
	tests := []struct {
		name    string
		n       int64
		elapsed time.Duration
		want    int64
	}{
		{"256 MiB in one second", 256 * MiB, time.Second, 268435456},
		{"half a second doubles the rate", 100, 500 * time.Millisecond, 200},
		{"truncates", 10, 3 * time.Second, 3},
		{"no time means no rate", 100, 0, 0},
		{"negative time means no rate", 100, -time.Second, 0},
		{"nothing moved", 0, time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PerSecond(tt.n, tt.elapsed); got != tt.want {
				t.Errorf("PerSecond(%d, %s) = %d, want %d", tt.n, tt.elapsed, got, tt.want)
			}
		})
	}
}

func TestPercentileNearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100-i) * time.Millisecond // unsorted on purpose
	}
	tests := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single sample is every percentile", ms(7), 99, 7 * time.Millisecond},
		{"median of four is the second (no interpolation)", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"median of five", ms(5, 1, 4, 2, 3), 50, 3 * time.Millisecond},
		{"p99 of 100 is the 99th", hundred, 99, 99 * time.Millisecond},
		{"p100 is the maximum", hundred, 100, 100 * time.Millisecond},
		{"p99 of ten is the maximum", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"tiny p is the minimum", ms(3, 1, 2), 0.1, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.samples)
			if got := Percentile(tt.samples, tt.p); got != tt.want {
				t.Errorf("Percentile(p=%v) = %s, want %s", tt.p, got, tt.want)
			}
			if !slices.Equal(before, tt.samples) {
				t.Error("Percentile modified its input")
			}
		})
	}
}

func TestFsyncBucketBoundsAreEtcds(t *testing.T) {
	got := FsyncBucketBounds()
	// etcd: prometheus.ExponentialBuckets(0.001, 2, 14), 1 ms to 8.192 s.
	want := []time.Duration{
		1 * time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond,
		16 * time.Millisecond, 32 * time.Millisecond, 64 * time.Millisecond, 128 * time.Millisecond,
		256 * time.Millisecond, 512 * time.Millisecond, 1024 * time.Millisecond, 2048 * time.Millisecond,
		4096 * time.Millisecond, 8192 * time.Millisecond,
	}
	if !slices.Equal(got, want) {
		t.Errorf("FsyncBucketBounds() = %v, want %v", got, want)
	}
	last := FsyncBucketStartSeconds * math.Pow(FsyncBucketFactor, FsyncBucketCount-1)
	if math.Abs(last-8.192) > 1e-9 {
		t.Errorf("the constants give a last bound of %v s, want 8.192", last)
	}
	got[0] = 0
	if FsyncBucketBounds()[0] != time.Millisecond {
		t.Error("FsyncBucketBounds shares its slice between calls")
	}
}

func TestCumulativeHistogram(t *testing.T) {
	bounds := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}
	tests := []struct {
		name    string
		samples []time.Duration
		want    []int64
	}{
		{"no samples", nil, []int64{0, 0, 0}},
		{"a bound is inclusive", []time.Duration{time.Millisecond, 2 * time.Millisecond}, []int64{1, 2, 2}},
		{"counts accumulate", []time.Duration{time.Microsecond, 1500 * time.Microsecond, 3 * time.Millisecond}, []int64{1, 2, 3}},
		{"above the last bound counts nowhere", []time.Duration{time.Second, time.Microsecond}, []int64{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CumulativeHistogram(tt.samples, bounds)
			counts := make([]int64, len(got))
			for i, b := range got {
				counts[i] = b.Count
				if b.UpperBoundMicroseconds != bounds[i].Microseconds() {
					t.Errorf("bucket %d bound = %d µs, want %d", i, b.UpperBoundMicroseconds, bounds[i].Microseconds())
				}
			}
			if !slices.Equal(counts, tt.want) {
				t.Errorf("counts = %v, want %v", counts, tt.want)
			}
		})
	}
}

func TestCeilMicroseconds(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want int64
	}{
		{0, 0}, {-time.Microsecond, 0}, {1, 1}, {300 * time.Nanosecond, 1},
		{time.Microsecond, 1}, {time.Microsecond + 1, 2}, {5 * time.Millisecond, 5000},
	}
	for _, tt := range tests {
		if got := CeilMicroseconds(tt.in); got != tt.want {
			t.Errorf("CeilMicroseconds(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestFormatRatio(t *testing.T) {
	tests := []struct {
		num, den float64
		want     string
	}{
		{940, 100, "9.40"},
		{1, 3, "0.33"},
		{2, 3, "0.67"},
		{5, 5, "1.00"},
		{123456, 1, "123456.00"},
		{0, 5, ""},
		{5, 0, ""},
		{-1, 5, ""},
		{math.NaN(), 5, ""},
	}
	for _, tt := range tests {
		if got := FormatRatio(tt.num, tt.den); got != tt.want {
			t.Errorf("FormatRatio(%v, %v) = %q, want %q", tt.num, tt.den, got, tt.want)
		}
	}
}

func TestSummarizeFsync(t *testing.T) {
	samples := make([]time.Duration, 0, 100)
	for i := 1; i <= 100; i++ {
		samples = append(samples, time.Duration(i)*100*time.Microsecond) // 0.1 ms … 10 ms
	}
	got := summarizeFsync(2300, samples)
	if got.Samples != 100 || got.WriteSizeBytes != 2300 {
		t.Errorf("Samples, WriteSizeBytes = %d, %d, want 100, 2300", got.Samples, got.WriteSizeBytes)
	}
	if got.P50Microseconds != 5000 || got.P99Microseconds != 9900 {
		t.Errorf("p50, p99 = %d, %d µs, want 5000, 9900", got.P50Microseconds, got.P99Microseconds)
	}
	if len(got.Buckets) != FsyncBucketCount {
		t.Fatalf("%d buckets, want %d", len(got.Buckets), FsyncBucketCount)
	}
	// ≤1 ms: 10 samples, ≤2 ms: 20, ≤4 ms: 40, ≤8 ms: 80, ≤16 ms: all.
	for i, want := range []int64{10, 20, 40, 80, 100} {
		if got.Buckets[i].Count != want {
			t.Errorf("bucket ≤%d µs = %d, want %d", got.Buckets[i].UpperBoundMicroseconds, got.Buckets[i].Count, want)
		}
	}
	if empty := summarizeFsync(2300, nil); empty.P99Microseconds != 0 || empty.Samples != 0 {
		t.Errorf("no samples gave %+v", empty)
	}
}

// TestComputeComparison: the write is compared unsynced (a comparison of the synced rates would
// give 4.00 here), and nothing compares fdatasync, which tmpfs does not perform.
func TestComputeComparison(t *testing.T) {
	tmpfs := TargetResult{
		Name: "tmpfs", Kind: KindTmpfs,
		SequentialWrite:    &SequentialWriteResult{BufferedBytesPerSecond: 3000, FdatasyncBytesPerSecond: 2000},
		ColdRead:           &ThroughputResult{BytesPerSecond: 3000},
		FileChurn:          []FileChurnResult{{FileSizeBytes: 5_000_000, CreateFilesPerSecond: 10}, {FileSizeBytes: 5000, CreateFilesPerSecond: 100000}},
		Fdatasync:          &FdatasyncResult{P50Microseconds: 1, P99Microseconds: 2},
		TempFiles:          []TempFileResult{tf(4*MiB, 32, 160_000), tf(20*MiB, 8, 160_000)},
		LargePageTempFiles: []TempFileResult{tf(4*MiB, 32, 30_000), tf(20*MiB, 8, 30_000)},
	}
	disk := TargetResult{
		Name: "data", Kind: KindDisk,
		SequentialWrite: &SequentialWriteResult{BufferedBytesPerSecond: 1500, FdatasyncBytesPerSecond: 500},
		ColdRead:        &ThroughputResult{BytesPerSecond: 3000},
		FileChurn:       []FileChurnResult{{FileSizeBytes: 5000, CreateFilesPerSecond: 8000}, {FileSizeBytes: 5_000_000, CreateFilesPerSecond: 20}},
		Fdatasync:       &FdatasyncResult{P50Microseconds: 900, P99Microseconds: 5000},
		TempFiles:       []TempFileResult{tf(4*MiB, 32, 60_000), tf(20*MiB, 8, 100_000)},
	}
	// Temporary files: 288 MiB in 320 ms on the tmpfs, in 60 ms with large pages, in 160 ms on the
	// disk; the disk's results are what both tmpfs variants are divided by.
	want := Comparison{TmpfsTarget: "tmpfs", DiskTarget: "data", BufferedWriteRatio: "2.00", ColdReadRatio: "1.00",
		SmallFileCreateRatio: "12.50", SmallFileSizeBytes: 5000, TempFileRatio: "0.50", LargePageTempFileRatio: "2.67"}
	if got := ComputeComparison([]TargetResult{disk, tmpfs}); got == nil || *got != want {
		t.Errorf("ComputeComparison = %+v, want %+v", got, want)
	}
	partial := ComputeComparison([]TargetResult{{Name: "t", Kind: KindTmpfs}, {Name: "d", Kind: KindDisk, ColdRead: &ThroughputResult{}}})
	if partial == nil || *partial != (Comparison{TmpfsTarget: "t", DiskTarget: "d"}) {
		t.Errorf("missing figures gave %+v, want names only", partial)
	}
	for name, targets := range map[string][]TargetResult{
		"no disk":    {tmpfs},
		"two disks":  {tmpfs, disk, disk},
		"two tmpfs":  {tmpfs, tmpfs, disk},
		"no targets": nil,
	} {
		if got := ComputeComparison(targets); got != nil {
			t.Errorf("%s: ComputeComparison = %+v, want nil", name, got)
		}
	}
}

// tf is a temporary-file result of files files of size bytes that took micros microseconds.
func tf(size int64, files int32, micros int64) TempFileResult {
	return TempFileResult{FileSizeBytes: size, Files: files, ElapsedMicroseconds: micros,
		BytesPerSecond: PerSecond(size*int64(files), time.Duration(micros)*time.Microsecond)}
}

func TestTempFileRate(t *testing.T) {
	tests := []struct {
		name    string
		results []TempFileResult
		want    int64
	}{
		{"one size", []TempFileResult{tf(4*MiB, 10, 40_000)}, 1_048_576_000},
		// 40 MiB in 40 ms and 160 MiB in 40 ms: 200 MiB in 80 ms, not the mean of the two rates.
		{"sizes weigh by their bytes", []TempFileResult{tf(4*MiB, 10, 40_000), tf(20*MiB, 8, 40_000)}, 2_621_440_000},
		{"an unsupported result has no figure", []TempFileResult{tf(4*MiB, 10, 40_000), {FileSizeBytes: 20 * MiB, Unsupported: "no"}}, 1_048_576_000},
		{"no files", []TempFileResult{tf(4*MiB, 0, 0)}, 0},
		{"nothing", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TempFileRate(tt.results); got != tt.want {
				t.Errorf("TempFileRate = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTempFileRatio(t *testing.T) {
	disk := []TempFileResult{tf(4*MiB, 10, 40_000), tf(20*MiB, 8, 100_000)}
	tests := []struct {
		name     string
		num, den []TempFileResult
		want     string
	}{
		// (40+160 MiB)/(80+160 ms) against (40+160 MiB)/(40+100 ms): 140/240.
		{"over both sizes", []TempFileResult{tf(4*MiB, 10, 80_000), tf(20*MiB, 8, 160_000)}, disk, "0.58"},
		{"larger is faster", []TempFileResult{tf(4*MiB, 10, 10_000), tf(20*MiB, 8, 25_000)}, disk, "4.00"},
		// Only the 4 MiB files were measured on both sides: 40 ms against 20 ms.
		{"only the sizes both measured", []TempFileResult{tf(4*MiB, 10, 20_000), tf(64*MiB, 1, 1)}, disk, "2.00"},
		{"counts may differ", []TempFileResult{tf(4*MiB, 5, 10_000)}, disk[:1], "2.00"},
		{"an unsupported side compares nothing", []TempFileResult{{FileSizeBytes: 4 * MiB, Unsupported: "no"}, {FileSizeBytes: 20 * MiB, Unsupported: "no"}}, disk, ""},
		{"no common size", []TempFileResult{tf(1*MiB, 10, 1000)}, disk, ""},
		{"no disk figures", disk, nil, ""},
		{"no tmpfs figures", nil, disk, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TempFileRatio(tt.num, tt.den); got != tt.want {
				t.Errorf("TempFileRatio = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLargePageTmpfsBytes(t *testing.T) {
	for _, tt := range []struct{ target, largest, want int64 }{
		{64 * MiB, 20 * MiB, 64 * MiB},   // the target's size
		{16 * MiB, 20 * MiB, 40 * MiB},   // at least twice the largest file
		{0, 20 * MiB, 40 * MiB},          // ramfs has no size
		{64*MiB + 1, MiB, 64*MiB + 4096}, // whole pages
	} {
		if got := largePageTmpfsBytes(tt.target, tt.largest); got != tt.want {
			t.Errorf("largePageTmpfsBytes(%d, %d) = %d, want %d", tt.target, tt.largest, got, tt.want)
		}
	}
	if got, want := detachedMountOptions(64*MiB), "size=65536k,huge=within_size"; got != want {
		t.Errorf("detachedMountOptions = %q, want %q", got, want)
	}
}

func TestParseKernelVersion(t *testing.T) {
	tests := []struct {
		release      string
		major, minor int
		ok           bool
	}{
		{"6.18.44-fc-v657", 6, 18, true},
		{"6.6.0", 6, 6, true},
		{"5.15.0-1051-azure", 5, 15, true},
		{"6.19-rc1", 6, 19, true},
		{"6", 0, 0, false},
		{"", 0, 0, false},
		{"x.y", 0, 0, false},
	}
	for _, tt := range tests {
		major, minor, ok := ParseKernelVersion(tt.release)
		if major != tt.major || minor != tt.minor || ok != tt.ok {
			t.Errorf("ParseKernelVersion(%q) = %d, %d, %v, want %d, %d, %v", tt.release, major, minor, ok, tt.major, tt.minor, tt.ok)
		}
	}
}
