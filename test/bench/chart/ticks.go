package chart

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// targetTicks is about how many labeled ticks a value axis gets: plot's default ticker gives two
// or three, too few to read a bar's length against.
const targetTicks = 6

// step is a round distance between ticks for the range lo..hi (1, 2, 2.5 or 5 times a power of
// ten), and the decimals that its multiples need.
func step(lo, hi float64) (float64, int) {
	raw := (hi - lo) / targetTicks
	if !(raw > 0) || math.IsInf(raw, 0) {
		return 0, 0
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	s := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			s = m * mag
			break
		}
	}
	decimals := 0
	for scaled := s; math.Abs(scaled-math.Round(scaled)) > 1e-9*scaled; scaled *= 10 {
		decimals++
	}
	return s, decimals
}

// roundUp extends hi to the next tick, so that the axis ends on a labeled value.
func roundUp(lo, hi float64) float64 {
	s, _ := step(lo, hi)
	if s == 0 {
		return hi
	}
	return math.Ceil(hi/s-1e-9) * s
}

// valueTicks labels round values with the same number of decimals, and puts an unlabeled tick
// halfway between two.
func valueTicks(lo, hi float64) []plot.Tick {
	s, decimals := step(lo, hi)
	if s == 0 {
		return nil
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / s); i*s <= hi+s*1e-9; i++ {
		v := i * s
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		if mid := v + s/2; mid <= hi {
			ticks = append(ticks, plot.Tick{Value: mid})
		}
	}
	return ticks
}
