package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// isolated returns options under which one probe run does one workload at the size of the
// defaults and every other workload at a token size. probe.Run always runs every workload; each
// is timed on its own, so the token ones cost milliseconds outside the figure under test.
func isolated() probe.Options {
	o := probe.DefaultOptions()
	o.SeqWriteBytes, o.SeqWriteBlockBytes = 4096, 4096
	o.ColdReadMaxDuration = time.Nanosecond
	o.DirectWriteBytes, o.DirectWriteBlockBytes = 4096, 4096
	o.Churn = []probe.ChurnSize{{FileBytes: 1, Files: 1}}
	o.TempFiles = []probe.TempFileSize{{FileBytes: 4096, Files: 1}}
	o.FsyncSamples = 1
	return o
}

// oursRunner runs the probe library in this process on t with opts and reads the figures off the
// target's result with extract.
func oursRunner(t *Target, device string, opts probe.Options, what string, extract func(*probe.TargetResult) (Figures, error)) Runner {
	return Runner{
		Tool:    "probe",
		Command: fmt.Sprintf("probe.Run(target %s, %s; every other workload at a token size)", t.Path, what),
		Run: func(ctx context.Context) (Figures, error) {
			res, err := probe.Run(ctx, []probe.Target{{Name: t.Name, Path: t.Path, Device: device}}, opts)
			if err != nil {
				return nil, err
			}
			if err := res.Err(); err != nil {
				return nil, err
			}
			return extract(&res.Targets[0])
		},
	}
}

func oursSequential(t *Target) Runner {
	o := isolated()
	d := probe.DefaultOptions()
	o.SeqWriteBytes, o.SeqWriteBlockBytes = d.SeqWriteBytes, d.SeqWriteBlockBytes
	what := fmt.Sprintf("SeqWriteBytes=%s SeqWriteBlockBytes=%s", size(o.SeqWriteBytes), size(o.SeqWriteBlockBytes))
	return oursRunner(t, "", o, what, func(tr *probe.TargetResult) (Figures, error) {
		w := tr.SequentialWrite
		if w == nil {
			return nil, errors.New("the probe returned no sequential write")
		}
		return Figures{mSeqBuffered: float64(w.BufferedBytesPerSecond), mSeqFdatasync: float64(w.FdatasyncBytesPerSecond)}, nil
	})
}

func oursColdRead(t *Target) Runner {
	o := isolated()
	d := probe.DefaultOptions()
	o.SeqWriteBytes, o.SeqWriteBlockBytes = d.SeqWriteBytes, d.SeqWriteBlockBytes
	o.ColdReadBlockBytes, o.ColdReadMaxDuration = d.ColdReadBlockBytes, d.ColdReadMaxDuration
	what := fmt.Sprintf("SeqWriteBytes=%s ColdReadBlockBytes=%s ColdReadMaxDuration=%s",
		size(o.SeqWriteBytes), size(o.ColdReadBlockBytes), o.ColdReadMaxDuration)
	return oursRunner(t, "", o, what, func(tr *probe.TargetResult) (Figures, error) {
		return throughputFigure(tr.ColdRead, mColdRead, "cold read")
	})
}

func oursDirect(t *Target) Runner {
	o := isolated()
	d := probe.DefaultOptions()
	o.DirectWriteBytes, o.DirectWriteBlockBytes, o.DirectWriteMaxDuration = d.DirectWriteBytes, d.DirectWriteBlockBytes, d.DirectWriteMaxDuration
	what := fmt.Sprintf("DirectWriteBytes=%s DirectWriteBlockBytes=%s DirectWriteMaxDuration=%s",
		size(o.DirectWriteBytes), size(o.DirectWriteBlockBytes), o.DirectWriteMaxDuration)
	return oursRunner(t, "", o, what, func(tr *probe.TargetResult) (Figures, error) {
		return throughputFigure(tr.DirectWrite, mDirect, "O_DIRECT write")
	})
}

