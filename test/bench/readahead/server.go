package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/mariadb"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// The server's data directory and the claim it lives on.
const (
	dataClaim = "data"
	dataDir   = "/var/lib/mysql"
)

// Flush methods the scan runs with: fsync reads InnoDB's data files through the page cache,
// O_DIRECT (the server's default) bypasses it.
const (
	flushFsync   = "fsync"
	flushODirect = "O_DIRECT"
)

// The scanned table: rows of about 1 KiB (an INT key and 960 characters), loaded a batch at a
// time, and the query that reads every row.
const (
	scanTable     = "bench.scan"
	rowBytes      = 1024
	loadBatchRows = 100_000
	scanQuery     = "SELECT COUNT(*), SUM(LENGTH(pad)) FROM " + scanTable
	padChars      = 960
)

// server is one MariaDB StatefulSet pod run by the real-server harness, its data directory on
// the cloud volume.
type server struct {
	pod  *mariadb.Pod
	args []string
	info Server
}

// serverArgs are the settings of every start: a buffer pool well below the table, so that a scan
// reads it all from the file; no buffer pool dump or load, so that every start is cold; a redo log
// and no doublewrite buffer that let the load go quickly (neither touches a read).
func serverArgs(bufferPool string) []string {
	return []string{
		"--skip-networking",
		"--innodb-buffer-pool-size=" + bufferPool,
		"--innodb-log-file-size=256M",
		"--innodb-doublewrite=0",
		"--innodb-buffer-pool-dump-at-shutdown=OFF",
		"--innodb-buffer-pool-load-at-startup=OFF",
	}
}

// newServer prepares the pod; its claim is where the caller mounts the volume before start.
func newServer(h *mariadb.Host, bufferPool string, memoryLimit resource.Quantity) (*server, error) {
	args := serverArgs(bufferPool)
	sts := testenv.StatefulSet("bench", "bench-readahead", testenv.WithImage(h.Server.Image), testenv.WithArgs(args...),
		testenv.WithMemoryLimit(memoryLimit.String()), testenv.WithDataMount(dataDir))
	pod, err := h.NewPod(sts)
	if err != nil {
		return nil, err
	}
	return &server{pod: pod, args: args, info: Server{Args: args, MemoryLimit: memoryLimit.String()}}, nil
}

// claimDir is the directory on this machine that holds the data directory.
func (s *server) claimDir() string { return s.pod.ClaimDir(dataClaim) }

// tableFile is the scanned table's file, as a path on this machine.
func (s *server) tableFile() string {
	return filepath.Join(s.claimDir(), strings.ReplaceAll(scanTable, ".", "/")+".ibd")
}

// start starts the server with the flush method and checks that it runs with it.
func (s *server) start(ctx context.Context, flushMethod string) error {
	s.pod.DatabaseContainer().Args = append(append([]string{}, s.args...), "--innodb-flush-method="+flushMethod)
	if err := s.pod.Start(ctx); err != nil {
		return err
	}
	var got string
	if err := s.pod.DB().QueryRowContext(ctx, "SELECT @@innodb_flush_method").Scan(&got); err != nil {
		return fmt.Errorf("failed to read the server's flush method: %w", err)
	}
	if !strings.EqualFold(got, flushMethod) {
		return fmt.Errorf("the server runs with innodb_flush_method %s, not %s", got, flushMethod)
	}
	return nil
}

func (s *server) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.pod.Stop(ctx)
}

// load creates the table, about tableBytes of rows, stops the server (which writes every page
// back) and records the table file's size.
func (s *server) load(ctx context.Context, tableBytes int64) error {
	if err := s.start(ctx, flushODirect); err != nil {
		return err
	}
	db := s.pod.DB()
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s.info.Version); err != nil {
		return err
	}
	s.info.Rows = tableBytes / rowBytes
	queries := []string{
		"CREATE DATABASE bench",
		"CREATE TABLE " + scanTable + " (id INT PRIMARY KEY, pad VARCHAR(1000) NOT NULL) ENGINE=InnoDB",
	}
	for base := int64(0); base < s.info.Rows; base += loadBatchRows {
		n := min(loadBatchRows, s.info.Rows-base)
		queries = append(queries, fmt.Sprintf("INSERT INTO %s SELECT %d + seq, REPEAT(MD5(%d + seq), %d) FROM %s",
			scanTable, base, base, padChars/32, mariadb.Seq(int(n))))
	}
	for _, q := range queries {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("failed to load the table: %.120s: %w", q, err)
		}
	}
	if err := s.stop(); err != nil {
		return err
	}
	st, err := os.Stat(s.tableFile())
	if err != nil {
		return err
	}
	s.info.TableFileBytes = st.Size()
	return nil
}

// scanResult is what one scan measured.
type scanResult struct {
	seconds float64
	device  cloudvolume.Stats
	// innodbReadBytes is InnoDB's Innodb_data_read over the query.
	innodbReadBytes           int64
	cachedBefore, cachedAfter int64
}

// scan restarts the server with the flush method after dropping the table file's page cache, and
// runs the full scan on its cold buffer pool. The device's read-ahead must be set before: InnoDB
// opens the file when it starts, and a file takes its device's read-ahead when it is opened.
// deviceStats are the volume's counters, read just before and just after the query.
func (s *server) scan(ctx context.Context, flushMethod string, deviceStats func() cloudvolume.Stats) (scanResult, error) {
	var r scanResult
	if err := dropCache(s.tableFile()); err != nil {
		return r, err
	}
	if err := s.start(ctx, flushMethod); err != nil {
		return r, err
	}
	err := s.query(ctx, &r, deviceStats)
	return r, errors.Join(err, s.stop())
}

// query runs the scan's query on the started server and checks what it counted.
func (s *server) query(ctx context.Context, r *scanResult, deviceStats func() cloudvolume.Stats) error {
	before, err := innodbDataRead(ctx, s.pod)
	if err != nil {
		return err
	}
	if r.cachedBefore, err = cachedBytes(s.tableFile()); err != nil {
		return err
	}
	var rows, chars int64
	statsBefore, start := deviceStats(), time.Now()
	if err := s.pod.DB().QueryRowContext(ctx, scanQuery).Scan(&rows, &chars); err != nil {
		return fmt.Errorf("failed to scan the table: %w", err)
	}
	r.seconds, r.device = time.Since(start).Seconds(), delta(deviceStats(), statsBefore)
	if rows != s.info.Rows || chars != s.info.Rows*padChars {
		return fmt.Errorf("the scan counted %d rows of %d characters, want %d of %d", rows, chars, s.info.Rows, s.info.Rows*padChars)
	}
	after, err := innodbDataRead(ctx, s.pod)
	if err != nil {
		return err
	}
	r.innodbReadBytes = after - before
	r.cachedAfter, err = cachedBytes(s.tableFile())
	return err
}

func innodbDataRead(ctx context.Context, pod *mariadb.Pod) (int64, error) {
	var name string
	var n int64
	if err := pod.DB().QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_data_read'").Scan(&name, &n); err != nil {
		return 0, fmt.Errorf("failed to read Innodb_data_read: %w", err)
	}
	return n, nil
}
