package main

import (
	"fmt"
	"strings"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// markdown is what docs/benchmarks.md publishes of the results: the setting, the table of medians
// and ratios, the conditions and every run.
func (r *Report) markdown() string {
	var b strings.Builder
	r.writeSetting(&b)
	r.writeTable(&b)
	fmt.Fprintf(&b, "\nThroughput is the bytes the workload asked for (for a scan, what InnoDB read from its files) over the time of its reads (of the query, for a scan); device read and requests are the volume's own counters. "+
		"Ratios: the median at a value over the median at %s, with a %.0f %% percentile bootstrap interval over the runs (%d resamples, seed %d); "+
		"the verdict names a difference only where the interval excludes 1. Conditions: %s.\n",
		kibText(r.Settings.BaselineKiB), 100*method.Level, method.Resamples, r.Settings.Seed, method.Summary(r.conditions()))
	r.writeRuns(&b)
	return b.String()
}

// writeSetting says when, where and how the figures were measured.
func (r *Report) writeSetting(b *strings.Builder) {
	d := r.Device
	fmt.Fprintf(b, "Measured %s, `%s` (%.0f minutes in all). Device: %s, a loop device (%s) with ext4, %d GiB; its largest request (max_sectors_kb) %d KiB; its own read-ahead, %d KiB, restored after. ",
		r.GeneratedAt.Format("2006-01-02"), r.Command, r.DurationSeconds/60, d.Profile, d.Name, d.SizeBytes>>30, d.MaxSectorsKiB, d.OriginalReadAheadKiB)
	if s := r.Server; s != nil {
		fmt.Fprintf(b, "Server: MariaDB %s (`%s`, a %s memory limit); the table: %d rows, a file of %s. ",
			s.Version, strings.Join(s.Args, " "), s.MemoryLimit, s.Rows, mib(float64(s.TableFileBytes)))
	}
	fmt.Fprintf(b, "Rounds: %d of each file workload, %d of the scans. Page cache: %s.\n\n", r.Settings.Rounds, r.Settings.ScanRounds, r.Settings.CacheDrop)
	b.WriteString("| workload | stands for | file | what a run does |\n|---|---|---:|---|\n")
	for _, w := range r.orderedWorkloads() {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", w.Title, w.StandsFor, mib(float64(w.FileBytes)), w.How)
	}
	b.WriteString("\n")
}

// writeTable writes the medians of every workload at every value beside their ratios to the
// baseline's.
func (r *Report) writeTable(b *strings.Builder) {
	base := kibText(r.Settings.BaselineKiB)
	fmt.Fprintf(b, "| workload | read-ahead | runs | time | throughput | vs %s (95 %% interval) | verdict | device read | vs %s (95 %% interval) | verdict | device requests | page cache after |\n", base, base)
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|\n")
	for _, w := range r.orderedWorkloads() {
		for _, kib := range r.Settings.ReadAheadKiB {
			s := r.summary(w.Name, kib)
			if s == nil {
				continue
			}
			speed, speedVerdict := r.comparisonCells(w.Name, kib, figureThroughput)
			bytes, bytesVerdict := r.comparisonCells(w.Name, kib, figureDeviceBytes)
			fmt.Fprintf(b, "| %s | %s | %d | %.2f s | %s/s | %s | %s | %s | %s | %s | %.0f | %s |\n",
				w.Title, kibText(kib), s.Runs, s.Seconds, mib(s.ReadBytesPerSecond), speed, speedVerdict,
				mib(s.DeviceReadBytes), bytes, bytesVerdict, s.DeviceReads, mib(s.CachedAfterBytes))
		}
	}
}

// comparisonCells are the ratio and verdict cells of a figure at a value against the baseline.
func (r *Report) comparisonCells(workload string, kib int64, fig string) (string, string) {
	if kib == r.Settings.BaselineKiB {
		return "–", "baseline"
	}
	c := r.comparison(workload, kib, fig)
	if c == nil {
		return "–", "–"
	}
	if c.Interval == nil {
		return "–", "no interval: " + c.Reason
	}
	return c.String(), verdictWords(c.Verdict, fig)
}

// verdictWords says a verdict in a reader's words.
func verdictWords(v method.Verdict, fig string) string {
	switch {
	case v == method.Higher && fig == figureThroughput:
		return "faster"
	case v == method.Lower && fig == figureThroughput:
		return "slower"
	case v == method.Higher:
		return "reads more"
	case v == method.Lower:
		return "reads less"
	}
	return string(v)
}

// writeRuns tabulates every run in the order measured.
func (r *Report) writeRuns(b *strings.Builder) {
	b.WriteString("\n<details><summary>Every run</summary>\n\n")
	b.WriteString("| # | workload | round | place in round | read-ahead | time | throughput | device read | device requests | cached before | cached after | InnoDB read | load average (1 min) |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	titles := map[string]string{}
	for _, w := range r.Workloads {
		titles[w.Name] = w.Title
	}
	for i, run := range r.Runs {
		innodb := "–"
		if run.InnoDBReadBytes > 0 {
			innodb = mib(float64(run.InnoDBReadBytes))
		}
		fmt.Fprintf(b, "| %d | %s | %d | %d | %s | %.2f s | %s/s | %s | %d | %s | %s | %s | %.2f |\n",
			i+1, titles[run.Workload], run.Round, run.Position, kibText(run.ReadAheadKiB), run.Seconds, mib(run.ReadBytesPerSecond),
			mib(float64(run.DeviceReadBytes)), run.DeviceReads, mib(float64(run.CachedBeforeBytes)), mib(float64(run.CachedAfterBytes)),
			innodb, run.Conditions.LoadAverage1m)
	}
	b.WriteString("\n</details>\n")
}

// orderedWorkloads are the workloads that ran, in the tables' order.
func (r *Report) orderedWorkloads() []Workload {
	var out []Workload
	for _, name := range workloadNames {
		for _, w := range r.Workloads {
			if w.Name == name {
				out = append(out, w)
			}
		}
	}
	return out
}

// mib writes bytes in MiB with one decimal.
func mib(bytes float64) string { return fmt.Sprintf("%.1f MiB", bytes/(1<<20)) }
