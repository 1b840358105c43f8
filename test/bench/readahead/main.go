// Command readahead measures where block-device read-ahead pays on a cloud-shaped volume, for the
// reads a database host does, and where it cannot matter or costs.
//
// It opens one gp3-shaped volume (test/cloudvolume: 125 MiB/s, 3000 IOPS, 1 ms per request,
// ext4), runs MariaDB through the real-server harness (test/mariadb) with its data directory on
// it, and sets the volume device's read-ahead with the node agent's own package
// (node-agent/readahead), as a ReadAheadPolicy with mode Set would, to each value of -values in
// turn; the device's original value is put back at the end. The workloads:
//
//   - backup: the whole of a data file (-file-mib) read sequentially in 1 MiB reads;
//   - log: a log file (-log-mib) read sequentially in 8 KiB reads;
//   - scan-fsync and scan-odirect: a full scan of an InnoDB table (-table-mib) by a freshly
//     started server, with innodb_flush_method=fsync (through the page cache) and with the
//     default O_DIRECT (around it), their runs interleaved;
//   - random and random-mmap: 16 KiB reads at random offsets of the data file, with pread and
//     through a shared mapping.
//
// Before every run the file's page cache is written back and dropped (fsync, then
// posix_fadvise POSIX_FADV_DONTNEED, then mincore checks that nothing is left). Each workload runs
// in rounds (-rounds, -scan-rounds), every read-ahead value once per round in an order drawn anew
// for each round from -seed (test/bench/method), and every run records the machine's conditions.
// Each value is compared with the kernel's default, 128 KiB, by the ratio of medians with a
// bootstrap interval.
//
// It writes readahead-<profile>.json and .png to -out and prints the Markdown that
// docs/benchmarks.md publishes. Run as root:
//
//	go run ./test/bench/readahead [-rounds 5] [-scan-rounds 5] [-out bin/bench/readahead]
//
// With -replot FILE it measures nothing: it draws the chart of FILE beside it (or in -out) and
// prints the Markdown.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/mariadb"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func main() {
	mariadb.RunSandboxIfRequested()
	runMmapChildIfRequested()
	// Canceling on a signal lets the run stop the server, restore the read-ahead and close the
	// volume before it exits.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// baselineKiB is the kernel's default read-ahead (VM_READAHEAD_PAGES), which every other value is
// compared with.
const baselineKiB = 128

type config struct {
	values        []int64
	rounds        int
	scanRounds    int
	fileMiB       int64
	logMiB        int64
	tableMiB      int64
	randomReads   int
	randomWorkers int
	volumeGiB     int64
	bufferPool    string
	memoryLimit   resource.Quantity
	workloads     []string
	seed          int64
	out           string
	replot        string
}

