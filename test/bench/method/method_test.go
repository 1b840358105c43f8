package method

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRatioInterval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b    []float64
		ratio   float64
		verdict Verdict
	}{
		{"the same runs", []float64{10, 10, 10}, []float64{10, 10, 10}, 1, NoDifference},
		{"apart by far more than their spread", []float64{20, 21, 22, 20.5, 21.5}, []float64{10, 10.5, 11, 9.5, 10.2}, 21 / 10.2, Higher},
		{"lower, as apart", []float64{10, 10.5, 11, 9.5, 10.2}, []float64{20, 21, 22, 20.5, 21.5}, 10.2 / 21, Lower},
		// A ratio of medians of 1.06 is noise when the runs spread by ±25 %: the published
		// MariaDB runs' transactions per second, 788–1341 against 923–1418.
		{"6 % apart in runs spread by ±25 %", []float64{1027, 788, 1341, 1100, 950}, []float64{1029, 923, 1418, 960, 1200}, 1027.0 / 1029, NoDifference},
		{"2 % apart in runs that agree to 0.1 %", []float64{102, 102.1, 101.9, 102.05, 101.95}, []float64{100, 100.1, 99.9, 100.05, 99.95}, 1.02, Higher},
		{"an even count takes the mean of the middle two", []float64{1, 2, 3, 4}, []float64{1, 2, 3, 4}, 1, NoDifference},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := slices.Clone(tc.a), slices.Clone(tc.b)
			iv, err := RatioInterval(a, b, 7)
			if err != nil {
				t.Fatalf("RatioInterval: %v", err)
			}
			if math.Abs(iv.Ratio-tc.ratio) > 1e-12 {
				t.Errorf("ratio %v, want %v", iv.Ratio, tc.ratio)
			}
			if !(iv.Low <= iv.Ratio && iv.Ratio <= iv.High) {
				t.Errorf("interval %v–%v does not hold the ratio %v", iv.Low, iv.High, iv.Ratio)
			}
			if got := iv.Verdict(); got != tc.verdict {
				t.Errorf("verdict %q (interval %.4f–%.4f), want %q", got, iv.Low, iv.High, tc.verdict)
			}
			if iv.Level != Level || iv.Resamples != Resamples || iv.Seed != 7 || iv.Runs != [2]int{len(a), len(b)} {
				t.Errorf("the interval does not record how it was drawn: %+v", iv)
			}
			if !slices.Equal(a, tc.a) || !slices.Equal(b, tc.b) {
				t.Error("RatioInterval changed its input")
			}
		})
	}
}

func TestRatioIntervalIsSeeded(t *testing.T) {
	a, b := []float64{9, 11, 10, 12, 8, 10.5}, []float64{10, 9, 11, 10.5, 9.5, 8}
	one, _ := RatioInterval(a, b, 42)
	again, _ := RatioInterval(a, b, 42)
	if diff := cmp.Diff(one, again); diff != "" {
		t.Errorf("the same seed drew another interval (-first +second):\n%s", diff)
	}
	other, _ := RatioInterval(a, b, 43)
	if other.Low == one.Low && other.High == one.High {
		t.Logf("seeds 42 and 43 happen to give the same interval %v–%v", one.Low, one.High)
	}
}

func TestRatioIntervalRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want error
	}{
		{"one run", []float64{1}, []float64{1, 2, 3}, ErrTooFewRuns},
		{"two runs", []float64{1, 2, 3}, []float64{1, 2}, ErrTooFewRuns},
		{"a run of zero", []float64{0, 2, 3}, []float64{1, 2, 3}, ErrNoRatio},
		{"a negative run", []float64{1, 2, 3}, []float64{1, -2, 3}, ErrNoRatio},
		{"not a number", []float64{1, math.NaN(), 3}, []float64{1, 2, 3}, ErrNoRatio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RatioInterval(tc.a, tc.b, 1)
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			c := Compare(tc.a, tc.b, 1)
			if c.Verdict != NoInterval || c.Interval != nil || c.Reason == "" {
				t.Errorf("Compare = %+v, want no interval and the reason", c)
			}
		})
	}
}

