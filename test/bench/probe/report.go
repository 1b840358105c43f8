package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// Report is results.json.
type Report struct {
	GeneratedAt     time.Time    `json:"generatedAt"`
	Command         string       `json:"command"`
	DurationSeconds float64      `json:"durationSeconds"`
	Machine         Machine      `json:"machine"`
	Targets         []TargetInfo `json:"targets"`
	Rounds          int          `json:"rounds"`
	// Seed drew the order of each round and the intervals; results from before it was recorded
	// ran the probe first in every round.
	Seed int64 `json:"seed,omitempty"`
	// Method says how the figures were taken, so that the JSON stands on its own.
	Method      string             `json:"method"`
	Tolerances  map[string]float64 `json:"tolerances"`
	Comparisons []Comparison       `json:"comparisons"`
	ProbeCost   *ProbeCost         `json:"agentProbeCost,omitempty"`
	IdleCost    *IdleCost          `json:"agentIdleCost,omitempty"`
	Errors      []string           `json:"errors,omitempty"`
}

const methodText = "For each workload and target, the probe library (called in-process with the options of " +
	"probe.DefaultOptions for that workload) and one reference tool run alternately, in an order drawn anew for each round from the recorded seed, " +
	"on the same directory, for the given number of rounds each, three times as many for workloads timed over " +
	"a tenth of a second or less; the filesystem is flushed (syncfs) after every run, and before every run of " +
	"a workload that allocates page cache inside its timing machine.warmMemoryBytes of memory are faulted in " +
	"and freed, both outside the timing. dd is timed net of its own input: the seconds of the same dd into " +
	"/dev/null, run just before, are subtracted (referencePrintedSamples keep what dd printed). " +
	"Figures are medians; ratio = probe median / reference median; interval = its 95 % percentile bootstrap interval over every round " +
	"(10000 resamples), difference = no difference unless the interval excludes 1. verdict = pass when the whole interval lies inside " +
	"1 ± tolerance, fail when it lies wholly outside, inconclusive when it crosses a bound or there is none (fewer than 3 rounds); " +
	"pass (within resolution) when it does not pass but the medians differ by no more than the probe's resolution. " +
	"roundConditions are the machine's at the start of each round."

// Comparison is one metric of one series: every sample of both sides, the medians and the verdict.
type Comparison struct {
	Target           string    `json:"target"`
	Series           string    `json:"series"`
	Workload         string    `json:"workload"`
	Metric           string    `json:"metric"`
	MetricLabel      string    `json:"metricLabel"`
	Unit             string    `json:"unit"`
	Class            Class     `json:"class"`
	Tolerance        float64   `json:"tolerance"`
	OursCommand      string    `json:"oursCommand"`
	ReferenceTool    string    `json:"referenceTool"`
	ReferenceCommand string    `json:"referenceCommand"`
	OursSamples      []float64 `json:"oursSamples"`
	ReferenceSamples []float64 `json:"referenceSamples"`
	// ReferencePrintedSamples are the figures the tool printed, when ReferenceSamples are corrected
	// ones (dd, net of its own input).
	ReferencePrintedSamples []float64 `json:"referencePrintedSamples,omitempty"`
	OursMedian              *float64  `json:"oursMedian"`
	ReferenceMedian         *float64  `json:"referenceMedian"`
	Ratio                   *float64  `json:"ratio"`
	// PairedRatioMedian is the median of the per-round ratios; the verdict uses Ratio.
	PairedRatioMedian *float64 `json:"pairedRatioMedian"`
	// Interval is the bootstrap interval of Ratio over every round, and Difference its verdict:
	// "no difference" between probe and reference unless the interval excludes 1 (with
	// DifferenceReason when there is no interval). Results from before they were recorded have
	// neither.
	Interval         *method.Interval `json:"interval,omitempty"`
	Difference       method.Verdict   `json:"difference,omitempty"`
	DifferenceReason string           `json:"differenceReason,omitempty"`
	// RoundOrders are the tools of each round in the order they ran, and RoundConditions the
	// machine's at the start of each round.
	RoundOrders     [][]string          `json:"roundOrders,omitempty"`
	RoundConditions []method.Conditions `json:"roundConditions,omitempty"`
	Verdict         string              `json:"verdict"`
	Reason          string              `json:"reason"`
	Note            string              `json:"note,omitempty"`
	Error           string              `json:"error,omitempty"`
}

// finite returns a pointer to v, or nil for NaN and infinities, which JSON cannot carry.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func value(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func writeJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// formatValue writes a raw figure in the unit people read it in: MiB/s for bytes per second.
func formatValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch unit {
	case unitBytes:
		return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + " MiB/s"
	case unitFiles:
		return strconv.FormatFloat(v, 'f', 0, 64) + " files/s"
	case unitMicros:
		return strconv.FormatFloat(v, 'f', 1, 64) + " µs"
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}

