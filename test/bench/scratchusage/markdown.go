package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// readReport reads a results file of this benchmark.
func readReport(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", path, err)
	}
	if len(r.Costs) == 0 || len(r.Settings.VolumeCounts) == 0 {
		return nil, fmt.Errorf("%s has no costs: not this benchmark's results", path)
	}
	// The intervals are drawn again, so that results from before they were recorded have them.
	r.Comparisons = r.comparisons()
	return &r, nil
}

// replot draws the chart of a results file to a PNG of its name in out (default: beside it) and
// returns the Markdown block of docs/benchmarks.md; the results file is left as it is.
func replot(path, out string) (string, string, error) {
	r, err := readReport(path)
	if err != nil {
		return "", "", err
	}
	if out == "" {
		out = filepath.Dir(path)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", "", err
	}
	var png bytes.Buffer
	if err := costChart(r).WritePNG(&png); err != nil {
		return "", "", err
	}
	pngPath := filepath.Join(out, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))+".png")
	return pngPath, r.markdown(), os.WriteFile(pngPath, png.Bytes(), 0o644)
}

// markdown is what docs/benchmarks.md publishes of the results: the medians, the intervals of the
// ratios, the conditions and every run.
func (r *Report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s, Go %s, `%s`, medians of %d runs:\n\n",
		r.GeneratedAt.Format("2006-01-02"), machineLine(r.Machine), strings.TrimPrefix(r.Machine.GoVersion, "go"), r.Command, r.Settings.Runs)
	b.WriteString("| volumes | statfs alone, CPU per round | sampling round (as the cache serves pods) | share of one core at 1 s | of it, listing the pods | allocated per round | sampling round over the fake client | scrape (Gather and text encoding) | sampler heap | heap per volume |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range r.Settings.VolumeCounts {
		statfs, sample, list := r.cost(wStatfs, n), r.cost(wSample+cachedReader, n), r.cost(wList+cachedReader, n)
		fake, scrape, heap := r.cost(wSample+fakeReader, n), r.cost(wScrape, n), r.heap(cachedReader, n)
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, cpuCell(statfs), cpuCell(sample), shareCell(sample),
			cpuCell(list), allocCell(sample), cpuCell(fake), cpuCell(scrape), heapCell(heap, 1), heapCell(heap, n))
	}
	b.WriteString("\n| volumes | ratio of CPU per round | 95 % interval | verdict |\n|---:|---|---:|---|\n")
	for _, c := range r.Comparisons {
		iv := "–"
		if c.Interval != nil {
			iv = c.String()
		}
		fmt.Fprintf(&b, "| %d | %s / %s | %s | %s |\n", c.Volumes, workloadNames[c.Workload], workloadNames[c.Reference], iv, verdictOf(c.Comparison))
	}
	fmt.Fprintf(&b, "\nRatios: the median of the first workload's CPU per round over the second's, with a %.0f %% percentile bootstrap interval over the runs (%d resamples, seed %d); the verdict names a difference only where the interval excludes 1. Conditions: %s.\n",
		100*method.Level, method.Resamples, r.seed(), r.conditions())
	r.writeRuns(&b)
	return b.String()
}

// workloadNames are the compared workloads as the tables name them.
var workloadNames = map[string]string{
	wStatfs:                "statfs alone",
	wSample + cachedReader: "sampling round",
	wSample + fakeReader:   "fake client's round",
}

// seed is the seed of the intervals: the run's, or the method's fixed one.
func (r *Report) seed() int64 {
	if r.Settings.Seed != 0 {
		return r.Settings.Seed
	}
	return method.BootstrapSeed
}

// writeRuns tabulates every run of every volume count, in the order measured.
func (r *Report) writeRuns(b *strings.Builder) {
	b.WriteString("\n<details><summary>Every run</summary>\n\n| run | measured | volumes | statfs alone | sampling round | listing the pods | fake client's round | scrape | sampler heap | load average (1 min) at its start |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	type row struct{ run, position, volumes int }
	rows := make([]row, 0, r.Settings.Runs*len(r.Settings.VolumeCounts))
	for i, n := range r.Settings.VolumeCounts {
		for run := range r.Settings.Runs {
			// Results from before the order was recorded started each run one count further along.
			rows = append(rows, row{run + 1, (i-run%len(r.Settings.VolumeCounts)+len(r.Settings.VolumeCounts))%len(r.Settings.VolumeCounts) + 1, n})
		}
	}
	for i := range rows {
		if rd := r.round(rows[i].run, rows[i].volumes); rd != nil {
			rows[i].position = rd.Position
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return (a.run-b.run)*1000 + a.position - b.position })
	for _, x := range rows {
		at := func(w string) string { return runCPU(r.cost(w, x.volumes), x.run-1) }
		heap, load := "–", "not recorded"
		if h := r.heap(cachedReader, x.volumes); h != nil && x.run-1 < len(h.SamplerBytes) {
			heap = formatBytes(h.SamplerBytes[x.run-1])
		}
		if rd := r.round(x.run, x.volumes); rd != nil {
			load = fmt.Sprintf("%.2f", rd.Conditions.LoadAverage1m)
		}
		fmt.Fprintf(b, "| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", x.run, method.Ordinal(x.position), x.volumes, at(wStatfs), at(wSample+cachedReader),
			at(wList+cachedReader), at(wSample+fakeReader), at(wScrape), heap, load)
	}
	b.WriteString("\n</details>\n")
}

// round is the record of one run at one volume count, nil in results from before they were kept.
func (r *Report) round(run, volumes int) *Round {
	for i := range r.Rounds {
		if r.Rounds[i].Run == run && r.Rounds[i].Volumes == volumes {
			return &r.Rounds[i]
		}
	}
	return nil
}

// conditions summarizes the conditions every run recorded.
func (r *Report) conditions() string {
	cs := make([]method.Conditions, 0, len(r.Rounds))
	for _, rd := range r.Rounds {
		cs = append(cs, rd.Conditions)
	}
	if len(cs) == 0 {
		return fmt.Sprintf("not recorded per run (measured before the benchmark recorded them; load average %s at the start, %s at the end)", r.Machine.LoadAvgStart, r.Machine.LoadAvgFinish)
	}
	return method.Summary(cs)
}

func runCPU(s *CostSeries, run int) string {
	if s == nil || run >= len(s.Runs) {
		return "–"
	}
	return formatSeconds(s.Runs[run].CPUSeconds)
}

func cpuCell(s *CostSeries) string {
	if s == nil {
		return "–"
	}
	return formatSeconds(s.CPUSeconds.Median)
}

func shareCell(s *CostSeries) string {
	if s == nil || s.CPUShare == nil {
		return "–"
	}
	return fmt.Sprintf("%.2g %%", *s.CPUShare*100)
}

func allocCell(s *CostSeries) string {
	if s == nil {
		return "–"
	}
	return formatBytes(s.AllocBytes)
}

func heapCell(h *HeapSeries, per int) string {
	if h == nil || math.IsNaN(h.Sampler.Median) {
		return "–"
	}
	return formatBytes(h.Sampler.Median / float64(per))
}

// verdictOf says a comparison's verdict in a reader's words.
func verdictOf(c method.Comparison) string {
	switch c.Verdict {
	case method.Higher:
		return "dearer"
	case method.Lower:
		return "cheaper"
	case method.NoDifference:
		return "no difference"
	}
	return c.Reason
}