func TestComparisonString(t *testing.T) {
	c := Compare([]float64{20, 21, 22, 20.5, 21.5}, []float64{10, 10.5, 11, 9.5, 10.2}, 1)
	if got := c.String(); !strings.HasPrefix(got, "2.06x (") || !strings.Contains(got, "–") {
		t.Errorf("String() = %q", got)
	}
	if got := Compare([]float64{1}, []float64{1}, 1).String(); !strings.Contains(got, "too few runs") {
		t.Errorf("String() of too few runs = %q", got)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{10, 1, 4, 2}, 3}} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

// Every variant takes every turn equally often over whole blocks, to within one over any run of
// rounds a benchmark makes, and the same seed draws the same orders again.
func TestShuffledBalancesTurns(t *testing.T) {
	for n := 2; n <= 5; n++ {
		variants := make([]int, n)
		for i := range variants {
			variants[i] = i
		}
		o, again := NewOrder(int64(n)), NewOrder(int64(n))
		turns := make([][]int, n) // turns[v][t]: rounds in which v took turn t
		for v := range turns {
			turns[v] = make([]int, n)
		}
		for round := 1; round <= 6*n; round++ {
			got := Shuffled(o, variants)
			if !slices.Equal(got, Shuffled(again, variants)) {
				t.Fatalf("%d variants, round %d: the same seed drew two orders", n, round)
			}
			for turn, v := range got {
				turns[v][turn]++
			}
			for v := range turns {
				lo, hi := slices.Min(turns[v]), slices.Max(turns[v])
				if hi-lo > 1 {
					t.Fatalf("%d variants, after %d rounds variant %d took its turns %v times", n, round, v, turns[v])
				}
				if round%n == 0 && lo != hi {
					t.Fatalf("%d variants, after %d whole blocks variant %d took its turns %v times", n, round/n, v, turns[v])
				}
			}
		}
	}
	if got := Shuffled(NewOrder(1), []string{"only"}); !slices.Equal(got, []string{"only"}) {
		t.Errorf("one variant: %v", got)
	}
}

// Two variants over five rounds: a fair coin gives one of them the first turn in all five one
// time in sixteen; the blocks never do, whatever the seed.
func TestShuffledNeverGivesOneVariantEveryFirstTurn(t *testing.T) {
	for seed := range int64(200) {
		o := NewOrder(seed)
		first := map[string]int{}
		for range 5 {
			first[Shuffled(o, []string{"tmpfs", "disk"})[0]]++
		}
		if first["tmpfs"] < 2 || first["disk"] < 2 {
			t.Fatalf("seed %d: first turns %v", seed, first)
		}
	}
}

func TestShuffledIsAPermutation(t *testing.T) {
	in := []int{1, 2, 3, 4, 5}
	o := NewOrder(3)
	seen := map[string]bool{}
	for range 50 {
		got := Shuffled(o, in)
		if !slices.Equal(slices.Sorted(slices.Values(got)), in) {
			t.Fatalf("Shuffled(%v) = %v, not a permutation", in, got)
		}
		seen[fmt.Sprint(got)] = true
	}
	if len(seen) < 10 {
		t.Errorf("50 rounds drew only %d orders of 5 variants", len(seen))
	}
	if !slices.Equal(in, []int{1, 2, 3, 4, 5}) {
		t.Error("Shuffled changed its input")
	}
}

