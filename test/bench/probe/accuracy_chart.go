package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/test/bench/chart"
)

// accuracyChart shows every comparison as a ratio and its interval against the tolerance band,
// which decides the verdict: one panel per class of figure, since each class has its own
// tolerance; one group per metric and reference tool, in the order they were run; one bar per
// target. Ratios, not raw figures, because a MiB/s and a µs bar
// cannot share an axis, and what the benchmark asks is how far the probe is from the tool.
func accuracyChart(r *Report) *chart.Chart {
	ch := &chart.Chart{
		Title:       "node-agent probes against fio, dd and hdparm",
		Orientation: chart.Horizontal,
		Machine:     machineLine(r.Machine),
		Measured:    r.GeneratedAt,
		Notes: fmt.Sprintf("Bars: ratio = probe median / reference median, medians of %d alternating rounds (%d for short runs); dots: each round's probe run over its reference run; "+
			"whiskers: the 95 %% bootstrap interval of the ratio over every round.\n"+
			"Verdict: pass when the whole interval lies inside the tolerance band, FAIL when it lies wholly outside, inconclusive when it crosses a bound. "+
			"Labels: ratio, verdict: probe median vs reference median.", r.Rounds, r.Rounds*shortRoundsFactor),
		WhiskerLabel: "95 % interval of the ratio",
		PointLabel:   "each round",
	}
	panel := map[Class]int{}
	group := map[string]int{}
	series := map[string]int{}
	for _, c := range r.Comparisons {
		if noOpComparison(r, c) {
			continue
		}
		s, ok := series[c.Target]
		if !ok {
			s = len(ch.Series)
			series[c.Target] = s
			ch.Series = append(ch.Series, c.Target)
		}
		p, ok := panel[c.Class]
		if !ok {
			p = len(ch.Panels)
			panel[c.Class] = p
			ch.Panels = append(ch.Panels, classPanel(c))
		}
		key := c.Series + "|" + c.Metric + "|" + c.ReferenceTool
		g, ok := group[key]
		if !ok {
			g = len(ch.Panels[p].Groups)
			group[key] = g
			ch.Panels[p].Groups = append(ch.Panels[p].Groups, chart.Group{Label: c.MetricLabel + " · " + c.ReferenceTool})
		}
		setBar(&ch.Panels[p].Groups[g], s, ratioBar(c))
	}
	return ch
}

// noOpComparison tells fdatasync timed on tmpfs, which results recorded before the benchmark
// stopped comparing it still hold: a no-op on both sides, below the probe's resolution, whose
// ratio says nothing. The chart leaves it out.
func noOpComparison(r *Report, c Comparison) bool {
	if c.Metric != mFsyncP50 && c.Metric != mFsyncP99 {
		return false
	}
	for _, t := range r.Targets {
		if t.Name == c.Target {
			return t.Kind == probe.KindTmpfs
		}
	}
	return false
}

func classPanel(c Comparison) chart.Panel {
	name := "Throughput"
	if c.Class == Latency {
		name = "fdatasync latency"
	}
	return chart.Panel{
		Title:     fmt.Sprintf("%s (tolerance ±%.0f%%)", name, c.Tolerance*100),
		ValueAxis: "probe median / reference median (ratio, 1 = same figure)",
		Band:      &chart.Band{Low: 1 - c.Tolerance, High: 1 + c.Tolerance, Label: "tolerance band: a pass needs the whole interval inside"},
	}
}

// setBar puts b in series s of g, with no bar for the series before it that g lacks (the raw
// device read is compared on the disk only).
func setBar(g *chart.Group, s int, b chart.Bar) {
	for len(g.Bars) <= s {
		g.Bars = append(g.Bars, chart.Bar{Value: math.NaN()})
	}
	g.Bars[s] = b
}

func ratioBar(c Comparison) chart.Bar {
	if c.Ratio == nil {
		return chart.Bar{Value: math.NaN(), Label: "not measured"}
	}
	verdict := c.Verdict
	switch verdict {
	case Fail:
		verdict = "FAIL"
	case ForContext:
		verdict = "context, no verdict"
	}
	label := fmt.Sprintf("%.3f %s: %s vs %s", *c.Ratio, verdict,
		formatValue(value(c.OursMedian), c.Unit), formatValue(value(c.ReferenceMedian), c.Unit))
	b := chart.Bar{Value: *c.Ratio, Label: label, Highlight: c.Verdict == Fail}
	if rounds := PairedRatios(c.OursSamples, c.ReferenceSamples); len(rounds) > 0 {
		b.Points = rounds
	}
	if iv := c.Interval; iv != nil {
		b.Low, b.High = iv.Low, iv.High
	}
	return b
}

// machineLine is the machine as the chart's caption gives it.
func machineLine(m Machine) string {
	parts := []string{m.CPUModel, fmt.Sprintf("%d cores", m.Cores), formatBytes(m.MemoryBytes) + " RAM", "Linux " + m.Kernel}
	if m.Virtualized != "" {
		parts = append(parts, m.Virtualized)
	}
	return strings.Join(parts, ", ")
}
