package main

import (
	"fmt"
	"math"
	"slices"
)

// Class decides how far a probe may stray from its reference: ±10% on throughput, ±20% on
// fdatasync latency, whose tail is noisier by nature.
type Class string

const (
	// Throughput figures (bytes or files per second) must agree within ±10%.
	Throughput Class = "throughput"
	// Latency figures (fdatasync percentiles) must agree within ±20%.
	Latency Class = "latency"
)

// Tolerance is the largest relative difference of ours from the reference that still passes.
func (c Class) Tolerance() float64 {
	if c == Latency {
		return 0.20
	}
	return 0.10
}

// Verdict values.
const (
	Pass         = "pass"
	Fail         = "fail"
	NotMeasured  = "not measured"
	WithinUnitOf = "pass (within resolution)"
	// ForContext marks a comparison with a program that does more than the probe on purpose, to
	// show what that costs; it has no verdict.
	ForContext = "context"
)

// Median returns the median of xs (the mean of the middle two for an even count), or NaN when xs is
// empty. It does not modify xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// Ratio returns ours/reference, or NaN when either is missing or not positive: a ratio to nothing
// would read as a pass or a failure that was never measured.
func Ratio(ours, reference float64) float64 {
	if !(ours > 0) || !(reference > 0) || math.IsInf(ours, 0) || math.IsInf(reference, 0) {
		return math.NaN()
	}
	return ours / reference
}

// Judge gives the verdict on one comparison. resolution is the smallest step the probe can report
// in the figure's unit (0 when it reports exact values): the probe rounds fdatasync latencies up to
// whole microseconds, so two sub-microsecond latencies that differ by less than that step agree as
// well as the probe can tell, even when their ratio is far from 1.
func Judge(class Class, ours, reference, resolution float64) (verdict, reason string) {
	r := Ratio(ours, reference)
	if math.IsNaN(r) {
		return NotMeasured, "one side has no figure"
	}
	tol := class.Tolerance()
	dev := r - 1
	if math.Abs(dev) <= tol {
		return Pass, fmt.Sprintf("%+.1f%% is within ±%.0f%%", dev*100, tol*100)
	}
	if resolution > 0 && math.Abs(ours-reference) <= resolution {
		return WithinUnitOf, fmt.Sprintf("%+.1f%% is outside ±%.0f%%, but the difference (%.3g) is within the probe's resolution (%.3g)",
			dev*100, tol*100, math.Abs(ours-reference), resolution)
	}
	return Fail, fmt.Sprintf("%+.1f%% is outside ±%.0f%%", dev*100, tol*100)
}

// Passed reports whether a verdict counts as agreement.
func Passed(verdict string) bool { return verdict == Pass || verdict == WithinUnitOf }

// PairedRatios divides each of ours by the reference run of the same round. Their median is a
// second view of the comparison: it cancels load that changes from round to round, which the ratio
// of medians only averages out.
func PairedRatios(ours, reference []float64) []float64 {
	out := make([]float64, 0, min(len(ours), len(reference)))
	for i := range min(len(ours), len(reference)) {
		if r := Ratio(ours[i], reference[i]); !math.IsNaN(r) {
			out = append(out, r)
		}
	}
	return out
}
