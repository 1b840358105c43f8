package main

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestRotate(t *testing.T) {
	counts := []int{1, 10, 100, 300}
	want := [][]int{{1, 10, 100, 300}, {10, 100, 300, 1}, {100, 300, 1, 10}, {300, 1, 10, 100}, {1, 10, 100, 300}}
	for run, w := range want {
		if got := rotate(counts, run); !slices.Equal(got, w) {
			t.Errorf("rotate(%v, %d) = %v, want %v", counts, run, got, w)
		}
	}
	if !slices.Equal(counts, []int{1, 10, 100, 300}) {
		t.Errorf("rotate changed its input to %v", counts)
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
