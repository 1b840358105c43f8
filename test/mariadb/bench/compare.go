package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// tableRow is a row of the Markdown table: a figure of every variant that ran workload (of each
// run, run), or a figure of the whole variant (variant) when workload is empty.
type tableRow struct {
	name, unit, workload string
	higherIsBetter       bool
	run                  func(runResult) float64
	variant              func(*variant) float64
	// recorded, when set, says whether a run recorded the row's figure: rows no run recorded are
	// left out.
	recorded func(runResult) bool
}

// tableRows are the rows of the Markdown table.
var tableRows = []tableRow{
	{name: "temp: time for all queries", unit: "s", workload: "temp", run: func(x runResult) float64 { return x.Seconds }},
	{name: "temp: queries/s", workload: "temp", higherIsBetter: true, run: func(x runResult) float64 { return x.QueriesPerSecond }},
	{name: "temp: data volume writes", unit: "MiB", workload: "temp", run: func(x runResult) float64 { return x.DeviceWriteMiB }},
	{name: "temp: temporary-file I/O (performance_schema)", unit: "MiB", workload: "temp", run: func(x runResult) float64 { return x.TmpdirMiB }, recorded: func(x runResult) bool { return x.TmpdirMiB > 0 }},
	{name: "temp: the server's read and write calls", unit: "MiB", workload: "temp", run: func(x runResult) float64 { return x.IOMiB }, recorded: func(x runResult) bool { return x.IOMiB > 0 }},
	{name: bigSortRow, unit: "s", workload: "bigsort", run: func(x runResult) float64 { return x.Seconds }},
	{name: "bigsort: data volume writes", unit: "MiB", workload: "bigsort", run: func(x runResult) float64 { return x.DeviceWriteMiB }},
	{name: "bigsort: memory cgroup peak", unit: "MiB", workload: "bigsort", run: func(x runResult) float64 { return x.MemoryPeakMiB }},
	{name: "alter: time of the ADD INDEX", unit: "s", workload: "alter", run: func(x runResult) float64 { return x.Seconds }},
	{name: "alter: data volume writes", unit: "MiB", workload: "alter", run: func(x runResult) float64 { return x.DeviceWriteMiB }},
	{name: "alter: memory cgroup peak", unit: "MiB", workload: "alter", run: func(x runResult) float64 { return x.MemoryPeakMiB }},
	{name: "alter-ram: ADD INDEX, innodb_tmpdir in RAM", unit: "s", workload: alterRAM, run: func(x runResult) float64 { return x.Seconds }},
	{name: "alter-ram: data volume writes", unit: "MiB", workload: alterRAM, run: func(x runResult) float64 { return x.DeviceWriteMiB }},
	{name: "alter-ram: memory cgroup peak", unit: "MiB", workload: alterRAM, run: func(x runResult) float64 { return x.MemoryPeakMiB }},
	{name: "mixed: sysbench transactions/s", workload: "mixed", higherIsBetter: true, run: func(x runResult) float64 { return x.TPS }},
	{name: "mixed: sysbench p95 latency", unit: "ms", workload: "mixed", run: func(x runResult) float64 { return x.P95Millis }},
	{name: "mixed: sysbench p99 latency", unit: "ms", workload: "mixed", run: func(x runResult) float64 { return x.P99Millis }},
	{name: "mixed: temporary-table queries/s", workload: "mixed", higherIsBetter: true, run: func(x runResult) float64 { return x.QueriesPerSecond }},
	{name: "mixed: data volume writes", unit: "MiB", workload: "mixed", run: func(x runResult) float64 { return x.DeviceWriteMiB }},
	{name: "reports: sysbench transactions/s", workload: reportsWorkload, higherIsBetter: true, run: func(x runResult) float64 { return x.TPS }},
	{name: "reports: sysbench p95 latency", unit: "ms", workload: reportsWorkload, run: func(x runResult) float64 { return x.P95Millis }},
	{name: "reports: sysbench p99 latency", unit: "ms", workload: reportsWorkload, run: func(x runResult) float64 { return x.P99Millis }},
	{name: "reports: time to stage a table", unit: "s", workload: reportsWorkload, run: func(x runResult) float64 { return x.StageSeconds }},
	{name: "reports: staged MiB read/s", workload: reportsWorkload, higherIsBetter: true, run: func(x runResult) float64 { return x.ScanMiBPerSecond }},
	{name: "reports: data volume writes", unit: "MiB", workload: reportsWorkload, run: func(x runResult) float64 { return x.DeviceWriteMiB }},
	{name: "reports: data volume reads", unit: "MiB", workload: reportsWorkload, run: func(x runResult) float64 { return x.VolumeReadMiB }, recorded: func(x runResult) bool { return x.VolumeRequestsPerSecond > 0 }},
	{name: "reports: data volume requests/s", workload: reportsWorkload, run: func(x runResult) float64 { return x.VolumeRequestsPerSecond }, recorded: func(x runResult) bool { return x.VolumeRequestsPerSecond > 0 }},
	{name: "reports: memory cgroup peak", unit: "MiB", workload: reportsWorkload, run: func(x runResult) float64 { return x.MemoryPeakMiB }},
	{name: memoryRow, unit: "MiB", variant: func(v *variant) float64 { return v.MemoryPeakMiB }},
}

