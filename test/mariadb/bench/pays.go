package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// The summary of where a RAM tmpdir paid: every headline figure of several results files, tmpfs
// against each other variant, sorted into the comparisons whose interval says tmpfs did better
// and all the others — no difference, worse, or a RAM volume that filled.

// paysFigures are the rows of a results file's table the summary takes: what a user of the
// database would feel (times, throughput, commit latency) and what the volume received.
var paysFigures = []string{
	"temp: time for all queries",
	bigSortRow,
	"alter: time of the ADD INDEX",
	"mixed: sysbench p99 latency",
	"mixed: temporary-table queries/s",
	"reports: sysbench transactions/s",
	"reports: sysbench p99 latency",
	"reports: staged MiB read/s",
	"reports: data volume writes",
}

// paysLine is one comparison of the summary.
type paysLine struct {
	setting, figure, tmpfs, other, ratio, verdict string
	paid                                          bool
}

// paysBlock draws the two tables from the results files, given relative to root.
func paysBlock(root string, files []string) (string, error) {
	var lines []paysLine
	for _, f := range files {
		r, err := readResults(filepath.Join(root, f))
		if err != nil {
			return "", err
		}
		lines = append(lines, r.paysLines()...)
	}
	var b strings.Builder
	b.WriteString("**Where the RAM tmpdir did better** (the interval of tmpfs / other excludes 1, in tmpfs's favor):\n\n")
	writePaysTable(&b, slices.DeleteFunc(slices.Clone(lines), func(l paysLine) bool { return !l.paid }), false)
	b.WriteString("\n**Where it did not** (no difference, worse, or the RAM volume filled):\n\n")
	writePaysTable(&b, slices.DeleteFunc(lines, func(l paysLine) bool { return l.paid }), true)
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, "`"+filepath.Base(f)+"`")
	}
	fmt.Fprintf(&b, "\nDrawn from %s: medians of each variant's runs, ratios with their 95 %% bootstrap intervals as each section above gives them.\n", strings.Join(names, ", "))
	return b.String(), nil
}

func writePaysTable(b *strings.Builder, lines []paysLine, verdicts bool) {
	b.WriteString("| setting | figure | tmpfs | compared with | tmpfs / other (95% interval) |")
	if verdicts {
		b.WriteString(" verdict |")
	}
	b.WriteString("\n|---|---|---:|---|---:|")
	if verdicts {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, l := range lines {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |", l.setting, l.figure, l.tmpfs, l.other, l.ratio)
		if verdicts {
			fmt.Fprintf(b, " %s |", l.verdict)
		}
		b.WriteString("\n")
	}
}

// paysLines are the file's headline comparisons, and alter-ram's runs against every other
// variant's alter runs: innodb_tmpdir in RAM against where that variant keeps it.
func (r *results) paysLines() []paysLine {
	setting := r.settingLabel()
	var out []paysLine
	for _, row := range r.rows() {
		if !slices.Contains(paysFigures, row.name) {
			continue
		}
		for _, other := range r.others() {
			if l, ok := r.paysLine(row, r.cell("tmpfs", row), r.values("tmpfs", row), other, r.values(other, row)); ok {
				l.setting = setting
				out = append(out, l)
			}
		}
	}
	ramRow := tableRows[rowIndexOf(alterRAMRow)]
	if ram := r.values("tmpfs", ramRow); len(ram) > 0 {
		alter := tableRows[rowIndexOf("alter: time of the ADD INDEX")]
		for _, other := range r.others() {
			row := alter
			row.name = "online ADD INDEX, innodb_tmpdir in RAM (`innodbTmpdir: Memory`)"
			if l, ok := r.paysLine(row, r.cell("tmpfs", ramRow), ram, other, r.values(other, alter)); ok {
				l.setting = setting
				out = append(out, l)
			}
		}
	}
	return out
}

// alterRAMRow is the row of alter-ram's times.
const alterRAMRow = "alter-ram: ADD INDEX, innodb_tmpdir in RAM"

func rowIndexOf(name string) int {
	return slices.IndexFunc(tableRows, func(row tableRow) bool { return row.name == name })
}

// paysLine compares tmpfs's figures xs of row, whose cell is tmpfsCell, with another variant's ys.
// A row whose tmpfs runs all failed is a line of its own: the RAM volume filled.
func (r *results) paysLine(row tableRow, tmpfsCell string, xs []float64, other string, ys []float64) (paysLine, bool) {
	l := paysLine{figure: row.name, other: otherLabel(other), tmpfs: tmpfsCell}
	if len(ys) == 0 {
		return l, false
	}
	if len(xs) == 0 {
		if l.tmpfs != "failed (full)" {
			return l, false
		}
		l.ratio, l.verdict = "–", "the RAM volume filled in every run; "+r.cell(other, row)
		return l, true
	}
	c := method.Compare(xs, ys, r.bootstrapSeed())
	if c.Interval == nil {
		l.ratio, l.verdict = "–", "no interval: "+c.Reason
		return l, true
	}
	l.ratio, l.verdict = c.String(), verdictWords(c.Verdict, row.higherIsBetter)
	l.paid = l.verdict == "tmpfs better"
	return l, true
}

// otherLabel says where the other variant keeps tmpdir.
func otherLabel(name string) string {
	switch name {
	case "disk":
		return "disk: tmpdir on the node's disk"
	case volumeVariant:
		return "volume: tmpdir on the data volume"
	case smallPagesVariant:
		return "tmpfs-4k: the RAM volume in the kubelet's 4 KiB pages"
	}
	return name
}

// settingLabel names the conditions of the results: server, where the data lives, the pod's
// memory and buffer pool.
func (r *results) settingLabel() string {
	parts := []string{r.Machine.server(), "node's disk"}
	if v := r.Variants["tmpfs"]; v != nil && v.DataVolume != "" {
		profile, _, _ := strings.Cut(v.DataVolume, " ")
		parts[1] = profile + " volume"
	}
	if r.Settings.MemoryLimit != "" && r.Variants["tmpfs"].MemoryLimitMiB > 0 {
		parts = append(parts, r.Settings.MemoryLimit+" pod")
	} else {
		parts = append(parts, "no memory limit")
	}
	for _, a := range r.Settings.ServerArgs {
		if v, ok := strings.CutPrefix(a, "--innodb-buffer-pool-size="); ok {
			pool := "pool " + v
			if low, high, ok := r.poolFree(); ok {
				pool += fmt.Sprintf(", %.1f–%.1f %% free", low, high)
			}
			parts = append(parts, pool)
		}
	}
	return strings.Join(parts, " · ")
}

// poolFree is the range of the buffer pool's free share at the start of the runs, when every run
// recorded it.
func (r *results) poolFree() (low, high float64, ok bool) {
	var xs []float64
	for _, runs := range r.Runs {
		for _, run := range runs {
			if run.BufferPoolFreePercent == nil {
				return 0, 0, false
			}
			xs = append(xs, *run.BufferPoolFreePercent)
		}
	}
	if len(xs) == 0 {
		return 0, 0, false
	}
	return slices.Min(xs), slices.Max(xs), true
}
