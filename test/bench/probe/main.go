// Command probe is the accuracy and cost benchmark of the node agent's I/O probes.
//
// On a tmpfs and on a disk directory it runs each probe workload and the tools people use to
// measure the same thing by hand (fio and dd; hdparm for the raw device read, on a loop device over
// a file on the disk; plain Go loops for small-file churn, which fio cannot express), alternately
// and with the parameters of probe.DefaultOptions, and judges the ratio of the medians by its 95 %
// bootstrap interval: a pass when the whole interval lies within ±10% of 1 for throughput (±20%
// for fdatasync latency), a failure when it lies wholly outside, inconclusive otherwise. It then
// measures what the agent itself costs: CPU and memory of `node-agent probe` with default
// options, and of `node-agent run` while it idles against a real API server. Results go to results.json and results.png in --out, and a table to
// stdout. Run it as root to get a private tmpfs and the raw device comparisons:
//
//	go run ./test/bench/probe [--tmpfs DIR] [--disk DIR] [--runs 5] [--out bin/bench/probe]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func main() {
	// Canceling on a signal lets the run unmount its tmpfs and detach its loop devices.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type config struct {
	tmpfs, disk, out string
	runs, costRuns   int
	only             string
	cost             bool
	idle             time.Duration
	strict           bool
	warm             int64
	raiseOrder       bool
	replot           string
	seed             int64
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("probe-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.tmpfs, "tmpfs", "", "tmpfs directory (default: a private tmpfs mounted under tmp/ when root, else a directory in /dev/shm)")
	fs.StringVar(&c.disk, "disk", "", "disk directory, not RAM-backed (default: tmp/bench-probe/disk in the repository)")
	fs.IntVar(&c.runs, "runs", 5, "rounds of each comparison (each round runs the probe once, then each reference once); at least 3")
	fs.StringVar(&c.out, "out", "", "output directory for results.json and results.png (default: bin/bench/probe in the repository)")
	fs.StringVar(&c.only, "only", "", "comma-separated substrings of the series to run (for example fdatasync,cold-read); empty runs all")
	fs.BoolVar(&c.cost, "cost", true, "also measure the agent's own CPU and memory")
	fs.IntVar(&c.costRuns, "cost-runs", 3, "runs of node-agent probe for the cost figures")
	fs.DurationVar(&c.idle, "idle", 20*time.Second, "how long to watch node-agent run idle after its first run")
	c.warm = defaultWarm()
	fs.Func("warm-memory", "memory to fault in and free before every run, untimed, so that no run allocates from memory the hypervisor reclaimed: bytes or a quantity, 0 for none (default: 4Gi, or a quarter of the available memory if less)", func(s string) error {
		if q, err := resource.ParseQuantity(s); err == nil && q.IsZero() {
			c.warm = 0
			return nil
		}
		n, err := cli.ParseBytes(s)
		c.warm = n
		return err
	})
	fs.BoolVar(&c.raiseOrder, "raise-reporting-order", true, "as root on a machine with free page reporting, raise page_reporting_order to the largest order while the benchmark runs (restored at the end)")
	fs.StringVar(&c.replot, "replot", "", "draw the chart (to a PNG of the file's name in --out, default beside it) and print the table of an existing results file instead of measuring")
	fs.Int64Var(&c.seed, "seed", method.NewSeed(), "seed of each round's order of the probe and the references, and of the intervals (recorded in the results)")
	fs.BoolVar(&c.strict, "strict", false, "exit with status 1 unless every judged comparison passes (a failed, inconclusive or unmeasured one does not)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.runs < 3 {
		return nil, fmt.Errorf("--runs must be at least 3 for a median to mean something, got %d", c.runs)
	}
	if c.costRuns < 1 {
		return nil, fmt.Errorf("--cost-runs must be at least 1, got %d", c.costRuns)
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "probe-bench: %v\n", err)
		}
		return 2
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	var cl Cleanups
	defer func() {
		if err := cl.Run(); err != nil {
			logf("clean-up: %v", err)
		}
	}()
	var report *Report
	if cfg.replot != "" {
		report, err = replot(cfg, logf)
	} else {
		report, err = benchmark(ctx, cfg, &cl, logf)
	}
	if err != nil {
		fmt.Fprintf(stderr, "probe-bench: %v\n", err)
		return 1
	}
	printTable(stdout, report)
	if cfg.strict && len(unsettled(report.Comparisons)) > 0 {
		return 1
	}
	return 0
}