// memoryRow is left out for results measured before the harness had memory cgroups, and the rows
// of a workload for results without it.
const (
	memoryRow  = "container memory cgroup peak"
	bigSortRow = "bigsort: time of the large sort"
)

// values are the row's figures of the variant's completed runs, in the order run.
func (r *results) values(name string, row tableRow) []float64 {
	var xs []float64
	for _, run := range r.Runs[name] {
		if run.Workload == row.workload && run.Failed == "" {
			xs = append(xs, row.run(run))
		}
	}
	return xs
}

// rows are the table's rows this file has figures for.
func (r *results) rows() []tableRow {
	return slices.DeleteFunc(slices.Clone(tableRows), func(row tableRow) bool {
		if row.workload == "" {
			return r.Variants["tmpfs"].MemoryLimitMiB == 0
		}
		return !r.hasRuns(row.workload) || row.recorded != nil && !r.anyRun(row.workload, row.recorded)
	})
}

// anyRun says whether any run of workload w satisfies ok.
func (r *results) anyRun(w string, ok func(runResult) bool) bool {
	for _, runs := range r.Runs {
		for _, run := range runs {
			if run.Workload == w && ok(run) {
				return true
			}
		}
	}
	return false
}

// others are the variants tmpfs is compared with.
func (r *results) others() []string {
	return slices.DeleteFunc(slices.Clone(r.order), func(name string) bool { return name == "tmpfs" })
}

// bootstrapSeed seeds the intervals: the seed of the variants' order, or, for results that
// recorded none, the method's fixed one, so that the same file always gives the same intervals.
func (r *results) bootstrapSeed() int64 {
	if r.Settings.Seed != 0 {
		return r.Settings.Seed
	}
	return method.BootstrapSeed
}

// writeTable writes one column per variant, then for each other variant the ratio of tmpfs's
// median to its median with the interval, and the verdict.
func (r *results) writeTable(b *strings.Builder) {
	b.WriteString("| |")
	for _, name := range r.order {
		fmt.Fprintf(b, " %s |", name)
	}
	for _, name := range r.others() {
		fmt.Fprintf(b, " tmpfs / %s (95%% interval) | verdict |", name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(r.order)) + strings.Repeat("---:|---|", len(r.others())) + "\n")
	for _, row := range r.rows() {
		fmt.Fprintf(b, "| %s |", row.name)
		for _, name := range r.order {
			fmt.Fprintf(b, " %s |", r.cell(name, row))
		}
		for _, name := range r.others() {
			ratio, verdict := r.compareCells(row, name)
			fmt.Fprintf(b, " %s | %s |", ratio, verdict)
		}
		b.WriteString("\n")
	}
}

