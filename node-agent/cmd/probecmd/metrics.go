package probecmd

import (
	"math"
	"strconv"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// metrics lists the table's rows: provenance first, then the workloads in the order they run. Block
// sizes go in the labels (they are the same for every target); amounts that a time cap can shorten
// stay in the cells.
func metrics(targets []probe.TargetResult) []metric {
	sizes := churnSizes(targets)
	ms := make([]metric, 0, 16+2*len(sizes))
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
