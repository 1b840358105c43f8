package main

import (
	"fmt"
	"math"

	"github.com/dbtune/scratch-operator/test/bench/chart"
)

// Series of the chart, in the order of chart.Chart.Series.
var chartSeries = []string{
	"sampling round, fake client (whole pods)",
	"sampling round, cache-like reader (trimmed pods)",
	"statfs alone (the floor)",
}

// costChart shows, against the volume count, the CPU of a sampling round with each reader beside
// statfs alone, the same per volume, and the heap the sampler holds.
func costChart(r *Report) *chart.Chart {
	ch := &chart.Chart{
		Title:       "node agent: cost of sampling the RAM volumes of one node",
		Series:      chartSeries,
		Orientation: chart.Vertical,
		PointLabel:  "each run",
		Machine:     machineLine(r.Machine),
		Measured:    r.GeneratedAt,
		Notes: fmt.Sprintf("Bars: medians of %d runs, dots: every run. CPU = process user+sys (getrusage) per round, one round per second by default. "+
			"Heap = live heap the sampler adds, after a warm-up that fills its 1 h peak window.", r.Settings.Runs),
	}
	perRound := chart.Panel{Title: "CPU per sampling round\n(lower is better)", ValueAxis: "CPU time per round (ms)"}
	perVolume := chart.Panel{Title: "CPU per volume\n(lower is better)", ValueAxis: "CPU time per volume per round (µs)"}
	heap := chart.Panel{Title: "Go heap held by the sampler\n(lower is better)", ValueAxis: "live heap after warm-up (KiB)"}
	for _, n := range r.Settings.VolumeCounts {
		label := fmt.Sprintf("%d volume%s", n, plural(n))
		round, vol, h := chart.Group{Label: label}, chart.Group{Label: label}, chart.Group{Label: label}
		for _, w := range []string{wSample + fakeReader, wSample + cachedReader, wStatfs} {
			round.Bars = append(round.Bars, cpuBar(r.cost(w, n), 1e3, 1))
			vol.Bars = append(vol.Bars, cpuBar(r.cost(w, n), 1e6, n))
		}
		for _, reader := range readers {
			h.Bars = append(h.Bars, heapBar(r.heap(reader, n)))
		}
		perRound.Groups = append(perRound.Groups, round)
		perVolume.Groups = append(perVolume.Groups, vol)
		heap.Groups = append(heap.Groups, h)
	}
	ch.Panels = []chart.Panel{perRound, perVolume, heap}
	return ch
}

// cpuBar is a series' median CPU per round in the given unit (1e3 for ms), divided by volumes,
// with every run as a dot.
func cpuBar(s *CostSeries, unit float64, volumes int) chart.Bar {
	if s == nil {
		return chart.Bar{Value: math.NaN()}
	}
	k := unit / float64(volumes)
	return chart.Bar{Value: s.CPUSeconds.Median * k, Points: scaled(field(s.Runs, func(c Cost) float64 { return c.CPUSeconds }), k)}
}

func heapBar(h *HeapSeries) chart.Bar {
	if h == nil {
		return chart.Bar{Value: math.NaN()}
	}
	return chart.Bar{Value: h.Sampler.Median / 1024, Points: scaled(h.SamplerBytes, 1.0/1024)}
}

// scaled is xs times k.
func scaled(xs []float64, k float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * k
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
