package main

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestJudge(t *testing.T) {
	tests := []struct {
		name            string
		class           Class
		ours, reference float64
		resolution      float64
		want            string
	}{
		{"throughput just inside +10%", Throughput, 109.9, 100, 0, Pass},
		{"throughput exactly -10%", Throughput, 90, 100, 0, Pass},
		{"throughput outside +10%", Throughput, 111, 100, 0, Fail},
		{"throughput outside -10%", Throughput, 89, 100, 0, Fail},
		{"latency allows 20%", Latency, 119, 100, 1, Pass},
		{"latency outside 20%", Latency, 125, 100, 1, Fail},
		{"sub-microsecond latencies within the probe's 1 µs step", Latency, 1, 0.3, 1, WithinUnitOf},
		{"a difference larger than the step still fails", Latency, 3, 0.3, 1, Fail},
		{"no resolution means no excuse", Throughput, 1, 0.3, 0, Fail},
		{"a missing side is not judged", Throughput, 0, 100, 0, NotMeasured},
		{"a NaN side is not judged", Latency, math.NaN(), 100, 1, NotMeasured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Judge(tt.class, tt.ours, tt.reference, tt.resolution)
			if got != tt.want {
				t.Errorf("Judge(%s, %v, %v, %v) = %q (%s), want %q", tt.class, tt.ours, tt.reference, tt.resolution, got, reason, tt.want)
			}
			if reason == "" {
				t.Error("Judge gave no reason")
			}
		})
	}
}

func TestPassed(t *testing.T) {
	for v, want := range map[string]bool{Pass: true, WithinUnitOf: true, Fail: false, NotMeasured: false} {
		if got := Passed(v); got != want {
			t.Errorf("Passed(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestPairedRatios(t *testing.T) {
	got := PairedRatios([]float64{200, 0, 90, 50}, []float64{100, 10, 100})
	want := []float64{2, 0.9}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PairedRatios (-want +got):\n%s", diff)
	}
}
