package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// Class decides how far a probe may stray from its reference: ±10% on throughput, ±20% on
// fdatasync latency, whose tail is noisier by nature. The verdict asks whether the whole interval
// of the ratio lies within that band around 1 (see Judge).
type Class string

const (
	// Throughput figures (bytes or files per second) must agree within ±10%.
	Throughput Class = "throughput"
	// Latency figures (fdatasync percentiles) must agree within ±20%.
	Latency Class = "latency"
)

// Tolerance is the largest relative difference of ours from the reference that the interval of
// their ratio may reach and still pass.
func (c Class) Tolerance() float64 {
	if c == Latency {
		return 0.20
	}
	return 0.10
}

// Verdict values.
const (
	// Pass: the whole interval of the ratio lies inside the tolerance band.
	Pass = "pass"
	// Fail: the whole interval lies outside the band.
	Fail = "fail"
	// Inconclusive: the interval straddles a bound of the band, or there is no interval; the
	// rounds neither show agreement nor show disagreement. It does not count as a pass.
	Inconclusive = "inconclusive"
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

// Judge gives the verdict on one comparison: an equivalence judgement on diff's interval of
// ours/reference against the band 1 ± the class's tolerance (see equivalence). ours and reference
// are the medians. resolution is the smallest step the probe can report in the figure's unit (0
// when it reports exact values): the probe rounds fdatasync latencies up to whole microseconds, so
// two sub-microsecond latencies whose medians differ by no more than that step agree as well as
// the probe can tell, even when their interval is far from 1. That excuse needs an interval too:
// without one, no verdict rests on the medians alone.
func Judge(class Class, diff method.Comparison, ours, reference, resolution float64) (verdict, reason string) {
	if math.IsNaN(Ratio(ours, reference)) {
		return NotMeasured, "one side has no figure"
	}
	tol := class.Tolerance()
	verdict, reason = equivalence(diff, 1-tol, 1+tol)
	if verdict != Pass && diff.Interval != nil && resolution > 0 && math.Abs(ours-reference) <= resolution {
		return WithinUnitOf, fmt.Sprintf("%s, but the medians differ by %.3g, within the probe's resolution (%.3g)",
			reason, math.Abs(ours-reference), resolution)
	}
	return verdict, reason
}

// equivalence places the interval against the band [low, high]: inside it (bounds included) is a
// pass, wholly outside it a failure, across a bound inconclusive. A comparison without an
// interval is inconclusive whatever its medians say.
func equivalence(diff method.Comparison, low, high float64) (verdict, reason string) {
	iv := diff.Interval
	band := fmt.Sprintf("the band %.2f–%.2f", low, high)
	if iv == nil {
		return Inconclusive, fmt.Sprintf("no interval (%s), and the ratio of the medians alone is not judged against %s", diff.Reason, band)
	}
	within := fmt.Sprintf("the %.0f %% interval %s", iv.Level*100, formatInterval(iv, low, high))
	switch {
	case iv.Low >= low && iv.High <= high:
		return Pass, within + " lies inside " + band
	case iv.High < low || iv.Low > high:
		return Fail, within + " lies outside " + band
	case iv.Low < low:
		return Inconclusive, fmt.Sprintf("%s crosses the lower bound of %s", within, band)
	}
	return Inconclusive, fmt.Sprintf("%s crosses the upper bound of %s", within, band)
}

// formatInterval writes an interval with two decimals, or more when two would print a bound of it
// as a bound of the band, so that "0.90–1.02" never stands beside "inconclusive".
func formatInterval(iv *method.Interval, low, high float64) string {
	prec := 2
	for prec < 4 && printsAsBound(iv, low, high, prec) {
		prec++
	}
	return fmt.Sprintf("%.*f–%.*f", prec, iv.Low, prec, iv.High)
}

func printsAsBound(iv *method.Interval, low, high float64, prec int) bool {
	for _, v := range []float64{iv.Low, iv.High} {
		for _, b := range []float64{low, high} {
			if v != b && strconv.FormatFloat(v, 'f', prec, 64) == strconv.FormatFloat(b, 'f', prec, 64) {
				return true
			}
		}
	}
	return false
}

// Passed reports whether a verdict counts as agreement. An inconclusive comparison does not.
func Passed(verdict string) bool { return verdict == Pass || verdict == WithinUnitOf }

// Judged reports whether a verdict holds the probe to the tolerance: every one but ForContext.
func Judged(verdict string) bool { return verdict != ForContext }

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
