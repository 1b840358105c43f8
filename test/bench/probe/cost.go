package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// sampleInterval is how often a measured process's /proc entries are read.
const sampleInterval = 100 * time.Millisecond

// Sample is one reading of a process's /proc entries.
type Sample struct {
	AtSeconds  float64 `json:"atSeconds"`
	CPUSeconds float64 `json:"cpuSeconds"`
	RSSBytes   int64   `json:"rssBytes"`
	HWMBytes   int64   `json:"peakRssBytes"`
}

// sampler reads a process's CPU time and memory every sampleInterval until stopped.
type sampler struct {
	pid   int
	start time.Time
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	samples []Sample
}

func startSampler(pid int) *sampler {
	s := &sampler{pid: pid, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(sampleInterval)
	defer t.Stop()
	for {
		s.take()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// take records one sample; a process that has just exited gives none, which is not an error.
func (s *sampler) take() {
	at := time.Since(s.start).Seconds()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		return
	}
	cpu, err := ParseProcStatCPU(string(stat))
	if err != nil {
		return
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		return
	}
	rss, hwm, err := ParseProcStatusMemory(bytes.NewReader(status))
	if err != nil {
		return
	}
	s.mu.Lock()
	s.samples = append(s.samples, Sample{AtSeconds: at, CPUSeconds: cpu, RSSBytes: rss, HWMBytes: hwm})
	s.mu.Unlock()
}

func (s *sampler) snapshot() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

func (s *sampler) finish() []Sample {
	close(s.stop)
	<-s.done
	return s.snapshot()
}

// ProbeCost is the cost of `node-agent probe` with default options, run as its own process.
type ProbeCost struct {
	Command string     `json:"command"`
	Runs    []ProbeRun `json:"runs"`
	// MedianCPUSeconds is user+system CPU time of one whole run, process start to exit.
	MedianCPUSeconds  float64 `json:"medianCpuSecondsPerRun"`
	MedianWallSeconds float64 `json:"medianWallSecondsPerRun"`
	// MedianCPUPercent is CPU time over wall time: 100 means one core busy for the whole run.
	MedianCPUPercent float64 `json:"medianCpuPercentWhileProbing"`
	// PeakRSSBytes is the largest peak resident set of the runs (the kernel's high-water mark).
	PeakRSSBytes int64 `json:"peakRssBytes"`
}

// ProbeRun is one measured run.
type ProbeRun struct {
	WallSeconds     float64  `json:"wallSeconds"`
	CPUSeconds      float64  `json:"cpuSeconds"`
	PeakRSSBytes    int64    `json:"peakRssBytes"`
	ProbeDurationMs int64    `json:"probeDurationMilliseconds"`
	Samples         []Sample `json:"samples"`
}

func buildAgent(ctx context.Context, root, out string) (string, error) {
	bin := filepath.Join(out, "node-agent")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./node-agent")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("failed to build the node agent: %w: %s", err, b)
	}
	return bin, nil
}

// agentTargetArgs are the targets as the DaemonSet gives them: a tmpfs and a disk, with the disk's
// block device when there is one to read.
func agentTargetArgs(tmpfs, disk *Target, device string) []string {
	args := []string{"--target", "tmpfs=" + tmpfs.Path, "--target", "disk=" + disk.Path}
	if device != "" {
		args = append(args, "--device", "disk="+device)
	}
	return args
}

// measureProbeCost runs `node-agent probe` runs times and records what each run cost.
func measureProbeCost(ctx context.Context, bin string, targetArgs []string, runs int, log func(string, ...any)) (*ProbeCost, error) {
	args := append(append([]string{"probe"}, targetArgs...), "-o", "json")
	pc := &ProbeCost{Command: quoteArgs(append([]string{bin}, args...))}
	for i := range runs {
		r, err := probeOnce(ctx, bin, args)
		if err != nil {
			return pc, fmt.Errorf("run %d of %s: %w", i+1, pc.Command, err)
		}
		log("  node-agent probe run %d/%d: %.1fs wall, %.2f CPU s, peak RSS %s", i+1, runs, r.WallSeconds, r.CPUSeconds, formatBytes(r.PeakRSSBytes))
		pc.Runs = append(pc.Runs, r)
		// The next run should not pay for this one's write-back.
		unix.Sync()
	}
	var cpu, wall, pct []float64
	for _, r := range pc.Runs {
		cpu, wall, pct = append(cpu, r.CPUSeconds), append(wall, r.WallSeconds), append(pct, 100*r.CPUSeconds/r.WallSeconds)
		pc.PeakRSSBytes = max(pc.PeakRSSBytes, r.PeakRSSBytes)
	}
	pc.MedianCPUSeconds, pc.MedianWallSeconds, pc.MedianCPUPercent = Median(cpu), Median(wall), Median(pct)
	return pc, nil
}

func probeOnce(ctx context.Context, bin string, args []string) (ProbeRun, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return ProbeRun{}, err
	}
	s := startSampler(cmd.Process.Pid)
	err := cmd.Wait()
	wall := time.Since(start)
	samples := s.finish()
	if err != nil {
		return ProbeRun{}, fmt.Errorf("%w: %s", err, errOut.String())
	}
	// The kernel's CPU accounting at exit is exact. Its peak RSS (ru_maxrss) is not the agent's
	// own: Go starts a child with vfork semantics, so until exec the child runs in this process's
	// memory, and exec carries that memory's high-water mark into the child's maxrss, which after
	// a 4 GiB warm-up is 4 GiB. The peak comes from the agent's own VmHWM instead, which is
	// monotonic, so the last sample (at most sampleInterval before exit) holds it.
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return ProbeRun{}, errors.New("no resource usage for the finished process")
	}
	peak := peakHWM(samples)
	if peak == 0 {
		return ProbeRun{}, errors.New("the agent exited before its memory could be sampled; its peak RSS is unknown")
	}
	var res probe.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return ProbeRun{}, fmt.Errorf("failed to parse the probe's JSON: %w", err)
	}
	return ProbeRun{
		WallSeconds:     wall.Seconds(),
		CPUSeconds:      time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(),
		PeakRSSBytes:    peak,
		ProbeDurationMs: res.DurationMilliseconds,
		Samples:         samples,
	}, nil
}

