package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbtune/scratch-operator/test/bench/chart"
)

// measure is one bar of the chart: a figure of one workload's runs.
type measure struct {
	label    string
	workload string
	value    func(runResult) float64
}

// panels are the chart's panels: each has its own unit, hence its own axis.
var panels = []struct {
	title, axis string
	measures    []measure
}{
	{"temp: mysqlslap\n(lower is better)", "time for all queries (s)", []measure{
		{"temporary-table queries", "temp", func(r runResult) float64 { return r.Seconds }},
	}},
	{"bigsort: one large filesort\n(lower is better)", "time of the query (s)", []measure{
		{"ORDER BY through temporary files", "bigsort", func(r runResult) float64 { return r.Seconds }},
	}},
	{"alter: ADD INDEX\n(lower is better)", "time of the ALTER (s)", []measure{
		{"innodb_tmpdir as placed", "alter", func(r runResult) float64 { return r.Seconds }},
		{"innodb_tmpdir in RAM", alterRAM, func(r runResult) float64 { return r.Seconds }},
	}},
	{"mixed: sysbench throughput\n(higher is better)", "transactions per second (tx/s)", []measure{
		{"oltp_write_only", "mixed", func(r runResult) float64 { return r.TPS }},
	}},
	{"mixed: sysbench latency\n(lower is better)", "latency (ms)", []measure{
		{"p95", "mixed", func(r runResult) float64 { return r.P95Millis }},
		{"p99", "mixed", func(r runResult) float64 { return r.P99Millis }},
	}},
	{"reports: sysbench throughput\n(higher is better)", "transactions per second (tx/s)", []measure{
		{"oltp_write_only beside the reports", reportsWorkload, func(r runResult) float64 { return r.TPS }},
	}},
	{"reports: sysbench latency\n(lower is better)", "latency (ms)", []measure{
		{"p95", reportsWorkload, func(r runResult) float64 { return r.P95Millis }},
		{"p99", reportsWorkload, func(r runResult) float64 { return r.P99Millis }},
	}},
	{"reports: staged data read\n(higher is better)", "MiB/s", []measure{
		{"staged table scans", reportsWorkload, func(r runResult) float64 { return r.ScanMiBPerSecond }},
	}},
	{"reports: staging\n(lower is better)", "time to stage a table (s)", []measure{
		{"CREATE TEMPORARY TABLE … SELECT", reportsWorkload, func(r runResult) float64 { return r.StageSeconds }},
	}},
}

// chart draws the median of each variant's runs as a bar and every run as a dot over it: with a
// handful of runs on a shared machine, the spread says as much as the median.
func (r *results) chart() *chart.Chart {
	ch := &chart.Chart{
		Title:      r.Machine.server() + r.chartSubject(),
		Series:     r.order,
		PointLabel: "each run",
		Machine:    fmt.Sprintf("%d CPUs, Linux %s, %s", r.Machine.CPUs, r.Machine.Kernel, r.Machine.server()),
		// Generated is taken just before the first measured run.
		Measured: r.Generated,
		Notes: fmt.Sprintf("Bars: median of %d runs per variant, dots: every run, the variants alternating %s.%s%s",
			r.Settings.RunsPerMeasurement, r.orderText(), r.variantNote(), r.conditionsNote()),
	}
	for _, p := range panels {
		if !r.hasRuns(p.measures[0].workload) {
			continue // a workload this run skipped (bigsort with -bigsort-mib 0) or did not have yet
		}
		pn := chart.Panel{Title: p.title, ValueAxis: p.axis}
		for _, m := range p.measures {
			g := chart.Group{Label: m.label}
			for _, name := range r.order {
				g.Bars = append(g.Bars, spread(r.Runs[name], m))
			}
			pn.Groups = append(pn.Groups, g)
		}
		ch.Panels = append(ch.Panels, pn)
	}
	return ch
}

// hasRuns says whether any variant ran the workload.
func (r *results) hasRuns(workload string) bool {
	for _, runs := range r.Runs {
		for _, run := range runs {
			if run.Workload == workload {
				return true
			}
		}
	}
	return false
}

// spread is the bar of one measure over one variant's runs; NaN, drawn as no bar, without runs.
func spread(runs []runResult, m measure) chart.Bar {
	var xs []float64
	failed := false
	for _, run := range runs {
		failed = failed || run.Workload == m.workload && run.Failed != ""
		if run.Workload == m.workload && run.Failed == "" {
			xs = append(xs, m.value(run))
		}
	}
	if len(xs) == 0 && failed {
		return chart.Bar{Value: math.NaN(), Label: "failed: full"}
	}
	if len(xs) == 0 {
		return chart.Bar{Value: math.NaN(), Label: "no runs"}
	}
	return chart.Bar{Value: median(xs), Points: xs}
}

// conditionsNote states the pod's memory limit and data volume, for results that record them.
func (r *results) conditionsNote() string {
	var b strings.Builder
	if r.Settings.MemoryLimit != "" {
		fmt.Fprintf(&b, " Memory limit %s, RAM volume %s.", r.Settings.MemoryLimit, r.Settings.ScratchVolumeSize)
	}
	if v := r.Variants["tmpfs"]; v != nil && v.DataVolume != "" {
		fmt.Fprintf(&b, " Data volumes: %s.", v.DataVolume)
	}
	return b.String()
}

// variantNote says where each variant's tmpdir was.
func (r *results) variantNote() string {
	var b strings.Builder
	for _, name := range r.order {
		if v := r.Variants[name]; v != nil {
			fmt.Fprintf(&b, " %s: tmpdir %s on %s", name, v.TmpDir, v.FS)
			if v.InnoDBTmpDir != "" && v.InnoDBTmpDir != v.TmpDir {
				fmt.Fprintf(&b, ", innodb_tmpdir %s on %s", v.InnoDBTmpDir, v.InnoDBFS)
			}
			b.WriteString(".")
		}
	}
	return b.String()
}

// chartSubject says what the chart compares, after the server's name.
func (r *results) chartSubject() string {
	if r.onlyReports() {
		return ": reports beside a write load, tmpdir on tmpfs vs on the data volume"
	}
	return ": tmpdir on tmpfs vs on disk"
}
