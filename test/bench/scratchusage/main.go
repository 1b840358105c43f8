// Command scratchusage measures what the node agent's scratch-volume sampler costs on a node with
// many database pods: CPU and wall time per sampling round, allocations, and the Go heap the
// sampler holds, at 1, 10, 100 and 300 volumes, beside statfs alone (the floor of a round) and
// the cost of a Prometheus scrape of the figures.
//
// It mounts one real tmpfs per pod, laid out as the kubelet lays out a memory emptyDir, under
// /run/bench-scratchusage, and serves the pods to the sampler twice: through controller-runtime's
// fake client, and through a reader that lists as the agent's informer cache does. The volume
// counts alternate round-robin over the runs and every figure is a median. Everything mounted is
// unmounted at the end, on failure and on Ctrl-C; what a killed run left is unmounted at the next
// start. Results go to results.json and results.png in -out, and a table to stdout. Run as root:
//
//	go run ./test/bench/scratchusage [-counts 1,10,100,300] [-runs 5] [-out bin/bench/scratchusage]
//
// With -replot FILE it measures nothing: it draws the chart of FILE beside it (or in -out) and
// prints the Markdown that docs/benchmarks.md publishes of it.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func main() {
	// Canceling on a signal lets the run unmount its volumes before it exits. A reader of the
	// output that goes away (`| head`) must not kill the run between mount and unmount either: with
	// SIGPIPE ignored, the write fails and the run goes on to write its results.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type config struct {
	counts  []int
	runs    int
	size    resource.Quantity
	measure time.Duration
	out     string
	seed    int64
	replot  string
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("scratchusage-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	counts := fs.String("counts", "1,10,100,300", "comma-separated numbers of volumes (pods) on the node")
	fs.IntVar(&c.runs, "runs", 5, "runs over all the counts; every figure is the median of the runs (at least 3)")
	size := fs.String("size", "16Mi", "size of each tmpfs volume (a Kubernetes quantity)")
	fs.DurationVar(&c.measure, "measure", 100*time.Millisecond, "how long each figure is measured for in each run")
	fs.StringVar(&c.out, "out", "", "output directory for results.json and results.png (default: bin/bench/scratchusage in the repository)")
	fs.StringVar(&c.replot, "replot", "", "draw the chart of an existing results file (to a PNG of its name in -out, default beside it) and print its Markdown for docs/benchmarks.md, instead of measuring; needs no root")
	fs.Int64Var(&c.seed, "seed", method.NewSeed(), "seed of each run's order of the volume counts and of the intervals (recorded in the results)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if c.counts, err = parseCounts(*counts); err != nil {
		return nil, err
	}
	if c.replot != "" {
		return c, nil
	}
	if c.runs < 3 {
		return nil, fmt.Errorf("-runs must be at least 3 for a median to mean something, got %d", c.runs)
	}
	if c.size, err = resource.ParseQuantity(*size); err != nil || c.size.Value() < 1<<20 {
		return nil, fmt.Errorf("-size %q is not a quantity of at least 1Mi", *size)
	}
	if c.measure < 10*time.Millisecond {
		return nil, fmt.Errorf("-measure must be at least 10ms, got %s", c.measure)
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "scratchusage-bench: %v\n", err)
		}
		return 2
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	if cfg.replot != "" {
		png, md, err := replot(cfg.replot, cfg.out)
		if err != nil {
			fmt.Fprintf(stderr, "scratchusage-bench: %v\n", err)
			return 1
		}
		logf("wrote %s", png)
		fmt.Fprint(stdout, md)
		return 0
	}
	r, err := benchmarkOnHost(ctx, cfg, logf)
	if err != nil {
		fmt.Fprintf(stderr, "scratchusage-bench: %v\n", err)
		if errors.Is(err, context.Canceled) {
			return 130
		}
		return 1
	}
	if err := writeOutputs(cfg.out, r, logf); err != nil {
		fmt.Fprintf(stderr, "scratchusage-bench: %v\n", err)
		return 1
	}
	printTable(stdout, r)
	return 0
}

