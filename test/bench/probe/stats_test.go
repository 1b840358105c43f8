package main

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"odd count, unsorted", []float64{5, 1, 3}, 3},
		{"even count takes the mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"single sample", []float64{7}, 7},
		{"an outlier does not move it", []float64{100, 101, 99, 1e9, 100}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := Median(in); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
			}
			if diff := cmp.Diff(tt.in, in); diff != "" {
				t.Errorf("Median modified its input (-before +after):\n%s", diff)
			}
		})
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(110, 100); math.Abs(got-1.1) > 1e-12 {
		t.Errorf("Ratio(110, 100) = %v, want 1.1", got)
	}
	for _, c := range [][2]float64{{0, 100}, {100, 0}, {math.NaN(), 1}, {1, math.NaN()}, {-1, 1}, {math.Inf(1), 1}} {
		if got := Ratio(c[0], c[1]); !math.IsNaN(got) {
			t.Errorf("Ratio(%v, %v) = %v, want NaN", c[0], c[1], got)
		}
	}
}

// iv is an interval of the ratio from low to high, drawn as method draws them.
func iv(low, high float64) method.Comparison {
	return method.Comparison{Interval: &method.Interval{Ratio: (low + high) / 2, Low: low, High: high, Level: method.Level}}
}

func TestJudge(t *testing.T) {
	none := method.Comparison{Verdict: method.NoInterval, Reason: "too few runs for an interval: 2 and 2, want at least 3 each"}
	tests := []struct {
		name            string
		class           Class
		diff            method.Comparison
		ours, reference float64
		resolution      float64
		want            string
		reasonHas       []string
	}{
		{"interval inside the band", Throughput, iv(0.93, 1.08), 100, 100, 0, Pass, []string{"0.93–1.08 lies inside the band 0.90–1.10"}},
		{"interval on the band's bounds", Throughput, iv(0.9, 1.1), 100, 100, 0, Pass, []string{"inside"}},
		{"interval wholly above the band", Throughput, iv(1.12, 1.30), 120, 100, 0, Fail, []string{"1.12–1.30 lies outside the band 0.90–1.10"}},
		{"interval wholly below the band", Throughput, iv(0.5, 0.89), 70, 100, 0, Fail, []string{"outside"}},
		{"interval crosses the upper bound", Throughput, iv(1.05, 1.2), 110, 100, 0, Inconclusive, []string{"1.05–1.20 crosses the upper bound of the band 0.90–1.10"}},
		{"interval crosses the lower bound", Latency, iv(0.68, 1.1), 79, 100, 1, Inconclusive, []string{"0.68–1.10 crosses the lower bound of the band 0.80–1.20"}},
		{"interval wider than the band", Throughput, iv(0.5, 1.5), 100, 100, 0, Inconclusive, []string{"crosses"}},
		{"medians alike but no interval", Throughput, none, 100, 100, 0, Inconclusive, []string{"no interval (too few runs", "alone is not judged"}},
		{"medians far apart but no interval", Throughput, none, 200, 100, 0, Inconclusive, []string{"no interval"}},
		{"sub-microsecond latencies within the probe's 1 µs step", Latency, iv(2.5, 4), 1, 0.3, 1, WithinUnitOf, []string{"outside", "within the probe's resolution"}},
		{"within the step but inconclusive", Latency, iv(0.5, 3), 1, 0.6, 1, WithinUnitOf, []string{"crosses", "resolution"}},
		{"within the step, no interval: no excuse", Latency, none, 1, 0.3, 1, Inconclusive, []string{"no interval"}},
		{"a difference larger than the step still fails", Latency, iv(8, 12), 3, 0.3, 1, Fail, []string{"outside"}},
		{"no resolution means no excuse", Throughput, iv(2.5, 4), 1, 0.3, 0, Fail, []string{"outside"}},
		{"a missing side is not judged", Throughput, iv(0.9, 1), 0, 100, 0, NotMeasured, []string{"no figure"}},
		{"a NaN side is not judged", Latency, none, math.NaN(), 100, 1, NotMeasured, []string{"no figure"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Judge(tt.class, tt.diff, tt.ours, tt.reference, tt.resolution)
			if got != tt.want {
				t.Errorf("Judge = %q (%s), want %q", got, reason, tt.want)
			}
			for _, s := range tt.reasonHas {
				if !strings.Contains(reason, s) {
					t.Errorf("reason %q does not say %q", reason, s)
				}
			}
		})
	}
}