func TestRecordAt(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"proc/cpuinfo":                             "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n",
		"proc/sys/kernel/osrelease":                "6.18.44-fc-v1098\n",
		"proc/sys/vm/dirty_ratio":                  "20\n",
		"proc/sys/vm/dirty_background_ratio":       "10\n",
		"proc/sys/vm/dirty_expire_centisecs":       "3000\n",
		"proc/loadavg":                             "0.25 0.80 1.07 1/89 24947\n",
		"proc/meminfo":                             "MemTotal:       24684000 kB\nMemFree:         1000 kB\nMemAvailable:   24154000 kB\n",
		"sys/fs/cgroup/memory/tasks":               "",
		"sys/fs/cgroup/unified/cgroup.controllers": "hugetlb\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
	got := RecordAt(root, now, map[string]string{"sysbench": "1.0.20"})
	want := Conditions{
		Time: time.Date(2026, 12, 3, 9, 0, 0, 123000000, time.UTC), CPUModel: "AMD EPYC 7B13", Kernel: "6.18.44-fc-v1098",
		Cgroup: "v1 (hybrid)", DirtyRatio: 20, DirtyBackgroundRatio: 10, DirtyExpireCentisecs: 3000,
		LoadAverage1m: 0.25, MemAvailableBytes: 24154000 << 10, Versions: map[string]string{"sysbench": "1.0.20"},
		// One file is missing: said, not read as a setting of 0.
		Unreadable: []string{"/proc/sys/vm/dirty_writeback_centisecs"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RecordAt (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(filepath.Join(root, "sys", "fs", "cgroup", "cgroup.controllers"), []byte("cpu memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := RecordAt(root, now, nil).Cgroup; got != "v2" {
		t.Errorf("with cgroup.controllers at the root: cgroup %q, want v2", got)
	}
	if err := os.RemoveAll(filepath.Join(root, "sys", "fs", "cgroup", "unified")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "sys", "fs", "cgroup", "cgroup.controllers")); err != nil {
		t.Fatal(err)
	}
	if got := RecordAt(root, now, nil).Cgroup; got != "v1" {
		t.Errorf("without a v2 hierarchy: cgroup %q, want v1", got)
	}
}

// This machine's own conditions have every figure, or say which they lack.
func TestRecordHere(t *testing.T) {
	c := Record(nil)
	if c.Kernel == "" || c.Cgroup == "" || c.Time.IsZero() {
		t.Errorf("Record() = %+v, want at least the kernel, the cgroup version and the time", c)
	}
	if c.DirtyExpireCentisecs == 0 && !slices.Contains(c.Unreadable, "/proc/sys/vm/dirty_expire_centisecs") {
		t.Errorf("Record() has no writeback expiry and does not say why: %+v", c)
	}
}

func TestSummary(t *testing.T) {
	a := Conditions{CPUModel: "AMD EPYC", Kernel: "6.18.44", Cgroup: "v1 (hybrid)", DirtyRatio: 20, DirtyBackgroundRatio: 10,
		DirtyExpireCentisecs: 3000, DirtyWritebackCentisecs: 500, LoadAverage1m: 0.5, MemAvailableBytes: 22 << 30}
	b := a
	b.LoadAverage1m, b.MemAvailableBytes = 3.25, 20<<30
	want := "AMD EPYC; Linux 6.18.44; cgroup v1 (hybrid); vm.dirty_ratio 20, dirty_background_ratio 10, dirty_expire_centisecs 3000, dirty_writeback_centisecs 500; load average (1 min) 0.50–3.25; memory available 20.0–22.0 GiB"
	if got := Summary([]Conditions{a, b}); got != want {
		t.Errorf("Summary =\n%s\nwant\n%s", got, want)
	}
	b.Kernel = "6.19.1"
	if got := Summary([]Conditions{a, b}); !strings.Contains(got, "Linux 6.18.44 / 6.19.1 (changed between runs)") {
		t.Errorf("Summary does not say the kernel changed: %s", got)
	}
	if got := Summary(nil); got != "conditions not recorded" {
		t.Errorf("Summary(nil) = %q", got)
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th"} {
		if got := Ordinal(n); got != want {
			t.Errorf("Ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}
