package probecmd

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// metric is one row of the table: how to read a figure from a target, and whether the row involves
// fdatasync, which tmpfs does not perform: such a row gets no tmpfs/disk ratio, since a ratio
// against a no-op would only restate the disk's figure.
type metric struct {
	label string
	value func(t *probe.TargetResult) (cell string, figure float64)
	syncs bool
	// ratio, when set, gives the tmpfs/disk cell instead of the row's two figures divided: for a
	// row whose tmpfs figure is compared with another of the disk's.
	ratio func(tmpfs, disk *probe.TargetResult) string
}

// renderTable formats a result for a terminal: one column per target, a tmpfs/disk column when
// there is exactly one of each, then notes and errors below.
func renderTable(res *probe.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kernel %s, run took %.1f s\n", res.Kernel, float64(res.DurationMilliseconds)/1000)
	if thp := res.TransparentHugePages; thp != nil {
		b.WriteString(largePagesLine(thp) + "\n")
	}
	if res.FreePageReporting {
		b.WriteString("Virtual machine with free page reporting: buffered figures vary from run to run, compare several runs\n")
	}
	b.WriteString("\n")
	tmpfs, disk := comparedTargets(res)
	header := []string{""}
	for i := range res.Targets {
		header = append(header, res.Targets[i].Name)
	}
	if tmpfs >= 0 {
		header = append(header, "tmpfs/disk")
	}
	rows := [][]string{header}
	for _, m := range metrics(res.Targets) {
		if row, ok := metricRow(m, res.Targets, tmpfs, disk); ok {
			rows = append(rows, row)
		}
	}
	b.WriteString(alignColumns(rows))
	b.WriteString(footnotes(res))
	return b.String()
}

// comparedTargets returns the indexes of the tmpfs and disk targets a Comparison was computed for,
// or -1, -1.
func comparedTargets(res *probe.Result) (tmpfs, disk int) {
	if res.Comparison == nil {
		return -1, -1
	}
	tmpfs, disk = -1, -1
	for i := range res.Targets {
		switch res.Targets[i].Name {
		case res.Comparison.TmpfsTarget:
			tmpfs = i
		case res.Comparison.DiskTarget:
			disk = i
		}
	}
	if tmpfs < 0 || disk < 0 {
		return -1, -1
	}
	return tmpfs, disk
}

// metricRow builds one row; ok is false when no target has the figure (no --device, say), so that
// the table does not carry a row of dashes.
func metricRow(m metric, targets []probe.TargetResult, tmpfs, disk int) (row []string, ok bool) {
	row = []string{m.label}
	figures := make([]float64, len(targets))
	for i := range targets {
		cell, figure := m.value(&targets[i])
		ok = ok || cell != ""
		row = append(row, orDash(cell))
		figures[i] = figure
	}
	switch {
	case tmpfs >= 0 && m.ratio != nil:
		row = append(row, orDash(m.ratio(&targets[tmpfs], &targets[disk])))
	case tmpfs >= 0:
		row = append(row, ratioCell(figures[tmpfs], figures[disk], m.syncs))
	}
	return row, ok
}

// noOpRatio marks the ratio of a row with fdatasync; a note under the table explains it.
const noOpRatio = "n/a"

func ratioCell(tmpfs, disk float64, syncs bool) string {
	switch {
	case math.IsNaN(tmpfs) || math.IsNaN(disk):
		return ""
	case syncs:
		return noOpRatio
	}
	return orDash(probe.FormatRatio(tmpfs, disk))
}

// alignColumns left-aligns the first column and right-aligns the others, counting runes so that
// "µs" does not throw the columns off.
func alignColumns(rows [][]string) string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				line.WriteString(c + pad)
			} else {
				line.WriteString("   " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return b.String()
}

// largePagesLine says what the kernel lets a tmpfs have.
func largePagesLine(thp *probe.TransparentHugePages) string {
	if thp.ShmemEnabled == "" {
		return "Large pages on tmpfs: none, the kernel has no transparent huge pages"
	}
	return "Large pages on tmpfs: shmem_enabled " + thp.ShmemEnabled + ", a tmpfs without huge= gets huge=" + thp.TmpfsDefault
}

func footnotes(res *probe.Result) string {
	var b strings.Builder
	b.WriteString("\nIn brackets: the bytes moved, files handled or fdatasync samples taken; * see below.\n")
	if res.Comparison != nil {
		b.WriteString("tmpfs/disk: the tmpfs figure divided by the disk's; on a row with huge=within_size, by the disk's temp files of the row above.\n")
		b.WriteString(noOpRatio + ": fdatasync is a no-op on tmpfs, so a row with fdatasync has nothing to compare; read the disk's figure.\n")
	}
	for i := range res.Targets {
		t := &res.Targets[i]
		for _, n := range notes(t) {
			fmt.Fprintf(&b, "%s: %s\n", t.Name, n)
		}
	}
	return b.String()
}

func notes(t *probe.TargetResult) []string {
	var out []string
	if t.ColdRead != nil && t.ColdRead.Note != "" {
		out = append(out, "cold read "+t.ColdRead.Note)
	}
	if t.DirectWrite != nil && t.DirectWrite.Unsupported != "" {
		out = append(out, "O_DIRECT write unsupported: "+t.DirectWrite.Unsupported)
	}
	out = appendUnsupported(out, "temp files unsupported: ", t.TempFiles)
	out = appendUnsupported(out, "temp files with huge=within_size unsupported: ", t.LargePageTempFiles)
	if t.Error != "" {
		out = append(out, "ERROR: "+t.Error)
	}
	return out
}

// appendUnsupported adds each distinct reason the results give, once: the sizes of one variant
// share it.
func appendUnsupported(out []string, prefix string, results []probe.TempFileResult) []string {
	var seen []string
	for _, r := range results {
		if r.Unsupported != "" && !slices.Contains(seen, r.Unsupported) {
			seen = append(seen, r.Unsupported)
			out = append(out, prefix+r.Unsupported)
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatSize shows a size in the table as quantity.Spaced writes it.
func formatSize(n int64) string { return quantity.Spaced(n) }

func tempFileSizes(targets []probe.TargetResult) []int64 {
	var sizes []int64
	for i := range targets {
		for _, rs := range [][]probe.TempFileResult{targets[i].TempFiles, targets[i].LargePageTempFiles} {
			for _, r := range rs {
				if !slices.Contains(sizes, r.FileSizeBytes) {
					sizes = append(sizes, r.FileSizeBytes)
				}
			}
		}
	}
	slices.Sort(sizes)
	return sizes
}

func churnSizes(targets []probe.TargetResult) []int64 {
	var sizes []int64
	for i := range targets {
		for _, c := range targets[i].FileChurn {
			if !slices.Contains(sizes, c.FileSizeBytes) {
				sizes = append(sizes, c.FileSizeBytes)
			}
		}
	}
	slices.Sort(sizes)
	return sizes
}
