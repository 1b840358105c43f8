package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// markdown is what docs/probes.md publishes of r: a table per target of every comparison it
// judges or shows for context, with the interval and the band that decide the verdict, and the
// verdicts counted per reference tool.
func (r *Report) markdown() string {
	var b strings.Builder
	left := 0
	for _, target := range r.Targets {
		rows := 0
		for _, c := range r.Comparisons {
			if c.Target != target.Name {
				continue
			}
			if noOpComparison(r, c) {
				left++
				continue
			}
			if rows == 0 {
				fmt.Fprintf(&b, "#### %s\n\n", target.Name)
				b.WriteString("| Workload | Reference | Probe | Reference | Ratio | 95 % interval | Paired | Band | Verdict |\n")
				b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
			}
			rows++
			label := c.MetricLabel
			if c.Note != "" {
				label += " (" + c.Note + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", label, c.ReferenceTool,
				docValue(value(c.OursMedian), c.Unit), docValue(value(c.ReferenceMedian), c.Unit),
				docRatio(c.Ratio), intervalCell(c), docRatio(c.PairedRatioMedian), bandCell(c), c.Verdict)
		}
		if rows > 0 {
			b.WriteString("\n")
		}
	}
	if left > 0 {
		fmt.Fprintf(&b, "Left out: %d comparisons of fdatasync on tmpfs, a no-op on both sides (below).\n\n", left)
	}
	b.WriteString("Verdicts per reference tool:\n\n")
	for _, t := range tally(r) {
		fmt.Fprintf(&b, "- %s: %s\n", t.tool, t)
	}
	return b.String()
}

// docValue writes a median as the document's tables do: whole MiB/s, whole files/s with their
// thousands grouped by a space, µs to a tenth.
func docValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch unit {
	case unitBytes:
		return strconv.FormatFloat(v/(1<<20), 'f', 0, 64) + " MiB/s"
	case unitFiles:
		return grouped(int64(math.Round(v))) + " files/s"
	case unitMicros:
		return strconv.FormatFloat(v, 'f', 1, 64) + " µs"
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}

// grouped writes n with its thousands separated by spaces: 91 207.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

func docRatio(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}
