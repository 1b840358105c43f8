package method

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// The bootstrap every comparison is drawn with.
const (
	// Level is the confidence of every interval.
	Level = 0.95
	// Resamples is how many bootstrap resamples an interval is drawn from.
	Resamples = 10000
	// MinRuns is the fewest runs of each variant an interval is drawn from: with one or two, a
	// resample can only repeat them, and its interval says nothing about the spread.
	MinRuns = 3
	// BootstrapSeed seeds the intervals of results that recorded no seed of their own, so that
	// drawing them again from the same file gives the same interval.
	BootstrapSeed = 1
)

// Interval is a percentile bootstrap confidence interval for the ratio of two variants' medians:
// each resample draws every variant's runs again, with replacement, as many as it has, and takes
// the ratio of the two medians; Low and High are the ratios at (1−Level)/2 and (1+Level)/2 of
// the sorted resamples.
//
// With few runs a percentile bootstrap is narrower than the true interval: at MinRuns runs a
// side it is a rough guide, not a guarantee.
type Interval struct {
	// Ratio is the median of the first variant's runs over the median of the second's.
	Ratio float64 `json:"ratio"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	// Level, Resamples and Seed say how the interval was drawn; the same three and the same runs
	// give the same interval.
	Level     float64 `json:"level"`
	Resamples int     `json:"resamples"`
	Seed      int64   `json:"seed"`
	// Runs counts the runs of each variant.
	Runs [2]int `json:"runs"`
}

// Errors of RatioInterval.
var (
	// ErrTooFewRuns says a variant has fewer than MinRuns runs.
	ErrTooFewRuns = errors.New("too few runs for an interval")
	// ErrNoRatio says a run's figure is zero, negative or not a number: a ratio of such figures
	// means nothing, and a resample with a median of zero has no ratio at all.
	ErrNoRatio = errors.New("a run's figure is not positive, so the ratio is not defined")
)

// RatioInterval draws the interval for median(a)/median(b) from seed. It does not modify a or b.
func RatioInterval(a, b []float64, seed int64) (Interval, error) {
	iv := Interval{Level: Level, Resamples: Resamples, Seed: seed, Runs: [2]int{len(a), len(b)}}
	if len(a) < MinRuns || len(b) < MinRuns {
		return iv, fmt.Errorf("%w: %d and %d, want at least %d each", ErrTooFewRuns, len(a), len(b), MinRuns)
	}
	if !allPositive(a) || !allPositive(b) {
		return iv, ErrNoRatio
	}
	iv.Ratio = Median(a) / Median(b)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	ratios := make([]float64, Resamples)
	bufA, bufB := make([]float64, len(a)), make([]float64, len(b))
	for i := range ratios {
		ratios[i] = resampledMedian(rng, a, bufA) / resampledMedian(rng, b, bufB)
	}
	slices.Sort(ratios)
	iv.Low = ratios[int(math.Floor((1-Level)/2*Resamples))]
	iv.High = ratios[int(math.Ceil((1+Level)/2*Resamples))-1]
	return iv, nil
}

// resampledMedian draws len(xs) of xs with replacement into buf and returns their median.
func resampledMedian(rng *rand.Rand, xs, buf []float64) float64 {
	for i := range buf {
		buf[i] = xs[rng.IntN(len(xs))]
	}
	slices.Sort(buf)
	return sortedMedian(buf)
}

func allPositive(xs []float64) bool {
	for _, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// Median is the middle of xs, the mean of the middle two for an even count, NaN for none. It
// does not modify xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return sortedMedian(slices.Sorted(slices.Values(xs)))
}

func sortedMedian(s []float64) float64 {
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// Verdict is what an interval lets one say about two variants.
type Verdict string

// Verdicts.
const (
	// NoDifference: the interval holds 1, so the runs do not tell the variants apart, whatever
	// the ratio of the medians.
	NoDifference Verdict = "no difference"
	// Higher: the whole interval is above 1, the first variant's figure is the higher.
	Higher Verdict = "higher"
	// Lower: the whole interval is below 1, the first variant's figure is the lower.
	Lower Verdict = "lower"
	// NoInterval: too few runs, or figures that have no ratio; Comparison.Reason says which.
	NoInterval Verdict = "no interval"
)

// Verdict says "no difference" unless the interval excludes 1.
func (iv Interval) Verdict() Verdict {
	switch {
	case iv.Low > 1:
		return Higher
	case iv.High < 1:
		return Lower
	}
	return NoDifference
}

// Comparison is the verdict on one figure of two variants, as results files record it.
type Comparison struct {
	// Interval is missing when there is none; Reason then says why.
	Interval *Interval `json:"interval,omitempty"`
	Verdict  Verdict   `json:"verdict"`
	Reason   string    `json:"reason,omitempty"`
}

// Compare draws the interval of median(a)/median(b) from seed and gives its verdict.
func Compare(a, b []float64, seed int64) Comparison {
	iv, err := RatioInterval(a, b, seed)
	if err != nil {
		return Comparison{Verdict: NoInterval, Reason: err.Error()}
	}
	return Comparison{Interval: &iv, Verdict: iv.Verdict()}
}

// String writes the comparison as a table cell: "1.17x (1.09–1.24)", or why there is no interval.
func (c Comparison) String() string {
	if c.Interval == nil {
		return c.Reason
	}
	iv := c.Interval
	// An interval that excludes 1 by less than the last decimal shown gets one more, so that the
	// cell never reads "1.00" beside a verdict of a difference.
	prec := 2
	if c.Verdict != NoDifference && (strconv.FormatFloat(iv.Low, 'f', 2, 64) == "1.00" || strconv.FormatFloat(iv.High, 'f', 2, 64) == "1.00") {
		prec = 3
	}
	return fmt.Sprintf("%.*fx (%.*f–%.*f)", prec, iv.Ratio, prec, iv.Low, prec, iv.High)
}
