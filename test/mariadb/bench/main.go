// Command bench measures what a ScratchVolume buys a MariaDB or MySQL server (-server): the same StatefulSet run twice
// by the real-server harness, once injected by the controller's builder (tmpdir on a tmpfs) and once
// as written (tmpdir in the container's /tmp, on this machine's disk, the filesystem of the data
// volume), with the same server settings. Each run is repeated and the medians compared:
//
//   - temp: mysqlslap with many concurrent clients running queries that need an on-disk internal
//     temporary table and a merging filesort;
//   - bigsort: one query ordering more rows than fit in memory (-bigsort-mib), a filesort that
//     merges through temporary files larger than what the kernel lets stay dirty;
//   - alter: ALTER TABLE … ADD INDEX on a table whose index keys total -alter-mib, an online index
//     build that sorts through files in innodb_tmpdir. The operator leaves innodb_tmpdir on the
//     data volume, so the injected variant runs it there; it runs it a second time with
//     innodb_tmpdir on the RAM volume (alter-ram) to show what keeping it on disk costs;
//   - mixed: sysbench oltp_write_only, whose commits fsync the redo log, while a few clients run
//     the same temporary-table queries; transactions per second and p95/p99 latency.
//
// The database container runs in a memory cgroup limited to its limits.memory (-memory-limit), as
// under a kubelet, with -buffer-pool of it for InnoDB, and the report gives its peak. The RAM
// volume (-scratch-size) must fit beside the buffer pool, as the controller checks. With -volume,
// each pod's data volume is a cloud-shaped block device (test/cloudvolume) of that profile, gp3 for
// example, and a third variant keeps tmpdir on it, so that temporary files share its bandwidth,
// IOPS and latency with the redo log's fsyncs.
//
// It writes <out>/mariadb-tmpdir.json and <out>/mariadb-tmpdir.png (mariadb-cloudvolume.* with
// -volume), and prints a Markdown section for
// docs/benchmarks.md on standard output. It needs root, mariadb-server, mariadb-client (mysqlslap) and
// sysbench.
//
// With -replot FILE it measures nothing and needs none of that: it reads a results file, draws its
// chart to a PNG of the same name in -out (default: beside FILE) and prints the Markdown section.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/mariadb"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// config is what the flags set.
type config struct {
	out             string
	runs            int
	rows            int
	clients         int
	queries         int
	mixedDuration   time.Duration
	sysbenchThreads int
	tempClients     int
	replot          string
	server          string
	seed            int64
	// sessionTablespaces is the injected variant's spec.mysql.sessionTempTablespaces.
	sessionTablespaces string
	volume             string
	volumeSize         int64
	bigSortMiB         int
	alterMiB           int
	memoryLimit        resource.Quantity
	bufferPool         resource.Quantity
	scratchSize        resource.Quantity
	// The reports workload (0 duration: skipped).
	reportsDuration time.Duration
	reportClients   int
	reportMiB       int
	reportHold      time.Duration
	// sysbenchTableSize is the rows of each of sysbench's tables; variantList and workloadList, when
	// set, keep only the variants and workloads they name.
	sysbenchTableSize int
	extraServerArgs   []string
	variantList       []string
	workloadList      []string
}