// The interval drawn from the rounds decides, not the medians: rounds whose medians agree but
// whose spread is wide are inconclusive, and the same medians with a tight spread pass.
func TestJudgeFollowsTheRoundsInterval(t *testing.T) {
	tight := []float64{100, 101, 99, 100, 102, 98}
	wide := []float64{100, 160, 60, 100, 150, 70}
	for _, tc := range []struct {
		name      string
		ours, ref []float64
		want      string
	}{
		{"tight rounds, same medians", tight, tight, Pass},
		{"wide rounds, same medians", wide, tight, Inconclusive},
		{"tight rounds, medians 30% apart", []float64{130, 131, 129, 130, 132, 128}, tight, Fail},
		{"two rounds", tight[:2], tight[:2], Inconclusive},
	} {
		diff := method.Compare(tc.ours, tc.ref, method.BootstrapSeed)
		got, reason := Judge(Throughput, diff, Median(tc.ours), Median(tc.ref), 0)
		if got != tc.want {
			t.Errorf("%s: Judge = %q (%s), want %q", tc.name, got, reason, tc.want)
		}
	}
}

func TestFormatInterval(t *testing.T) {
	for _, tc := range []struct {
		low, high float64
		want      string
	}{
		{0.93, 1.08, "0.93–1.08"},
		{0.9, 1.1, "0.90–1.10"},            // the bounds themselves
		{0.903, 1.145, "0.903–1.145"},      // 0.90 would read as the bound
		{1.098, 1.335, "1.098–1.335"},      // 1.10 would read as the bound
		{0.8999, 1.0, "0.8999–1.0000"},     // 0.900 too
		{0.89999999, 1.0, "0.9000–1.0000"}, // four decimals at most
	} {
		if got := formatInterval(&method.Interval{Low: tc.low, High: tc.high}, 0.9, 1.1); got != tc.want {
			t.Errorf("formatInterval(%v, %v) = %q, want %q", tc.low, tc.high, got, tc.want)
		}
	}
}

func TestPassed(t *testing.T) {
	for v, want := range map[string]bool{Pass: true, WithinUnitOf: true, Fail: false, Inconclusive: false, NotMeasured: false, ForContext: false} {
		if got := Passed(v); got != want {
			t.Errorf("Passed(%q) = %v, want %v", v, got, want)
		}
	}
}

// --strict fails a run on every judged comparison that did not pass, an inconclusive one among
// them, and not on those shown for context.
func TestUnsettled(t *testing.T) {
	var cs []Comparison
	for _, v := range []string{Pass, WithinUnitOf, ForContext, Inconclusive, Fail, NotMeasured} {
		cs = append(cs, Comparison{Verdict: v})
	}
	var got []string
	for _, c := range unsettled(cs) {
		got = append(got, c.Verdict)
	}
	if diff := cmp.Diff([]string{Inconclusive, Fail, NotMeasured}, got); diff != "" {
		t.Errorf("unsettled (-want +got):\n%s", diff)
	}
	if len(unsettled(cs[:3])) != 0 {
		t.Error("passes and context comparisons are unsettled")
	}
}

func TestPairedRatios(t *testing.T) {
	got := PairedRatios([]float64{200, 0, 90, 50}, []float64{100, 10, 100})
	want := []float64{2, 0.9}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PairedRatios (-want +got):\n%s", diff)
	}
}