func formatRatio(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}

// printTable writes the comparisons and the agent's cost for people.
func printTable(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tMETRIC\tPROBE\tREFERENCE\tTOOL\tRATIO\t95% INTERVAL\tPAIRED\tBAND\tVERDICT")
	left := 0
	for _, c := range r.Comparisons {
		if noOpComparison(r, c) {
			left++
			continue
		}
		verdict := c.Verdict
		if c.Error != "" {
			verdict += " (error: " + firstLine(c.Error) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Target, c.MetricLabel,
			formatValue(value(c.OursMedian), c.Unit), formatValue(value(c.ReferenceMedian), c.Unit),
			c.ReferenceTool, formatRatio(c.Ratio), intervalCell(c), formatRatio(c.PairedRatioMedian), bandCell(c), verdict)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nRATIO = probe median / reference median; 95%% INTERVAL = its bootstrap interval over every round (%d rounds each, %d for short runs); "+
		"PAIRED = median of the per-round ratios. Verdict: pass when the whole interval lies inside BAND, fail when it lies wholly outside, "+
		"inconclusive when it crosses a bound or there is none.\n", r.Rounds, r.Rounds*shortRoundsFactor)
	if left > 0 {
		fmt.Fprintf(w, "Left out: %d comparisons of fdatasync on tmpfs, a no-op on both sides, which results from before the benchmark stopped timing it still hold.\n", left)
	}
	for _, t := range tally(r) {
		fmt.Fprintf(w, "  against %-16s %s\n", t.tool+":", t)
	}
	printCost(w, r)
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

// intervalCell is a comparison's interval as the tables write it, or why it has none.
func intervalCell(c Comparison) string {
	if c.Interval == nil {
		return "none"
	}
	return formatInterval(c.Interval, 1-c.Tolerance, 1+c.Tolerance)
}

// bandCell is the tolerance band around 1 that the interval is judged against.
func bandCell(c Comparison) string {
	return fmt.Sprintf("%.2f–%.2f", 1-c.Tolerance, 1+c.Tolerance)
}

// toolTally counts the verdicts of the comparisons with one reference tool.
type toolTally struct {
	tool                                      string
	passed, inconclusive, failed, notMeasured int
	context                                   int
}

func (t toolTally) judged() int { return t.passed + t.inconclusive + t.failed + t.notMeasured }

// String says how the tool's comparisons came out: "9 of 11 pass, 2 inconclusive, 0 fail".
func (t toolTally) String() string {
	if t.judged() == 0 {
		return "shown for context, no verdict"
	}
	s := fmt.Sprintf("%d of %d pass, %d inconclusive, %d fail", t.passed, t.judged(), t.inconclusive, t.failed)
	if t.notMeasured > 0 {
		s += fmt.Sprintf(", %d not measured", t.notMeasured)
	}
	return s
}

// tally counts verdicts per reference tool, in the order the tools first appear, leaving out
// what noOpComparison leaves out.
func tally(r *Report) []toolTally {
	var out []toolTally
	index := map[string]int{}
	for _, c := range r.Comparisons {
		if noOpComparison(r, c) {
			continue
		}
		i, ok := index[c.ReferenceTool]
		if !ok {
			i = len(out)
			index[c.ReferenceTool] = i
			out = append(out, toolTally{tool: c.ReferenceTool})
		}
		t := &out[i]
		switch {
		case c.Verdict == ForContext:
			t.context++
		case Passed(c.Verdict):
			t.passed++
		case c.Verdict == Inconclusive:
			t.inconclusive++
		case c.Verdict == Fail:
			t.failed++
		default:
			t.notMeasured++
		}
	}
	return out
}

func printCost(w io.Writer, r *Report) {
	if pc := r.ProbeCost; pc != nil && len(pc.Runs) > 0 {
		fmt.Fprintf(w, "\nnode-agent probe (defaults, both targets), %d runs: median %.2f CPU s per run over %.1f s wall (%.0f%% of a core), peak RSS %s\n",
			len(pc.Runs), pc.MedianCPUSeconds, pc.MedianWallSeconds, pc.MedianCPUPercent, formatBytes(pc.PeakRSSBytes))
	}
	if ic := r.IdleCost; ic != nil {
		if !ic.Measured {
			fmt.Fprintf(w, "node-agent run idle: not measured: %s\n", ic.Reason)
			return
		}
		fmt.Fprintf(w, "node-agent run: first run published after %.1f s (%.2f CPU s, peak RSS %s); idle over %.0f s: %.2f%% of a core, RSS %s (max %s)\n",
			ic.FirstRunSeconds, ic.FirstRunCPUSeconds, formatBytes(ic.FirstRunPeakRSSBytes), ic.IdleSeconds, ic.IdleCPUPercent,
			formatBytes(ic.IdleMedianRSSBytes), formatBytes(ic.IdleMaxRSSBytes))
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