func main() {
	mariadb.RunSandboxIfRequested()
	var cfg config
	flag.StringVar(&cfg.out, "out", filepath.Join("tmp", "bench"), "directory for the JSON results and the PNG chart")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of each workload per variant (the median is reported)")
	flag.IntVar(&cfg.rows, "rows", 10000, "rows in the table the temporary-table queries read")
	flag.IntVar(&cfg.clients, "clients", 50, "concurrent mysqlslap clients")
	flag.IntVar(&cfg.queries, "queries", 200, "queries per mysqlslap run, shared by all clients")
	flag.DurationVar(&cfg.mixedDuration, "mixed-duration", 15*time.Second, "length of each mixed run")
	flag.IntVar(&cfg.sysbenchThreads, "sysbench-threads", 8, "sysbench threads in the mixed runs")
	flag.IntVar(&cfg.tempClients, "temp-clients", 8, "clients running temporary-table queries during the mixed runs")
	flag.StringVar(&cfg.volume, "volume", "none", "put each pod's data volume on a cloud-shaped volume of this profile: "+volumeChoices())
	flag.Int64Var(&cfg.volumeSize, "volume-size-gib", 8, "size of each cloud-shaped volume, in GiB (sparse: it takes what is written)")
	flag.IntVar(&cfg.bigSortMiB, "bigsort-mib", 768, "MiB of rows the single large sort orders, through temporary files (0: skip it)")
	flag.IntVar(&cfg.alterMiB, "alter-mib", 256, "MiB of index keys the ALTER TABLE … ADD INDEX sorts, through files in innodb_tmpdir (0: skip it)")
	cfg.memoryLimit, cfg.bufferPool, cfg.scratchSize = resource.MustParse("4Gi"), resource.MustParse("2560Mi"), resource.MustParse("1Gi")
	flag.Func("memory-limit", "the database container's limits.memory, its memory cgroup's limit (default 4Gi)", quantityFlag(&cfg.memoryLimit))
	flag.Func("buffer-pool", "innodb_buffer_pool_size of every variant (default 2560Mi)", quantityFlag(&cfg.bufferPool))
	flag.Func("scratch-size", "size of the injected RAM volume; the controller requires limit ≥ size + buffer pool + 256Mi (default 1Gi)", quantityFlag(&cfg.scratchSize))
	flag.StringVar(&cfg.server, "server", "machine", "the database server: this machine's MariaDB packages (machine), or a database test image unpacked by make images-databases (mariadb-sid: MariaDB 11.8, mysql-sid: MySQL 9.7)")
	flag.StringVar(&cfg.sessionTablespaces, "session-tablespaces", "", "the injected variant's spec.mysql.sessionTempTablespaces on MySQL: Memory, Disk, or empty for the controller's default (Memory)")
	flag.Int64Var(&cfg.seed, "seed", method.NewSeed(), "seed of the variants' order in each round and of the intervals (recorded in the results)")
	flag.DurationVar(&cfg.reportsDuration, "reports-duration", 0, "length of each reports run: report jobs staging -report-mib in a temporary table and reading it for -report-hold, beside sysbench (0: skip it)")
	flag.IntVar(&cfg.reportClients, "report-clients", 2, "report jobs running at once in the reports runs")
	flag.IntVar(&cfg.reportMiB, "report-mib", 160, "MiB each report job stages in its temporary table")
	flag.DurationVar(&cfg.reportHold, "report-hold", 45*time.Second, "how long a report job reads its staged table before dropping it: longer than vm.dirty_expire_centisecs lets writeback reach it")
	flag.IntVar(&cfg.sysbenchTableSize, "sysbench-table-size", 10000, "rows in each of sysbench's 4 tables: about 4 × 250 bytes × this much data, larger than the buffer pool to keep it full")
	flag.Func("server-args", "space-separated server options every variant gets besides the benchmark's own (e.g. --temptable-max-ram=128M for a small MySQL pod)", func(s string) error {
		cfg.extraServerArgs = strings.Fields(s)
		return nil
	})
	flag.Func("variants", "comma-separated variants to run (default: all of tmpfs (the RAM volume with large pages), tmpfs-4k (with the kubelet's 4 KiB pages), disk and, with -volume, volume)", listFlag(&cfg.variantList))
	flag.Func("workloads", "comma-separated workloads to run (default: all that the sizes enable: temp, bigsort, alter, alter-ram, mixed, reports)", listFlag(&cfg.workloadList))
	flag.StringVar(&cfg.replot, "replot", "", "draw the chart of an existing results file instead of measuring, to a PNG of its name (in -out, default beside it)")
	flag.Parse()
	var err error
	if cfg.replot != "" {
		if !flagSet("out") {
			cfg.out = filepath.Dir(cfg.replot)
		}
		err = replot(cfg, os.Stdout)
	} else {
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	if cfg.runs < 1 {
		return errors.New("-runs must be at least 1")
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root to mount tmpfs volumes and run the server in its own namespaces: run it as root")
	}
	for _, tool := range []string{"mysqlslap", "sysbench"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed: apt-get install mariadb-client sysbench", tool)
		}
	}
	if _, useVolume, err := profileFor(cfg.volume); err != nil {
		return err
	} else if useVolume {
		// Before the host: a killed run's volumes are mounted in its host directory, which the
		// host's own sweep leaves alone while anything is mounted there.
		if err := cloudvolume.Recover(logf); err != nil {
			return err
		}
	}
	h, err := newHost(cfg.server)
	if err != nil {
		return err
	}
	var variants []*variant
	defer func() {
		if err := shutdown(h, variants); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		}
	}()
	// An interrupted run stops where it is and still shuts everything down: the pods, their cloud
	// volumes (loop devices and FUSE mounts) and memory cgroups outlive a killed process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := startVariants(ctx, h, cfg, &variants); err != nil {
		return err
	}
	ws, err := selectWorkloads(workloads(cfg), cfg.workloadList)
	if err != nil {
		return err
	}
	if err := warmUp(ctx, cfg, variants, ws); err != nil {
		return err
	}
	res := newResults(h, cfg, variants)
	res.Settings.Seed = cfg.seed
	order := method.NewOrder(cfg.seed)
	if cfg.server != "machine" {
		res.Machine.Image = cfg.server
	}
	versions := toolVersions(ctx, res.Machine.server())
	for _, w := range ws {
		if err := runAlternating(ctx, cfg, order, versions, variants, res, w); err != nil {
			return err
		}
	}
	for _, v := range variants {
		if err := v.recordUsage(); err != nil {
			return err
		}
	}
	res.summarize()
	return res.write(cfg.out, os.Stdout)
}

// newHost is the harness's host for the server -server names.
func newHost(server string) (*mariadb.Host, error) {
	if server == "machine" {
		return mariadb.NewHost("")
	}
	root, err := testenv.DatabaseImageRoot(server)
	if err != nil {
		return nil, err
	}
	s, err := mariadb.ImageServer(root)
	if err != nil {
		return nil, err
	}
	return mariadb.NewHostFor(s, "")
}