// unsettled are the judged comparisons that did not pass: failed, inconclusive or not measured.
// --strict exits with status 1 when there is one.
func unsettled(cs []Comparison) []Comparison {
	var out []Comparison
	for _, c := range cs {
		if Judged(c.Verdict) && !Passed(c.Verdict) {
			out = append(out, c)
		}
	}
	return out
}

func benchmark(ctx context.Context, cfg *config, cl *Cleanups, logf func(string, ...any)) (*Report, error) {
	start := time.Now()
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	if cfg.out == "" {
		cfg.out = filepath.Join(root, "bin", "bench", "probe")
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	for _, tool := range []string{"fio", "dd"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is not installed (apt-get install fio hdparm): %w", tool, err)
		}
	}
	tmpfs, disk, err := prepareTargets(cfg, root, cl)
	if err != nil {
		return nil, err
	}
	r := &Report{
		GeneratedAt: start.UTC(), Command: commandLine(os.Args[1:]), Machine: describeMachine(ctx), Rounds: cfg.runs, Seed: cfg.seed, Method: methodText,
		Tolerances: map[string]float64{string(Throughput): Throughput.Tolerance(), string(Latency): Latency.Tolerance()},
	}
	r.Machine.WarmMemoryBytes = cfg.warm
	if cfg.raiseOrder && r.Machine.PageReporting.Active && os.Geteuid() == 0 {
		if r.Machine.PageReporting.OrderDuringRun, err = raiseReportingOrder(cl); err != nil {
			return nil, err
		}
	}
	logf("machine: %s, %d cores, %s, kernel %s; load average %s; free page reporting %t (order during the run: %s), warming %s before runs that fill the page cache",
		r.Machine.CPUModel, r.Machine.Cores, formatBytes(r.Machine.MemoryBytes), r.Machine.Kernel, r.Machine.LoadAvgStart,
		r.Machine.PageReporting.Active, orUnchanged(r.Machine.PageReporting.OrderDuringRun), formatBytes(cfg.warm))
	// The raw device read is a disk measurement (hdparm -t on the disk): a loop device over a tmpfs
	// file would measure the loop driver copying memory, so only the disk target gets one.
	diskDevice, order := "", method.NewOrder(cfg.seed)
	needLoop := cfg.cost || selected(cfg.only, "device-read/hdparm") || selected(cfg.only, "device-read/fio")
	for _, t := range []*Target{tmpfs, disk} {
		info, device := describeTarget(t), ""
		switch {
		case t != disk || !needLoop:
		case os.Geteuid() == 0:
			loop, err := attachLoop(ctx, t, cl)
			if err != nil {
				return nil, fmt.Errorf("failed to set up a loop device on %s: %w", t.Path, err)
			}
			info.Loop, device, diskDevice = loop, loop.Device, loop.Device
		default:
			r.Errors = append(r.Errors, "raw device reads not compared: loop devices and BLKFLSBUF need root")
		}
		r.Targets = append(r.Targets, info)
		logf("target %s: %s (%s%s)", t.Name, t.Path, info.Provenance.FilesystemType, deviceSuffix(info))
		for _, s := range buildSeries(t, device) {
			if !selected(cfg.only, s.ID) {
				continue
			}
			res := runSeries(ctx, s, cfg.runs, order, cfg.warm, r.Machine.Tools, logf)
			if res.Err != nil {
				r.Errors = append(r.Errors, fmt.Sprintf("%s on %s: %v", s.ID, t.Name, res.Err))
			}
			r.Comparisons = append(r.Comparisons, comparisons(res)...)
		}
	}
	if cfg.cost && ctx.Err() == nil {
		measureCost(ctx, cfg, root, r, agentTargetArgs(tmpfs, disk, diskDevice), logf)
	}
	r.Machine.LoadAvgFinish = loadAverage()
	r.DurationSeconds = time.Since(start).Seconds()
	return r, writeOutputs(cfg.out, r, logf)
}