// selected says whether the configuration runs the workload.
func (c *config) selected(name string) bool {
	return len(c.workloads) == 0 || slices.Contains(c.workloads, name)
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("readahead-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	values := fs.String("values", "128,1024,4096,131072", "read-ahead values to compare, in KiB; 128 (the kernel's default) is the baseline and must be one of them")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds of each file workload (at least 3)")
	fs.IntVar(&c.scanRounds, "scan-rounds", 5, "rounds of the server's scans (at least 3)")
	fs.Int64Var(&c.fileMiB, "file-mib", 1024, "size of the data file the backup and random workloads read, in MiB")
	fs.Int64Var(&c.logMiB, "log-mib", 512, "size of the log file the log workload reads, in MiB")
	fs.Int64Var(&c.tableMiB, "table-mib", 600, "MiB of 1 KiB rows in the scanned table (its file must come to at least 512 MiB)")
	fs.IntVar(&c.randomReads, "random-reads", 4000, "16 KiB reads of each random run")
	fs.IntVar(&c.randomWorkers, "random-workers", 4, "threads of the random workloads")
	fs.Int64Var(&c.volumeGiB, "volume-gib", 4, "size of the cloud-shaped volume in GiB (sparse: it takes what is written)")
	fs.StringVar(&c.bufferPool, "buffer-pool", "256M", "innodb_buffer_pool_size, below the table's size so that a scan reads the file")
	c.memoryLimit = resource.MustParse("2Gi")
	fs.Func("memory-limit", "the server container's limits.memory, its memory cgroup's limit (default 2Gi)", func(s string) (err error) {
		c.memoryLimit, err = resource.ParseQuantity(s)
		return err
	})
	workloads := fs.String("workloads", "", "comma-separated workloads to run (default all: "+strings.Join(workloadNames, ", ")+")")
	fs.Int64Var(&c.seed, "seed", method.NewSeed(), "seed of each round's order and of the intervals (recorded in the results)")
	fs.StringVar(&c.out, "out", "", "output directory (default: bin/bench/readahead in the repository)")
	fs.StringVar(&c.replot, "replot", "", "draw the chart of an existing results file (beside it, or in -out) and print its Markdown, instead of measuring; needs no root")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.replot != "" {
		return c, nil
	}
	var err error
	if c.values, err = parseValues(*values); err != nil {
		return nil, err
	}
	if c.workloads, err = parseWorkloads(*workloads); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *config) validate() error {
	switch {
	case c.rounds < method.MinRuns || c.scanRounds < method.MinRuns:
		return fmt.Errorf("-rounds and -scan-rounds must be at least %d for an interval, got %d and %d", method.MinRuns, c.rounds, c.scanRounds)
	case c.fileMiB < 64 || c.logMiB < 64:
		return fmt.Errorf("-file-mib and -log-mib must be at least 64, got %d and %d", c.fileMiB, c.logMiB)
	case c.tableMiB*1024 < minTableBytes>>10:
		return fmt.Errorf("-table-mib must be at least %d, got %d", minTableBytes>>20, c.tableMiB)
	case c.randomReads < 1 || c.randomWorkers < 1:
		return fmt.Errorf("-random-reads and -random-workers must be positive, got %d and %d", c.randomReads, c.randomWorkers)
	case (c.fileMiB+c.logMiB+c.tableMiB*2)>>10 >= c.volumeGiB:
		return fmt.Errorf("-volume-gib %d leaves no room for the files and the table (and its redo log)", c.volumeGiB)
	}
	return nil
}

// parseValues reads a comma-separated list of read-ahead values in KiB, which must hold the
// baseline.
func parseValues(s string) ([]int64, error) {
	var out []int64
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || v < 4 || v > 1<<20 {
			return nil, fmt.Errorf("-values: %q is not a read-ahead from 4 to 1048576 KiB", f)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("-values: %d KiB is given twice", v)
		}
		out = append(out, v)
	}
	if !slices.Contains(out, baselineKiB) {
		return nil, fmt.Errorf("-values must hold %d, the kernel's default, which the others are compared with", baselineKiB)
	}
	slices.Sort(out)
	return out, nil
}

// parseWorkloads reads a comma-separated list of workload names; empty means all.
func parseWorkloads(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		if !slices.Contains(workloadNames, name) {
			return nil, fmt.Errorf("-workloads: %q is not one of %s", name, strings.Join(workloadNames, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "readahead-bench: %v\n", err)
		}
		return 2
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	if cfg.replot != "" {
		err = replot(cfg.replot, cfg.out, stdout, logf)
	} else {
		err = measureAndWrite(ctx, cfg, stdout, logf)
	}
	if err != nil {
		fmt.Fprintf(stderr, "readahead-bench: %v\n", err)
		if errors.Is(err, context.Canceled) {
			return 130
		}
		return 1
	}
	return 0
}

func measureAndWrite(ctx context.Context, cfg *config, stdout io.Writer, logf func(string, ...any)) error {
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	r, err := measureOnHost(ctx, cfg, logf)
	if err != nil {
		return err
	}
	out := cfg.out
	if out == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return err
		}
		out = filepath.Join(root, "bin", "bench", "readahead")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(out, "readahead-"+cloudvolume.GP3.Name)
	if err := writeJSON(base+".json", r); err != nil {
		return err
	}
	if err := writeChart(base+".png", r); err != nil {
		return err
	}
	logf("wrote %s.json and %s.png", base, base)
	_, err = io.WriteString(stdout, r.markdown())
	return err
}

// replot draws the chart of a results file to a PNG of its name in out (default: beside it) and
// prints its Markdown.
func replot(path, out string, stdout io.Writer, logf func(string, ...any)) error {
	r, err := readReport(path)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Dir(path)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	png := filepath.Join(out, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))+".png")
	if err := writeChart(png, r); err != nil {
		return err
	}
	logf("wrote %s", png)
	_, err = io.WriteString(stdout, r.markdown())
	return err
}