// workload is one measurement: run on each variant it applies to.
type workload struct {
	name string
	run  func(*variant, context.Context, config) (runResult, error)
	// only, when set, names the one variant the workload runs on.
	only string
}

// workloads lists what a run with cfg measures, in order.
func workloads(cfg config) []workload {
	ws := []workload{{name: "temp", run: (*variant).temp}}
	if cfg.bigSortMiB > 0 {
		ws = append(ws, workload{name: "bigsort", run: (*variant).bigSort})
	}
	if cfg.alterMiB > 0 {
		ws = append(ws,
			workload{name: "alter", run: (*variant).alter},
			workload{name: alterRAM, run: (*variant).alterInRAM, only: "tmpfs"})
	}
	ws = append(ws, workload{name: "mixed", run: (*variant).mixed})
	if cfg.reportsDuration > 0 {
		ws = append(ws, workload{name: reportsWorkload, run: (*variant).reports})
	}
	return ws
}

// warmUp runs short versions of the measured workloads once on every variant: the first runs
// after loading find cold caches and a purge backlog, and are not measured.
func warmUp(ctx context.Context, cfg config, variants []*variant, ws []workload) error {
	warm := cfg
	warm.queries, warm.mixedDuration = max(cfg.queries/4, cfg.clients), 5*time.Second
	warm.reportsDuration, warm.reportHold = 20*time.Second, 5*time.Second
	for _, v := range variants {
		for _, w := range ws {
			if w.name != "temp" && w.name != "mixed" && w.name != reportsWorkload {
				continue
			}
			r, err := w.run(v, ctx, warm)
			switch {
			case err != nil:
				return fmt.Errorf("%s %s warm-up: %w", v.name, w.name, err)
			case r.Failed != "":
				return fmt.Errorf("%s %s warm-up filled its filesystem: %s", v.name, w.name, r.Failed)
			}
		}
	}
	return nil
}

// runAlternating runs w cfg.runs times on every variant it applies to, the variants taking turns so
// that a slow spell of the machine does not fall on one of them only, in an order drawn anew for
// each round, so that going first or second does not either. Each run records the conditions it
// started under.
func runAlternating(ctx context.Context, cfg config, order *method.Order, versions map[string]string, variants []*variant, res *results, w workload) error {
	for i := range cfg.runs {
		for position, v := range method.Shuffled(order, variants) {
			if w.only != "" && v.name != w.only {
				continue
			}
			conditions := method.Record(versions)
			r, err := w.run(v, ctx, cfg)
			r.Conditions = &conditions
			if err != nil {
				return fmt.Errorf("%s %s run %d: %w", v.name, w.name, i+1, err)
			}
			r.Round, r.Position = i+1, position+1
			res.add(v.name, r)
			fmt.Fprintf(os.Stderr, "bench: %s %s run %d: %s\n", v.name, w.name, i+1, r.brief())
		}
	}
	return nil
}

// toolVersions are the versions of the server and the client tools the runs record with their
// conditions: what each tool says of itself.
func toolVersions(ctx context.Context, server string) map[string]string {
	v := map[string]string{"server": server, "go": runtime.Version()}
	for _, tool := range []string{"sysbench", "mysqlslap"} {
		out, err := exec.CommandContext(ctx, tool, "--version").Output()
		if err != nil {
			v[tool] = "unknown: " + err.Error()
			continue
		}
		v[tool] = strings.TrimSpace(string(out))
	}
	return v
}

// listFlag parses a flag's value as a comma-separated list.
func listFlag(list *[]string) func(string) error {
	return func(s string) error {
		*list = strings.Split(s, ",")
		return nil
	}
}

// quantityFlag parses a flag's value as a Kubernetes quantity (4Gi, 2560Mi).
func quantityFlag(q *resource.Quantity) func(string) error {
	return func(s string) error {
		v, err := resource.ParseQuantity(s)
		if err != nil {
			return err
		}
		*q = v
		return nil
	}
}

// shutdown stops every pod, then closes the cloud volumes, then the host. Every pod goes first: a
// sandbox's mount namespace is a copy of this one when it started, so it holds the volumes mounted
// before it, its own and other pods', until it ends.
func shutdown(h *mariadb.Host, variants []*variant) error {
	var errs []error
	for _, v := range variants {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		errs = append(errs, v.pod.Stop(ctx))
		cancel()
	}
	for _, v := range variants {
		if v.volume != nil {
			errs = append(errs, v.volume.Close())
		}
	}
	errs = append(errs, h.Close())
	return errors.Join(errs...)
}

// replot draws the chart of the results in cfg.replot to cfg.out, and prints their Markdown
// section to md.
func replot(cfg config, md io.Writer) error {
	r, err := readResults(cfg.replot)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	pngPath, err := r.writeChart(cfg.out, strings.TrimSuffix(filepath.Base(cfg.replot), filepath.Ext(cfg.replot)))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", pngPath)
	_, err = io.WriteString(md, r.markdown(pngPath, cfg.replot))
	return err
}

// flagSet says whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