// benchmarkOnHost clears what an earlier run left, measures, and unmounts everything it mounted
// however the measurement ends.
func benchmarkOnHost(ctx context.Context, cfg *config, logf func(string, ...any)) (r *Report, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root to mount the tmpfs volumes")
	}
	unlock, err := lockWorkDir()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, unlock()) }()
	if left, err := readMountsUnder(workDir); err == nil && len(left) > 0 {
		logf("unmounting %d volumes an earlier run left under %s", len(left), workDir)
	}
	if err := clearWorkDir(workDir); err != nil {
		return nil, fmt.Errorf("failed to clear what an earlier run left: %w", err)
	}
	defer func() {
		if cerr := clearWorkDir(workDir); cerr != nil {
			err = errors.Join(err, fmt.Errorf("failed to clean up: %w", cerr))
		}
	}()
	return benchmark(ctx, cfg, logf)
}

func benchmark(ctx context.Context, cfg *config, logf func(string, ...any)) (*Report, error) {
	start := time.Now()
	r := newReport(cfg, start)
	logf("machine: %s; load average %s", machineLine(r.Machine), r.Machine.LoadAvgStart)
	largest := slices.Max(cfg.counts)
	fx, err := newFixture(largest, cfg.size)
	if err != nil {
		return nil, err
	}
	logf("mounted %d tmpfs volumes of %s under %s", largest, cfg.size.String(), workDir)
	// One unrecorded pass at the smallest count fills the process's one-time caches (the JSON
	// type caches of the fake client, the scheme's conversions), which would otherwise be billed
	// to the first heap figure.
	prime := &bench{fx: fx, minTime: cfg.measure / 10, report: &Report{}}
	if err := prime.measureCount(ctx, cfg.counts[0]); err != nil {
		return nil, err
	}
	b := &bench{fx: fx, minTime: cfg.measure, report: r}
	order := method.NewOrder(cfg.seed)
	for run := range cfg.runs {
		for position, n := range method.Shuffled(order, cfg.counts) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			logf("run %d/%d: %d volumes", run+1, cfg.runs, n)
			r.Rounds = append(r.Rounds, Round{Run: run + 1, Position: position + 1, Volumes: n, Conditions: method.Record(versions)})
			if err := b.measureCount(ctx, n); err != nil {
				return nil, err
			}
		}
	}
	r.summarize()
	r.Machine.LoadAvgFinish = loadAverage()
	r.DurationSeconds = time.Since(start).Seconds()
	return r, nil
}

// versions are what the runs record with their conditions: the sampler is this checkout's code,
// built by this Go.
var versions = map[string]string{"go": runtime.Version()}

func newReport(cfg *config, start time.Time) *Report {
	return &Report{
		GeneratedAt: start.UTC().Truncate(time.Second),
		Command:     commandLine(os.Args[1:]),
		Machine:     describeMachine(),
		Settings: Settings{
			VolumeCounts: cfg.counts, Runs: cfg.runs, Seed: cfg.seed, VolumeSize: cfg.size.String(), MeasureSeconds: cfg.measure.Seconds(),
			IntervalSeconds: scratchusage.DefaultInterval.Seconds(), WindowSeconds: scratchusage.DefaultWindow.Seconds(),
			WarmUpRounds: warmUpRounds, KubeletRoot: workDir, GOMAXPROCS: runtime.GOMAXPROCS(0),
			Pods: fmt.Sprintf("one running MariaDB StatefulSet pod per volume, over %d namespaces, all on node %s, each injected by ScratchVolume %q", namespaces, nodeName, scratchVolume),
			Fill: "every fifth volume (0, 5, 10…) holds a quarter of its size; volume 2 is full; the others are empty",
		},
		Method:    methodText,
		Workloads: workloadDescriptions(),
	}
}

func writeOutputs(out string, r *Report, logf func(string, ...any)) error {
	if out == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return err
		}
		out = filepath.Join(root, "bin", "bench", "scratchusage")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	jsonPath, pngPath := filepath.Join(out, "results.json"), filepath.Join(out, "results.png")
	if err := writeJSON(jsonPath, r); err != nil {
		return err
	}
	var png bytes.Buffer
	if err := costChart(r).WritePNG(&png); err != nil {
		return err
	}
	if err := os.WriteFile(pngPath, png.Bytes(), 0o644); err != nil {
		return err
	}
	logf("wrote %s and %s", jsonPath, pngPath)
	return nil
}

// commandLine is how the benchmark was started, as a person would type it: `go run` hides the
// path of the binary it builds.
func commandLine(args []string) string {
	cmd := "go run ./test/bench/scratchusage"
	if len(args) > 0 {
		cmd += " " + strings.Join(args, " ")
	}
	return cmd
}
