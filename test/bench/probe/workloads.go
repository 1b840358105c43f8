package main

import (
	"path/filepath"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Metric IDs.
const (
	mSeqBuffered  = "seq-buffered"
	mSeqFdatasync = "seq-fdatasync"
	mDirect       = "direct-write"
	mColdRead     = "cold-read"
	mFsyncP50     = "fdatasync-p50"
	mFsyncP99     = "fdatasync-p99"
	mDevice       = "device-read"
)

// Units of the raw figures.
const (
	unitBytes  = "B/s"
	unitFiles  = "files/s"
	unitMicros = "us"
)

// buildSeries lists the comparisons of one target. Every reference gets the parameters of
// probe.DefaultOptions, so that each figure checks what the agent actually reports. device is the
// loop device to read raw, or "" when there is none.
func buildSeries(t *Target, device string) []*Series {
	d := probe.DefaultOptions()
	work := t.RefDir
	onTmpfs := t.Kind == probe.KindTmpfs
	seqFile, directFile, readFile, fsyncFile := filepath.Join(work, "seq"), filepath.Join(work, "direct"),
		filepath.Join(work, "read"), filepath.Join(work, "fdatasync")
	seqBuffered := Metric{ID: mSeqBuffered, Label: "sequential write " + size(d.SeqWriteBytes) + " bs " + size(d.SeqWriteBlockBytes) + ", buffered", Unit: unitBytes, Class: Throughput}
	seqSynced := Metric{ID: mSeqFdatasync, Label: "sequential write " + size(d.SeqWriteBytes) + " bs " + size(d.SeqWriteBlockBytes) + " + fdatasync", Unit: unitBytes, Class: Throughput}
	direct := Metric{ID: mDirect, Label: "O_DIRECT write " + size(d.DirectWriteBytes) + " bs " + size(d.DirectWriteBlockBytes), Unit: unitBytes, Class: Throughput}
	// --scramble_buffers=0: by default fio rewrites part of every block before each write so that
	// each one differs; over a 128 MiB block that is measurable CPU work inside fio's timing, which
	// the probe (and dd) do not do.
	seqJob := func(extra ...string) []string {
		return append([]string{"--rw=write", "--bs=" + size(d.SeqWriteBlockBytes), "--size=" + size(d.SeqWriteBytes),
			"--fallocate=none", "--scramble_buffers=0"}, extra...)
	}
	directJob := []string{"--rw=write", "--direct=1", "--bs=" + size(d.DirectWriteBlockBytes), "--size=" + size(d.DirectWriteBytes),
		"--fallocate=none", "--scramble_buffers=0", "--runtime=" + seconds(d.DirectWriteMaxDuration)}
	seqCount := itoa(d.SeqWriteBytes / d.SeqWriteBlockBytes)
	directCount := itoa(d.DirectWriteBytes / d.DirectWriteBlockBytes)
	ss := []*Series{
		{ID: "seq-write/fio", Workload: "sequential write", Metrics: []Metric{seqBuffered, seqSynced}, Ours: oursSequential(t), Warm: true,
			References: []Runner{
				fioRunner(seqFile, seqJob(), []string{mSeqBuffered}, fioWrite(mSeqBuffered)),
				fioRunner(seqFile, seqJob("--end_fsync=1"), []string{mSeqFdatasync}, fioWrite(mSeqFdatasync)),
			}},
		{ID: "seq-write/dd", Workload: "sequential write", Metrics: []Metric{seqBuffered, seqSynced}, Ours: oursSequential(t), Warm: true,
			References: []Runner{
				ddRunner(seqFile, mSeqBuffered, "bs="+size(d.SeqWriteBlockBytes), "count="+seqCount),
				ddRunner(seqFile, mSeqFdatasync, "bs="+size(d.SeqWriteBlockBytes), "count="+seqCount, "conv=fdatasync"),
			}},
		{ID: "direct-write/fio", Workload: "O_DIRECT write", Metrics: []Metric{direct}, Ours: oursDirect(t), Short: true,
			References: []Runner{fioRunner(directFile, directJob, []string{mDirect}, fioWrite(mDirect))}},
		{ID: "direct-write/dd", Workload: "O_DIRECT write", Metrics: []Metric{direct}, Ours: oursDirect(t), Short: true,
			References: []Runner{ddRunner(directFile, mDirect, "bs="+size(d.DirectWriteBlockBytes), "count="+directCount, "oflag=direct")}},
		{ID: "cold-read/fio", Workload: "cold sequential read", Ours: oursColdRead(t), Warm: true,
			Metrics: []Metric{{ID: mColdRead, Label: "cold read " + size(d.SeqWriteBytes) + " bs " + size(d.ColdReadBlockBytes), Unit: unitBytes, Class: Throughput}},
			References: []Runner{fioRunner(readFile, []string{"--rw=read", "--bs=" + size(d.ColdReadBlockBytes), "--size=" + size(d.SeqWriteBytes),
				"--invalidate=1", "--fadvise_hint=0", "--runtime=" + seconds(d.ColdReadMaxDuration)}, []string{mColdRead}, fioRead(mColdRead))},
			Note: coldReadNote(t)},
	}
	readBuf := max(d.ColdReadBlockBytes, d.DeviceReadBlockBytes)
	for _, c := range d.Churn {
		metrics := []Metric{
			{ID: churnMetric(c, "create"), Label: churnLabel(c) + ": create+write+close", Unit: unitFiles, Class: Throughput},
			{ID: churnMetric(c, "read-unlink"), Label: churnLabel(c) + ": open+read+close+unlink", Unit: unitFiles, Class: Throughput},
		}
		// A pass takes tens of milliseconds; only files adding up to the size of the sequential
		// write allocate enough to need warm memory.
		warm := c.FileBytes*int64(c.Files) >= d.SeqWriteBytes/4
		ss = append(ss,
			&Series{ID: "churn-" + itoa(c.FileBytes) + "/go-syscall-loop", Workload: "small-file churn", Ours: oursChurn(t, c),
				Metrics: metrics, References: []Runner{syscallLoopRunner(work, c, d.ChurnMaxDuration, readBuf)}, Warm: warm, Short: true},
			&Series{ID: "churn-" + itoa(c.FileBytes) + "/go-os-loop", Workload: "small-file churn", Ours: oursChurn(t, c),
				Metrics: metrics, References: []Runner{osLoopRunner(work, c, d.ChurnMaxDuration, readBuf)}, Warm: warm, Short: true},
		)
	}
	// fdatasync on tmpfs is a no-op: fio times it at a fraction of a microsecond, below the
	// probe's resolution, so a ratio of the two would compare nothing with nothing.
	if !onTmpfs {
		ss = append(ss, &Series{
			ID: "fdatasync/fio", Workload: "fdatasync latency", Ours: oursFdatasync(t), Short: true,
			Metrics: []Metric{
				{ID: mFsyncP50, Label: "fdatasync after " + itoa(d.FsyncWriteBytes) + "-byte writes, p50", Unit: unitMicros, Class: Latency, Resolution: 1},
				{ID: mFsyncP99, Label: "fdatasync after " + itoa(d.FsyncWriteBytes) + "-byte writes, p99", Unit: unitMicros, Class: Latency, Resolution: 1},
			},
			References: []Runner{fioRunner(fsyncFile, []string{"--rw=write", "--bs=" + itoa(d.FsyncWriteBytes), "--size=" + itoa(d.FsyncWriteBytes*int64(d.FsyncSamples)),
				"--fdatasync=1", "--fallocate=native", "--runtime=" + seconds(d.FsyncMaxDuration), "--percentile_list=50:99"},
				[]string{mFsyncP50, mFsyncP99}, fioSync)},
		})
	}
	if device != "" {
		dev := Metric{ID: mDevice, Label: "device read bs " + size(d.DeviceReadBlockBytes) + " (loop over a file)", Unit: unitBytes, Class: Throughput}
		ss = append(ss,
			&Series{ID: "device-read/hdparm", Workload: "raw device read", Metrics: []Metric{dev}, Ours: withHdparmPreamble(oursDevice(t, device)), Warm: true,
				References: []Runner{hdparmRunner(device)}},
			&Series{ID: "device-read/fio", Workload: "raw device read", Metrics: []Metric{dev}, Ours: oursDevice(t, device), Warm: true,
				References: []Runner{fioRunner(device, []string{"--readonly", "--rw=read", "--bs=" + size(d.DeviceReadBlockBytes),
					"--invalidate=1", "--fadvise_hint=0", "--runtime=" + seconds(d.DeviceReadDuration)}, []string{mDevice}, fioRead(mDevice))}},
		)
	}
	for _, s := range ss {
		s.Target = t
		// On tmpfs every run times a tenth of a second or less, and its pages are single pages
		// that free page reporting (which reports 2 MiB blocks) leaves alone: 256 MiB written
		// after three idle seconds ran as fast as after a warm-up.
		if onTmpfs {
			s.Warm, s.Short = false, true
		}
	}
	return ss
}

func coldReadNote(t *Target) string {
	if t.Kind == probe.KindTmpfs {
		return "tmpfs cannot drop its pages: both sides read memory"
	}
	return ""
}
