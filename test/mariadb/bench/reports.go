package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The reports workload: report jobs that stage their data in a temporary table and read it for
// longer than the kernel keeps a dirty page in memory, while sysbench writes through the redo log of
// a data set larger than the buffer pool. A staging table is what ETL and reporting jobs build
// (CREATE TEMPORARY TABLE … SELECT, then several passes over it); ENGINE=MyISAM puts it in tmpdir
// as a file read and written through the page cache on both servers (MySQL's TempTable engine
// covers internal temporary tables only, and an explicit InnoDB one would go to the session
// temporary tablespaces instead).
const (
	reportsWorkload = "reports"
	// stageRowBytes is the length of a staged row: a latin1 CHAR(255), a group number and MyISAM's
	// row header, in the fixed-length row format.
	stageRowBytes = 264
	stageTable    = "stage"
)

// stageRows is the number of rows of a staging table of about mib MiB.
func stageRows(mib int) int64 { return int64(mib) << 20 / stageRowBytes }

// stageStatements create and fill one session's staging table of about mib MiB.
func stageStatements(mib int) []string {
	return []string{
		"CREATE TEMPORARY TABLE bench." + stageTable + " (grp INT NOT NULL, pad CHAR(255) NOT NULL) ENGINE=MyISAM DEFAULT CHARSET=latin1",
		fmt.Sprintf("INSERT INTO bench.%s SELECT seq %% 1000, %s FROM %s", stageTable, text(255/8), seqRows(stageRows(mib))),
	}
}

// scanStatement reads the whole staging table: a pass of the report over its staged data.
const scanStatement = "SELECT grp % 10, COUNT(*), SUM(LENGTH(pad)) FROM bench." + stageTable + " GROUP BY grp % 10"

// reportTally collects what the report jobs of one run did.
type reportTally struct {
	mu           sync.Mutex
	stageSeconds []float64
	scans        atomic.Int64
	reports      atomic.Int64
}

func (t *reportTally) staged(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stageSeconds = append(t.stageSeconds, d.Seconds())
}

// reports runs cfg.reportClients report jobs back to back for as long as sysbench's write load runs
// (cfg.reportsDuration), and records both: the transactions and their latency percentiles, and how
// fast the jobs staged and read their data.
func (v *variant) reports(ctx context.Context, cfg config) (runResult, error) {
	r := runResult{Workload: reportsWorkload}
	err := v.measure(ctx, &r, func() error {
		var stop atomic.Bool
		var tally reportTally
		var wg sync.WaitGroup
		jobErrs := make([]error, cfg.reportClients)
		start := time.Now()
		for i := range cfg.reportClients {
			wg.Go(func() {
				for !stop.Load() && jobErrs[i] == nil {
					jobErrs[i] = v.report(ctx, cfg, &stop, &tally)
				}
			})
		}
		out, err := v.sysbench(ctx, "--threads="+strconv.Itoa(cfg.sysbenchThreads), "--time="+strconv.Itoa(int(cfg.reportsDuration.Seconds())),
			"--report-interval=0", "--histogram=on", "run")
		stop.Store(true)
		wg.Wait()
		elapsed := time.Since(start).Seconds()
		if err != nil {
			return err
		}
		for _, jerr := range jobErrs {
			if jerr != nil {
				return r.settle(jerr, start)
			}
		}
		r.Reports = tally.reports.Load()
		r.StageSeconds = median(tally.stageSeconds)
		r.ScanMiBPerSecond = float64(tally.scans.Load()*stageRows(cfg.reportMiB)*stageRowBytes) / (1 << 20) / elapsed
		r.Seconds = elapsed
		return parseSysbench(out, &r)
	})
	return r, err
}

// report is one job: it stages its table on a session of its own, reads it over and over for
// cfg.reportHold (or until stop), and drops it.
func (v *variant) report(ctx context.Context, cfg config, stop *atomic.Bool, tally *reportTally) error {
	conn, err := v.pod.DB().Conn(ctx)
	if err != nil {
		return err
	}
	// The session's temporary table goes with the connection.
	defer discard(conn)
	began := time.Now()
	for _, q := range stageStatements(cfg.reportMiB) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("staging: %w", err)
		}
	}
	tally.staged(time.Since(began))
	held := time.Now()
	for time.Since(held) < cfg.reportHold && !stop.Load() {
		if err := drainConn(ctx, conn, scanStatement); err != nil {
			return fmt.Errorf("reading the staged table: %w", err)
		}
		tally.scans.Add(1)
	}
	if _, err := conn.ExecContext(ctx, "DROP TEMPORARY TABLE bench."+stageTable); err != nil {
		return err
	}
	tally.reports.Add(1)
	return nil
}

// drainConn runs a query on conn and reads all its rows.
func drainConn(ctx context.Context, conn *sql.Conn, query string) error {
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
	}
	return rows.Err()
}

// bufferPoolFreePercent is the share of the buffer pool's pages that are free, from the server's
// counters: near 0 when the data set fills it.
func bufferPoolFreePercent(counters map[string]int64) float64 {
	total := counters["Innodb_buffer_pool_pages_total"]
	if total == 0 {
		return 0
	}
	return 100 * float64(counters["Innodb_buffer_pool_pages_free"]) / float64(total)
}

// selectWorkloads keeps the workloads cfg.workloads names, in their order; all when it names none.
func selectWorkloads(all []workload, names []string) ([]workload, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []workload
	for _, n := range names {
		i := slices.IndexFunc(all, func(w workload) bool { return w.name == n })
		if i < 0 {
			return nil, fmt.Errorf("-workloads: %q is not a workload of this run (it has %s)", n, workloadNames(all))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func workloadNames(ws []workload) []string {
	names := make([]string, 0, len(ws))
	for _, w := range ws {
		names = append(names, w.name)
	}
	return names
}
