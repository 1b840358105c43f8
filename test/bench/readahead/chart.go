package main

import (
	"bytes"
	"fmt"
	"math"
	"os"

	"github.com/dbtune/scratch-operator/test/bench/chart"
	"github.com/dbtune/scratch-operator/test/bench/method"
)

// writeChart draws the results' chart to path.
func writeChart(path string, r *Report) error {
	var png bytes.Buffer
	if err := sweepChart(r).WritePNG(&png); err != nil {
		return err
	}
	return os.WriteFile(path, png.Bytes(), 0o644)
}

// sweepChart shows, for every workload, the throughput at each read-ahead and the bytes the device
// read for each byte asked for, the medians as bars and every run as a dot.
func sweepChart(r *Report) *chart.Chart {
	ch := &chart.Chart{
		Title:       "Read-ahead on a gp3-shaped volume: where it pays, where it cannot matter, where it costs",
		Orientation: chart.Horizontal,
		PointLabel:  "each run",
		Machine:     machineLine(r),
		Measured:    r.GeneratedAt,
		Notes: fmt.Sprintf("Bars: medians of %d runs (%d for the scans), dots: every run; the page cache of the file is dropped before each run. %s.",
			r.Settings.Rounds, r.Settings.ScanRounds, r.Device.Profile),
	}
	for _, kib := range r.Settings.ReadAheadKiB {
		name := kibText(kib)
		if kib == r.Settings.BaselineKiB {
			name += " (kernel default)"
		}
		ch.Series = append(ch.Series, "read-ahead "+name)
	}
	speed := chart.Panel{Title: "throughput (higher is better)", ValueAxis: "MiB/s the workload read"}
	amplification := chart.Panel{Title: "device bytes read per byte asked for (lower is better)", ValueAxis: "device read / bytes asked for"}
	for _, w := range r.orderedWorkloads() {
		sg, ag := chart.Group{Label: w.Title}, chart.Group{Label: w.Title}
		for _, kib := range r.Settings.ReadAheadKiB {
			runs := r.runsOf(w.Name, kib)
			sg.Bars = append(sg.Bars, bar(runs, func(x Run) float64 { return x.ReadBytesPerSecond / (1 << 20) }, "%.1f"))
			ag.Bars = append(ag.Bars, bar(runs, func(x Run) float64 { return float64(x.DeviceReadBytes) / float64(x.RequestedBytes) }, "%.2fx"))
		}
		speed.Groups = append(speed.Groups, sg)
		amplification.Groups = append(amplification.Groups, ag)
	}
	ch.Panels = []chart.Panel{speed, amplification}
	return ch
}

// bar is the median of a figure of runs, with every run as a dot.
func bar(runs []Run, f func(Run) float64, label string) chart.Bar {
	if len(runs) == 0 {
		return chart.Bar{Value: math.NaN()}
	}
	xs := figures(runs, f)
	median := method.Median(xs)
	return chart.Bar{Value: median, Points: xs, Label: fmt.Sprintf(label, median)}
}

// machineLine describes the machine of the first run, for the chart's caption.
func machineLine(r *Report) string {
	if len(r.Runs) == 0 {
		return "conditions not recorded"
	}
	c := r.Runs[0].Conditions
	return fmt.Sprintf("%s, Linux %s, cgroup %s, %s", c.CPUModel, c.Kernel, c.Cgroup, c.Versions["server"])
}