func peakHWM(samples []Sample) int64 {
	var peak int64
	for _, s := range samples {
		peak = max(peak, s.HWMBytes)
	}
	return peak
}

// IdleCost is the cost of `node-agent run` against a real API server: during its first run
// (start-up included) and while it waits for the next one.
type IdleCost struct {
	Measured bool   `json:"measured"`
	Reason   string `json:"reason,omitempty"`
	Command  string `json:"command,omitempty"`
	// FirstRunSeconds is from process start until the NodeIOProfile showed the first run's result.
	FirstRunSeconds      float64 `json:"firstRunSeconds,omitempty"`
	FirstRunCPUSeconds   float64 `json:"firstRunCpuSeconds,omitempty"`
	FirstRunPeakRSSBytes int64   `json:"firstRunPeakRssBytes,omitempty"`
	// IdleSeconds is the window after the first run over which the idle figures are taken.
	IdleSeconds    float64 `json:"idleSeconds,omitempty"`
	IdleCPUSeconds float64 `json:"idleCpuSeconds,omitempty"`
	// IdleCPUPercent is of one core.
	IdleCPUPercent     float64  `json:"idleCpuPercent,omitempty"`
	IdleMedianRSSBytes int64    `json:"idleMedianRssBytes,omitempty"`
	IdleMaxRSSBytes    int64    `json:"idleMaxRssBytes,omitempty"`
	Samples            []Sample `json:"samples,omitempty"`
}

// SummarizeIdle computes the idle figures from the samples taken after the first run ended at
// firstRunAt (seconds since the process started).
func SummarizeIdle(samples []Sample, firstRunAt float64) (IdleCost, error) {
	var before, idle []Sample
	for _, s := range samples {
		if s.AtSeconds <= firstRunAt {
			before = append(before, s)
		} else {
			idle = append(idle, s)
		}
	}
	if len(before) == 0 || len(idle) < 2 {
		return IdleCost{}, fmt.Errorf("too few samples (%d before the first run ended, %d after) to measure", len(before), len(idle))
	}
	last, first := idle[len(idle)-1], before[len(before)-1]
	c := IdleCost{
		Measured:             true,
		FirstRunSeconds:      firstRunAt,
		FirstRunCPUSeconds:   first.CPUSeconds,
		FirstRunPeakRSSBytes: first.HWMBytes,
		IdleSeconds:          last.AtSeconds - first.AtSeconds,
		IdleCPUSeconds:       last.CPUSeconds - first.CPUSeconds,
	}
	c.IdleCPUPercent = 100 * c.IdleCPUSeconds / c.IdleSeconds
	rss := make([]float64, 0, len(idle))
	for _, s := range idle {
		rss = append(rss, float64(s.RSSBytes))
		c.IdleMaxRSSBytes = max(c.IdleMaxRSSBytes, s.RSSBytes)
	}
	c.IdleMedianRSSBytes = int64(Median(rss))
	return c, nil
}

func formatBytes(n int64) string {
	switch {
	case n >= probe.GiB:
		return strconv.FormatFloat(float64(n)/float64(probe.GiB), 'f', 2, 64) + " GiB"
	case n >= probe.MiB:
		return strconv.FormatFloat(float64(n)/float64(probe.MiB), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/float64(probe.KiB), 'f', 0, 64) + " KiB"
}
