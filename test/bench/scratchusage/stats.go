package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Summary is the median of a figure over the runs, with the lowest and highest run.
type Summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// summarize returns the median (the mean of the middle two for an even count), minimum and
// maximum of xs, all NaN when xs is empty. It does not modify xs.
func summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{math.NaN(), math.NaN(), math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	m := s[mid]
	if len(s)%2 == 0 {
		m = (s[mid-1] + s[mid]) / 2
	}
	return Summary{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// parseCounts reads a comma-separated list of volume counts, each at least 1, without repeats,
// and returns them in increasing order.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("volume count %q is not a whole number of at least 1", f)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("volume count %d is listed twice", n)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}