func oursChurn(t *Target, c probe.ChurnSize) Runner {
	o := isolated()
	o.Churn = []probe.ChurnSize{c}
	what := fmt.Sprintf("Churn=[%d files of %d bytes] ChurnMaxDuration=%s", c.Files, c.FileBytes, o.ChurnMaxDuration)
	return oursRunner(t, "", o, what, func(tr *probe.TargetResult) (Figures, error) {
		if len(tr.FileChurn) == 0 {
			return nil, errors.New("the probe returned no file churn")
		}
		r := tr.FileChurn[0]
		return Figures{
			churnMetric(c, "create"):      float64(r.CreateFilesPerSecond),
			churnMetric(c, "read-unlink"): float64(r.ReadUnlinkFilesPerSecond),
		}, nil
	})
}

func oursFdatasync(t *Target) Runner {
	o := isolated()
	d := probe.DefaultOptions()
	o.FsyncSamples = d.FsyncSamples
	what := fmt.Sprintf("FsyncWriteBytes=%d FsyncSamples=%d FsyncMaxDuration=%s", o.FsyncWriteBytes, o.FsyncSamples, o.FsyncMaxDuration)
	return oursRunner(t, "", o, what, func(tr *probe.TargetResult) (Figures, error) {
		f := tr.Fdatasync
		if f == nil || f.Samples == 0 {
			return nil, errors.New("the probe returned no fdatasync latency")
		}
		return Figures{mFsyncP50: float64(f.P50Microseconds), mFsyncP99: float64(f.P99Microseconds)}, nil
	})
}

func oursDevice(t *Target, device string) Runner {
	o := isolated()
	what := fmt.Sprintf("Device=%s DeviceReadBlockBytes=%s DeviceReadMaxBytes=%s DeviceReadDuration=%s",
		device, size(o.DeviceReadBlockBytes), size(o.DeviceReadMaxBytes), o.DeviceReadDuration)
	return oursRunner(t, device, o, what, func(tr *probe.TargetResult) (Figures, error) {
		return throughputFigure(tr.DeviceRead, mDevice, "device read")
	})
}

// hdparmPause is what `hdparm -t` does before it starts its clock: sync(), then sleep 3 s.
const hdparmPause = 3 * time.Second

// withHdparmPreamble gives ours the same untimed sync and pause that hdparm takes before timing.
// On a virtual machine the pause matters: after seconds of idle the first I/O that hands work to
// another thread (the loop driver's worker) waits for a sleeping virtual CPU, so an idle start
// reads measurably slower than a busy one, whoever reads.
func withHdparmPreamble(r Runner) Runner {
	run := r.Run
	r.Command = "sync; sleep " + seconds(hdparmPause) + " (as hdparm does, untimed); " + r.Command
	r.Run = func(ctx context.Context) (Figures, error) {
		unix.Sync()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(hdparmPause):
		}
		return run(ctx)
	}
	return r
}

func throughputFigure(r *probe.ThroughputResult, id, name string) (Figures, error) {
	switch {
	case r == nil:
		return nil, fmt.Errorf("the probe returned no %s", name)
	case r.Unsupported != "":
		return nil, fmt.Errorf("the probe could not measure the %s: %s", name, r.Unsupported)
	}
	return Figures{id: float64(r.BytesPerSecond)}, nil
}

// size writes a byte count the way fio and dd accept it: with a binary suffix when it divides.
func size(n int64) string {
	switch {
	case n >= probe.GiB && n%probe.GiB == 0:
		return fmt.Sprintf("%dG", n/probe.GiB)
	case n >= probe.MiB && n%probe.MiB == 0:
		return fmt.Sprintf("%dM", n/probe.MiB)
	case n >= probe.KiB && n%probe.KiB == 0:
		return fmt.Sprintf("%dk", n/probe.KiB)
	}
	return strconv.FormatInt(n, 10)
}

// churnMetric is the metric ID of one pass of one churn size, for example "churn-5000-create".
func churnMetric(c probe.ChurnSize, pass string) string {
	return fmt.Sprintf("churn-%d-%s", c.FileBytes, pass)
}

// churnLabel names a churn size for people: "5000-byte files", "5 MB files".
func churnLabel(c probe.ChurnSize) string {
	if c.FileBytes >= 1_000_000 && c.FileBytes%1_000_000 == 0 {
		return fmt.Sprintf("%d MB files", c.FileBytes/1_000_000)
	}
	return fmt.Sprintf("%d-byte files", c.FileBytes)
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
