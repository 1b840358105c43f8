package probecmd

import (
	"math"
	"strconv"

	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
)

// metrics lists the table's rows: provenance first, then the workloads in the order they run. Block
// sizes go in the labels (they are the same for every target); amounts that a time cap can shorten
// stay in the cells.
func metrics(targets []probe.TargetResult) []metric {
	sizes := churnSizes(targets)
	ms := make([]metric, 0, 20+2*len(sizes))
	ms = append(ms, []metric{
		{label: "path", value: text(func(t *probe.TargetResult) string { return t.Path })},
		{label: "filesystem", value: text(func(t *probe.TargetResult) string { return t.Provenance.FilesystemType })},
		{label: "device", value: text(func(t *probe.TargetResult) string { return t.Provenance.Device })},
		{label: "rotational", value: text(rotationalCell)},
		{label: "scheduler", value: text(func(t *probe.TargetResult) string { return t.Provenance.Scheduler })},
		{label: "read-ahead", value: text(readAheadCell)},
	}...)
	ms = append(ms, sequentialMetrics(targets)...)
	for _, size := range sizes {
		ms = append(ms,
			metric{label: formatSize(size) + " files: create", value: churnRate(size, false)},
			metric{label: formatSize(size) + " files: read+unlink", value: churnRate(size, true)})
	}
	ms = append(ms, tempFileMetrics(targets)...)
	ms = append(ms,
		metric{label: "fdatasync" + fsyncLabel(targets) + ": p50", value: fsyncLatency(false), syncs: true},
		metric{label: "fdatasync" + fsyncLabel(targets) + ": p99", value: fsyncLatency(true), syncs: true},
		metric{label: "device read" + blockLabel(targets, deviceRead), value: throughput(deviceRead)},
	)
	return ms
}

func sequentialMetrics(targets []probe.TargetResult) []metric {
	label := "sequential write" + sequentialLabel(targets)
	return []metric{
		{label: label + ", buffered", value: seqWrite(false)},
		{label: label + " + fdatasync", value: seqWrite(true), syncs: true},
		{label: "O_DIRECT write" + blockLabel(targets, directWrite), value: throughput(directWrite)},
		{label: "cold read" + blockLabel(targets, coldRead), value: throughput(coldRead)},
	}
}

func sequentialLabel(targets []probe.TargetResult) string {
	for i := range targets {
		if w := targets[i].SequentialWrite; w != nil {
			return " " + formatSize(w.Bytes) + " (bs " + formatSize(w.BlockSizeBytes) + ")"
		}
	}
	return ""
}

func directWrite(t *probe.TargetResult) *probe.ThroughputResult { return t.DirectWrite }
func coldRead(t *probe.TargetResult) *probe.ThroughputResult    { return t.ColdRead }
func deviceRead(t *probe.TargetResult) *probe.ThroughputResult  { return t.DeviceRead }

func blockLabel(targets []probe.TargetResult, get func(t *probe.TargetResult) *probe.ThroughputResult) string {
	for i := range targets {
		if r := get(&targets[i]); r != nil && r.BlockSizeBytes > 0 {
			return " (bs " + formatSize(r.BlockSizeBytes) + ")"
		}
	}
	return ""
}

func fsyncLabel(targets []probe.TargetResult) string {
	for i := range targets {
		if f := targets[i].Fdatasync; f != nil {
			return " (" + formatSize(f.WriteSizeBytes) + " writes)"
		}
	}
	return ""
}

// text makes a descriptive row; its figure is NaN so that it gets no ratio.
func text(f func(t *probe.TargetResult) string) func(t *probe.TargetResult) (string, float64) {
	return func(t *probe.TargetResult) (string, float64) { return f(t), math.NaN() }
}

func rotationalCell(t *probe.TargetResult) string {
	if r := t.Provenance.Rotational; r != nil {
		return strconv.FormatBool(*r)
	}
	return ""
}

func readAheadCell(t *probe.TargetResult) string {
	if ra := t.Provenance.ReadAheadKiB; ra != nil {
		return strconv.FormatInt(*ra, 10) + " KiB"
	}
	return ""
}

func seqWrite(synced bool) func(t *probe.TargetResult) (string, float64) {
	return func(t *probe.TargetResult) (string, float64) {
		w := t.SequentialWrite
		if w == nil {
			return "", 0
		}
		rate := w.BufferedBytesPerSecond
		if synced {
			rate = w.FdatasyncBytesPerSecond
		}
		return megabytesPerSecond(rate), float64(rate)
	}
}

// throughput shows a rate with the amount moved, and marks a figure that carries a note (a cold read
// that was not cold) with an asterisk pointing to the notes under the table.
func throughput(get func(t *probe.TargetResult) *probe.ThroughputResult) func(t *probe.TargetResult) (string, float64) {
	return func(t *probe.TargetResult) (string, float64) {
		r := get(t)
		switch {
		case r == nil:
			return "", 0
		case r.Unsupported != "":
			return "unsupported *", 0
		}
		cell := megabytesPerSecond(r.BytesPerSecond) + " (" + formatSize(r.Bytes) + ")"
		if r.Note != "" && r != t.DeviceRead {
			cell += " *"
		}
		return cell, float64(r.BytesPerSecond)
	}
}