// replot reads a results file, judges it again (see readResults) and draws its chart to a PNG of
// the same name in --out (default: beside it), leaving the JSON as it is.
func replot(cfg *config, logf func(string, ...any)) (*Report, error) {
	r, err := readResults(cfg.replot)
	if err != nil {
		return nil, err
	}
	if cfg.out == "" {
		cfg.out = filepath.Dir(cfg.replot)
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	pngPath := filepath.Join(cfg.out, strings.TrimSuffix(filepath.Base(cfg.replot), filepath.Ext(cfg.replot))+".png")
	return r, writeChart(pngPath, r, logf)
}

func prepareTargets(cfg *config, root string, cl *Cleanups) (tmpfs, disk *Target, err error) {
	tmpfsDir, err := prepareTmpfs(cfg.tmpfs, root, cl)
	if err != nil {
		return nil, nil, err
	}
	diskDir, err := prepareDisk(cfg.disk, root, cl)
	if err != nil {
		return nil, nil, err
	}
	if tmpfs, err = newTarget("tmpfs", tmpfsDir, cl); err != nil {
		return nil, nil, err
	}
	if disk, err = newTarget("disk", diskDir, cl); err != nil {
		return nil, nil, err
	}
	return tmpfs, disk, nil
}

func measureCost(ctx context.Context, cfg *config, root string, r *Report, targetArgs []string, logf func(string, ...any)) {
	logf("building the node agent")
	bin, err := buildAgent(ctx, root, cfg.out)
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
		return
	}
	logf("measuring node-agent probe")
	pc, err := measureProbeCost(ctx, bin, targetArgs, cfg.costRuns, logf)
	r.ProbeCost = pc
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	logf("measuring node-agent run")
	idle := measureIdle(ctx, bin, cfg.out, targetArgs, cfg.idle, logf)
	r.IdleCost = &idle
	if !idle.Measured {
		logf("  idle not measured: %s", idle.Reason)
	}
}

func writeOutputs(out string, r *Report, logf func(string, ...any)) error {
	jsonPath := filepath.Join(out, "results.json")
	if err := writeJSON(jsonPath, r); err != nil {
		return err
	}
	logf("wrote %s", jsonPath)
	return writeChart(filepath.Join(out, "results.png"), r, logf)
}

// writeChart draws the results' chart to pngPath; results without comparisons have none.
func writeChart(pngPath string, r *Report, logf func(string, ...any)) error {
	ch := accuracyChart(r)
	if len(ch.Panels) == 0 {
		logf("no comparisons, so no chart")
		return nil
	}
	var png bytes.Buffer
	if err := ch.WritePNG(&png); err != nil {
		return err
	}
	if err := os.WriteFile(pngPath, png.Bytes(), 0o644); err != nil {
		return err
	}
	logf("wrote %s", pngPath)
	return nil
}

// commandLine is how the benchmark was started, as a person would type it: `go run` hides the
// path of the binary it builds, which nobody could run again.
func commandLine(args []string) string {
	cmd := "go run ./test/bench/probe"
	if len(args) > 0 {
		cmd += " " + quoteArgs(args)
	}
	if os.Getenv("KUBEBUILDER_ASSETS") != "" {
		cmd = "KUBEBUILDER_ASSETS=" + os.Getenv("KUBEBUILDER_ASSETS") + " " + cmd
	}
	return cmd
}

func selected(only, id string) bool {
	if only == "" {
		return true
	}
	for _, s := range strings.Split(only, ",") {
		if s = strings.TrimSpace(s); s != "" && strings.Contains(id, s) {
			return true
		}
	}
	return false
}

func deviceSuffix(info TargetInfo) string {
	s := ""
	if info.Provenance.Device != "" {
		s += " on " + info.Provenance.Device
		if info.DeviceDriver != "" {
			s += " (" + info.DeviceDriver + ")"
		}
	}
	if info.Loop != nil {
		s += fmt.Sprintf("; raw reads from %s over %s, direct I/O %t", info.Loop.Device, info.Loop.BackingFile, info.Loop.DirectIO)
	}
	return s
}

func orUnchanged(s string) string {
	if s == "" {
		return "unchanged"
	}
	return s
}