// compare is the comparison of tmpfs's runs with the other variant's in one row.
func (r *results) compare(row tableRow, other string) (method.Comparison, bool) {
	if row.run == nil || len(r.values(other, row)) == 0 || len(r.values("tmpfs", row)) == 0 {
		return method.Comparison{}, false
	}
	return method.Compare(r.values("tmpfs", row), r.values(other, row), r.bootstrapSeed()), true
}

// compareCells are the ratio and verdict cells of tmpfs against other in row.
func (r *results) compareCells(row tableRow, other string) (ratio, verdict string) {
	c, ok := r.compare(row, other)
	switch {
	case !ok:
		return "–", "–"
	case c.Interval == nil && strings.Contains(c.Reason, method.ErrNoRatio.Error()):
		return "–", "no ratio: a run is 0"
	case c.Interval == nil:
		return "–", fmt.Sprintf("too few runs (%d and %d)", len(r.values("tmpfs", row)), len(r.values(other, row)))
	}
	return c.String(), verdictWords(c.Verdict, row.higherIsBetter)
}

// verdictWords says a verdict in a reader's words: which variant did better, if the interval
// says one did.
func verdictWords(v method.Verdict, higherIsBetter bool) string {
	switch {
	case v == method.NoDifference:
		return "no difference"
	case (v == method.Higher) == higherIsBetter:
		return "tmpfs better"
	}
	return "tmpfs worse"
}

// cell is a variant's median in a row: a dash when the variant did not run the workload,
// "failed" when every run of it filled its filesystem.
func (r *results) cell(name string, row tableRow) string {
	if row.workload == "" {
		return fmt.Sprintf("%.2f %s", row.variant(r.Variants[name]), row.unit)
	}
	ran, failed := 0, 0
	for _, run := range r.Runs[name] {
		if run.Workload == row.workload {
			ran++
			if run.Failed != "" {
				failed++
			}
		}
	}
	median := method.Median(r.values(name, row))
	switch {
	case ran == 0:
		return "–"
	case failed == ran:
		return "failed (full)"
	case failed > 0:
		return fmt.Sprintf("%.2f %s (%d of %d failed)", median, row.unit, failed, ran)
	}
	return strings.TrimSpace(fmt.Sprintf("%.2f %s", median, row.unit))
}

// comparisons are every row's comparison of tmpfs with each other variant, for the JSON.
func (r *results) comparisons() []comparisonRecord {
	var out []comparisonRecord
	for _, row := range r.rows() {
		for _, other := range r.others() {
			if c, ok := r.compare(row, other); ok {
				out = append(out, comparisonRecord{Figure: row.name, Variants: [2]string{"tmpfs", other}, Comparison: c})
			}
		}
	}
	return out
}

// comparisonRecord is one comparison as the JSON records it: the interval of the ratio of the
// first variant's median to the second's.
type comparisonRecord struct {
	Figure   string    `json:"figure"`
	Variants [2]string `json:"variants"`
	method.Comparison
}

// workloadOrder is the order the workloads run in, and their tables of every run are printed.
var workloadOrder = []string{"temp", "bigsort", "alter", alterRAM, "mixed", reportsWorkload}