func churnRate(size int64, readUnlink bool) func(t *probe.TargetResult) (string, float64) {
	return func(t *probe.TargetResult) (string, float64) {
		for _, c := range t.FileChurn {
			if c.FileSizeBytes != size {
				continue
			}
			rate := c.CreateFilesPerSecond
			if readUnlink {
				rate = c.ReadUnlinkFilesPerSecond
			}
			return strconv.FormatInt(rate, 10) + " files/s (" + strconv.Itoa(int(c.Files)) + ")", float64(rate)
		}
		return "", 0
	}
}

// tempFiles picks one of a target's two temporary-file variants.
type tempFiles func(t *probe.TargetResult) []probe.TempFileResult

func asMounted(t *probe.TargetResult) []probe.TempFileResult  { return t.TempFiles }
func largePages(t *probe.TargetResult) []probe.TempFileResult { return t.LargePageTempFiles }

// tempFileMetrics are the temporary-file rows: per size, the target as it is mounted, then the
// probe's own tmpfs with large pages (tmpfs targets only), whose ratio divides it by the disk's as
// mounted; then, for several sizes, both over every size, the NodeIOProfile's two ratios.
func tempFileMetrics(targets []probe.TargetResult) []metric {
	sizes := tempFileSizes(targets)
	ms := make([]metric, 0, 2*len(sizes)+2)
	for _, size := range sizes {
		label := "temp files " + formatSize(size)
		ms = append(ms,
			metric{label: label + tempFileBlockLabel(targets), value: tempFileRate(asMounted, size), ratio: tempFileRatio(asMounted, size)},
			metric{label: label + ", huge=" + tmpfspages.WithinSize, value: tempFileRate(largePages, size), ratio: tempFileRatio(largePages, size)})
	}
	if len(sizes) > 1 {
		ms = append(ms,
			metric{label: "temp files, all sizes", value: tempFileTotal(asMounted), ratio: tempFileRatio(asMounted, 0)},
			metric{label: "temp files, all sizes, huge=" + tmpfspages.WithinSize, value: tempFileTotal(largePages), ratio: tempFileRatio(largePages, 0)})
	}
	return ms
}

func tempFileBlockLabel(targets []probe.TargetResult) string {
	for i := range targets {
		for _, r := range targets[i].TempFiles {
			if r.BlockSizeBytes > 0 {
				return " (bs " + formatSize(r.BlockSizeBytes) + ")"
			}
		}
	}
	return ""
}

func tempFileRate(get tempFiles, size int64) func(t *probe.TargetResult) (string, float64) {
	return func(t *probe.TargetResult) (string, float64) {
		for _, r := range get(t) {
			switch {
			case r.FileSizeBytes != size:
				continue
			case r.Unsupported != "":
				return "unsupported *", 0
			}
			return megabytesPerSecond(r.BytesPerSecond) + " (" + strconv.Itoa(int(r.Files)) + ")", float64(r.BytesPerSecond)
		}
		return "", 0
	}
}

func tempFileTotal(get tempFiles) func(t *probe.TargetResult) (string, float64) {
	return func(t *probe.TargetResult) (string, float64) {
		rate := probe.TempFileRate(get(t))
		if rate == 0 {
			return "", 0
		}
		return megabytesPerSecond(rate), float64(rate)
	}
}

// tempFileRatio divides the tmpfs's variant by the disk's temporary files as mounted, for one size
// or, with size 0, over every size both measured, as the NodeIOProfile's comparison does.
func tempFileRatio(get tempFiles, size int64) func(tmpfs, disk *probe.TargetResult) string {
	return func(tmpfs, disk *probe.TargetResult) string {
		return probe.TempFileRatio(ofSize(get(tmpfs), size), ofSize(disk.TempFiles, size))
	}
}

func ofSize(results []probe.TempFileResult, size int64) []probe.TempFileResult {
	if size == 0 {
		return results
	}
	var out []probe.TempFileResult
	for _, r := range results {
		if r.FileSizeBytes == size {
			out = append(out, r)
		}
	}
	return out
}

func fsyncLatency(p99 bool) func(t *probe.TargetResult) (string, float64) {
	return func(t *probe.TargetResult) (string, float64) {
		f := t.Fdatasync
		if f == nil || f.Samples == 0 {
			return "", 0
		}
		v := f.P50Microseconds
		if p99 {
			v = f.P99Microseconds
		}
		return strconv.FormatInt(v, 10) + " µs (" + strconv.Itoa(int(f.Samples)) + ")", float64(v)
	}
}

// megabytesPerSecond uses decimal megabytes, as dd and hdparm print them.
func megabytesPerSecond(bps int64) string {
	return strconv.FormatFloat(float64(bps)/1e6, 'f', 1, 64) + " MB/s"
}
