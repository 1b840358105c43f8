// Command bench measures what a ScratchVolume buys a MariaDB server: the same StatefulSet run twice
// by the real-server harness, once injected by the controller's builder (tmpdir on a tmpfs) and once
// as written (tmpdir in the container's /tmp, on this machine's disk, the filesystem of the data
// volume), with the same server settings. Each run is repeated and the medians compared:
//
//   - temp: mysqlslap with many concurrent clients running queries that need an on-disk internal
//     temporary table and a merging filesort;
//   - mixed: sysbench oltp_write_only, whose commits fsync the redo log, while a few clients run
//     the same temporary-table queries; transactions per second and p95/p99 latency.
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
	h, err := mariadb.NewHost("")
	if err != nil {
		return err
	}
	defer func() {
		if err := h.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		}
	}()
	ctx := context.Background()
	variants, err := startVariants(ctx, h, cfg)
	if err != nil {
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
			r, err := v.mixed(ctx, cfg)
			if err != nil {
				return fmt.Errorf("%s mixed run %d: %w", v.name, i+1, err)
			}
			res.add(v.name, r)
			fmt.Fprintf(os.Stderr, "bench: %s mixed run %d: %.0f tps, p99 %.1f ms\n", v.name, i+1, r.TPS, r.P99Millis)
		}
	}
	res.summarize()
	return res.write(cfg.out, os.Stdout)
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
