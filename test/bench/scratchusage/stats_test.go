package main

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want Summary
	}{
		{"one run", []float64{4}, Summary{Median: 4, Min: 4, Max: 4}},
		{"odd count, unsorted", []float64{9, 1, 5}, Summary{Median: 5, Min: 1, Max: 9}},
		{"even count takes the mean of the middle two", []float64{10, 1, 4, 2}, Summary{Median: 3, Min: 1, Max: 10}},
		{"an outlier moves min and max, not the median", []float64{2, 2, 1000, 2, 3}, Summary{Median: 2, Min: 2, Max: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			if diff := cmp.Diff(tc.want, summarize(in)); diff != "" {
				t.Errorf("summarize(%v) (-want +got):\n%s", tc.in, diff)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("summarize reordered its input to %v", in)
			}
		})
	}
}

func TestSummarizeNothing(t *testing.T) {
	s := summarize(nil)
	if !math.IsNaN(s.Median) || !math.IsNaN(s.Min) || !math.IsNaN(s.Max) {
		t.Errorf("summarize(nil) = %+v, want NaN everywhere: no run is no figure, not zero", s)
	}
}

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("100, 1,10")
	if err != nil || !slices.Equal(got, []int{1, 10, 100}) {
		t.Errorf("parseCounts(\"100, 1,10\") = %v, %v, want [1 10 100]", got, err)
	}
	for _, bad := range []string{"", "0", "-1", "10,x", "10,10"} {
		if got, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) = %v, want an error", bad, got)
		}
	}
}

// The ratios the report quotes come with an interval over the runs and a verdict from it.
func TestComparisons(t *testing.T) {
	r := &Report{Settings: Settings{VolumeCounts: []int{10}, Seed: 3}}
	for i, statfs := range []float64{28e-6, 29e-6, 27e-6, 28.5e-6, 30e-6} {
		r.addCost(wStatfs, 10, Cost{CPUSeconds: statfs})
		r.addCost(wSample+cachedReader, 10, Cost{CPUSeconds: 2.6*statfs + float64(i)*1e-7})
		// The fake client's rounds scatter around the cache-like reader's: no difference.
		r.addCost(wSample+fakeReader, 10, Cost{CPUSeconds: []float64{60e-6, 90e-6, 75e-6, 110e-6, 70e-6}[i]})
	}
	r.summarize()
	if len(r.Comparisons) != 2 {
		t.Fatalf("comparisons %+v, want the two quoted ratios", r.Comparisons)
	}
	floor := r.Comparisons[0]
	if floor.Workload != wSample+cachedReader || floor.Reference != wStatfs || floor.Verdict != method.Higher || floor.Interval.Seed != 3 {
		t.Errorf("a sampling round against statfs: %+v, want higher, from the seed", floor)
	}
	if math.Abs(floor.Interval.Ratio-2.6) > 0.02 {
		t.Errorf("ratio %v, want about 2.6", floor.Interval.Ratio)
	}
	if fake := r.Comparisons[1]; fake.Interval == nil || fake.Verdict != method.NoDifference {
		t.Errorf("the fake client against the cache-like reader: %+v, want no difference", fake)
	}
}