// writeRuns writes one table per workload of every run, in the order run, with the load average
// each started under when it was recorded.
func (r *results) writeRuns(b *strings.Builder) {
	for _, w := range workloadOrder {
		rows := slices.DeleteFunc(r.rows(), func(row tableRow) bool { return row.workload != w })
		runs := r.runsOf(w)
		if len(rows) == 0 || len(runs) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n<details><summary>Every run of %s (%d)</summary>\n\n| round | variant | ran |", w, len(runs))
		for _, row := range rows {
			fmt.Fprintf(b, " %s |", strings.TrimPrefix(row.name, w+": "))
		}
		pool := poolRecorded(runs)
		if pool {
			b.WriteString(" buffer pool free at its start |")
		}
		b.WriteString(" load average (1 min) at its start |\n|---:|---|---:|" + strings.Repeat("---:|", len(rows)+boolCount(pool)) + "---:|\n")
		for _, run := range runs {
			ran, load := "–", "not recorded"
			if run.Position > 0 {
				ran = method.Ordinal(run.Position)
			}
			if c := run.Conditions; c != nil {
				load = fmt.Sprintf("%.2f", c.LoadAverage1m)
			}
			fmt.Fprintf(b, "| %d | %s | %s |", run.Round, run.variant, ran)
			for _, row := range rows {
				if run.Failed != "" {
					b.WriteString(" failed (full) |")
					continue
				}
				fmt.Fprintf(b, " %s |", strings.TrimSpace(fmt.Sprintf("%.2f %s", row.run(run.runResult), row.unit)))
			}
			if pool {
				fmt.Fprintf(b, " %s |", poolCell(run.BufferPoolFreePercent))
			}
			fmt.Fprintf(b, " %s |\n", load)
		}
		b.WriteString("\n</details>\n")
	}
}

// poolRecorded says whether any of runs recorded its buffer pool's free pages.
func poolRecorded(runs []variantRun) bool {
	return slices.ContainsFunc(runs, func(r variantRun) bool { return r.BufferPoolFreePercent != nil })
}

// poolCell is a run's share of free buffer pool pages at its start.
func poolCell(pct *float64) string {
	if pct == nil {
		return "not recorded"
	}
	return fmt.Sprintf("%.1f %%", *pct)
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// variantRun is a run with the variant it ran on.
type variantRun struct {
	runResult
	variant string
}

// runsOf lists every run of workload w, by round and, within a round, in the order run. Results
// from before the rounds were recorded ran them in a fixed order, the variants' order: their
// rounds and places are counted here.
func (r *results) runsOf(w string) []variantRun {
	var out []variantRun
	position := 0
	for _, name := range r.order {
		round := 0
		for _, run := range r.Runs[name] {
			if run.Workload != w {
				continue
			}
			if round++; round == 1 {
				position++
			}
			if run.Round == 0 {
				run.Round = round
			}
			if run.Position == 0 && r.Settings.Seed == 0 {
				run.Position = position
			}
			out = append(out, variantRun{run, name})
		}
	}
	slices.SortStableFunc(out, func(a, b variantRun) int {
		if a.Round != b.Round {
			return a.Round - b.Round
		}
		return a.Position - b.Position
	})
	return out
}

// conditions summarizes the conditions every run recorded.
func (r *results) conditions() string {
	var cs []method.Conditions
	for _, name := range r.order {
		for _, run := range r.Runs[name] {
			if run.Conditions != nil {
				cs = append(cs, *run.Conditions)
			}
		}
	}
	if len(cs) == 0 {
		return "not recorded per run (measured before the benchmark recorded them)"
	}
	return method.Summary(cs)
}

// block is what docs/benchmarks.md publishes of the results: the medians with the intervals and
// verdicts, how they were drawn, the conditions, and every run.
func (r *results) block() string {
	var b strings.Builder
	r.writeTable(&b)
	fmt.Fprintf(&b, "\nEach figure is the median of the variant's runs (%d per workload). Ratio: tmpfs's median over the other variant's, with a %.0f %% percentile bootstrap interval over all runs (%d resamples, seed %d); the verdict names a difference only where the interval excludes 1. Conditions: %s.\n",
		r.Settings.RunsPerMeasurement, 100*method.Level, method.Resamples, r.bootstrapSeed(), r.conditions())
	r.writeRuns(&b)
	return b.String()
}
