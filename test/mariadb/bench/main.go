// Command bench measures what a ScratchVolume buys a MariaDB server: the same StatefulSet run twice
// by the real-server harness, once injected by the controller's builder (tmpdir on a tmpfs) and once
// as written (tmpdir in the container's /tmp, on this machine's disk, the filesystem of the data
// volume), with the same server settings. Each run is repeated and the medians compared:
//
//   - temp: mysqlslap with many concurrent clients running queries that need an on-disk internal
//     temporary table and a merging filesort;
//   - bigsort: one query ordering more rows than fit in memory (-bigsort-mib), a filesort that
//     merges through temporary files larger than what the kernel lets stay dirty;
//   - mixed: sysbench oltp_write_only, whose commits fsync the redo log, while a few clients run
//     the same temporary-table queries; transactions per second and p95/p99 latency.
//
// The database container runs in a memory cgroup limited to its limits.memory (4Gi), as under a
// kubelet, and the report gives its peak. With -volume, each pod's data volume is a cloud-shaped
// block device (test/cloudvolume) of that profile, gp3 for example, so that the redo log's fsyncs
// and, in the disk variant, nothing else share its bandwidth, IOPS and latency.
//
// It writes <out>/mariadb-tmpdir.json and <out>/mariadb-tmpdir.png, and prints a Markdown section for
// docs/benchmarks.md on standard output. It needs root, mariadb-server, mariadb-client (mysqlslap) and
// sysbench.
//
// With -replot FILE it measures nothing and needs none of that: it reads a mariadb-tmpdir.json,
// draws its chart to mariadb-tmpdir.png in -out (default: beside FILE) and prints the Markdown
// section.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/mariadb"
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
	volume          string
	volumeSize      int64
	bigSortMiB      int
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
	flag.StringVar(&cfg.replot, "replot", "", "draw the chart of an existing mariadb-tmpdir.json instead of measuring (to -out, default beside it)")
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
		return errors.New("needs root to mount tmpfs volumes and run mariadbd in its own namespaces: run it as root")
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
	h, err := mariadb.NewHost("")
	if err != nil {
		return err
	}
	var variants []*variant
	defer func() {
		if err := shutdown(h, variants); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		}
	}()
	ctx := context.Background()
	if err := startVariants(ctx, h, cfg, &variants); err != nil {
		return err
	}
	// The first runs after loading find cold caches and a purge backlog; they are not measured.
	warm := cfg
	warm.queries, warm.mixedDuration = max(cfg.queries/4, cfg.clients), 5*time.Second
	for _, v := range variants {
		if _, err := v.temp(ctx, warm); err != nil {
			return fmt.Errorf("%s warm-up: %w", v.name, err)
		}
		if _, err := v.mixed(ctx, warm); err != nil {
			return fmt.Errorf("%s warm-up: %w", v.name, err)
		}
	}
	res := newResults(h, cfg, variants)
	for i := range cfg.runs {
		for _, v := range variants {
			r, err := v.temp(ctx, cfg)
			if err != nil {
				return fmt.Errorf("%s temp run %d: %w", v.name, i+1, err)
			}
			res.add(v.name, r)
			fmt.Fprintf(os.Stderr, "bench: %s temp run %d: %.2f s\n", v.name, i+1, r.Seconds)
		}
	}
	for i := range cfg.runs {
		for _, v := range variants {
			if cfg.bigSortMiB <= 0 {
				break
			}
			r, err := v.bigSort(ctx, cfg)
			if err != nil {
				return fmt.Errorf("%s bigsort run %d: %w", v.name, i+1, err)
			}
			res.add(v.name, r)
			fmt.Fprintf(os.Stderr, "bench: %s bigsort run %d: %.2f s\n", v.name, i+1, r.Seconds)
		}
	}
	for i := range cfg.runs {
		for _, v := range variants {
			r, err := v.mixed(ctx, cfg)
			if err != nil {
				return fmt.Errorf("%s mixed run %d: %w", v.name, i+1, err)
			}
			res.add(v.name, r)
			fmt.Fprintf(os.Stderr, "bench: %s mixed run %d: %.0f tps, p99 %.1f ms\n", v.name, i+1, r.TPS, r.P99Millis)
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
	pngPath, err := r.writeChart(cfg.out)
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
