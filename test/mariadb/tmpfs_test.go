package mariadb_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

// Session settings that push a GROUP BY … ORDER BY into an on-disk internal temporary table and a
// filesort that merges through temporary files, whatever the table's size.
const spillToDisk = "SET SESSION tmp_table_size = 1024, max_heap_table_size = 16384, sort_buffer_size = 32768"

// spillQuery groups on an unindexed column and orders by the aggregate: "Using temporary; Using
// filesort".
const spillQuery = "SELECT payload, COUNT(*) AS c FROM app.rows GROUP BY payload ORDER BY c DESC, payload"

// fillRows creates app.rows with n rows of about 200 bytes each.
func fillRows(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	mustExec(t, db,
		"CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE app.rows (id INT AUTO_INCREMENT PRIMARY KEY, payload VARCHAR(200)) ENGINE=InnoDB",
		"INSERT INTO app.rows (payload) SELECT REPEAT(MD5(seq), 6) FROM app.seq_1_to_"+strconv.Itoa(n))
}

// TestTemporaryFilesOnTmpfs runs a query that needs an on-disk temporary table and a merging
// filesort, and watches the tmpfs fill while it runs. mysqld unlinks its temporary files as soon as
// it creates them, so the directory looks empty: only the filesystem's usage shows them.
func TestTemporaryFilesOnTmpfs(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	sts := statefulSet(h, "tmpfiles", "--skip-networking")
	pod := startPod(t, h, sts, scratchVolume(sts.Name, "256Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
	fillRows(t, pod.DB(), 100000)

	conn, err := pod.DB().Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	mustExec(t, conn, spillToDisk)
	before := sessionStatus(t, conn)
	tmpdir := pod.Plans[0].Layout.TmpDir
	baseline := tmpfsUsed(t, pod, tmpdir)

	watch := watchUsage(t, pod, tmpdir)
	rows := countRows(t, conn, spillQuery)
	peak, listed := watch()
	after := sessionStatus(t, conn)

	if rows != 100000 {
		t.Errorf("the query returned %d groups, want 100000", rows)
	}
	for _, v := range []string{"Created_tmp_disk_tables", "Sort_merge_passes"} {
		if after[v] <= before[v] {
			t.Errorf("%s stayed at %d: the query did not spill to disk as the test intends", v, after[v])
		}
	}
	const minGrowth = 8 << 20
	if peak-baseline < minGrowth {
		t.Errorf("the tmpfs grew by %d bytes at most while the query ran, want at least %d", peak-baseline, minGrowth)
	}
	if used := tmpfsUsed(t, pod, tmpdir); used > baseline {
		t.Errorf("the tmpfs still holds %d bytes more than before the query", used-baseline)
	}
	t.Logf("The tmpfs grew by up to %.1f MiB during the query (%d on-disk temporary tables, %d merge passes); its directory listed at most %d entries meanwhile.",
		float64(peak-baseline)/(1<<20), after["Created_tmp_disk_tables"]-before["Created_tmp_disk_tables"],
		after["Sort_merge_passes"]-before["Sort_merge_passes"], listed)
}

// TestFullTmpfs fills the tmpfs with a query's temporary files: the client gets a clear error, the
// server stays up, the space comes back, and committed InnoDB data is intact, also after a restart.
func TestFullTmpfs(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	sts := statefulSet(h, "fulltmp", "--skip-networking")
	pod := startPod(t, h, sts, scratchVolume(sts.Name, "16Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
	db := pod.DB()
	fillRows(t, db, 100000)
	mustExec(t, db,
		"CREATE TABLE app.kept (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
		"INSERT INTO app.kept SELECT seq, MD5(seq) FROM app.seq_1_to_10000")
	want := checksumKept(t, db)
	tmpdir := pod.Plans[0].Layout.TmpDir
	baseline := tmpfsUsed(t, pod, tmpdir)

	conn, err := db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, spillToDisk)
	_, err = queryAll(ctx(t), conn, spillQuery)
	_ = conn.Close()
	var myErr *mysql.MySQLError
	if !errors.As(err, &myErr) {
		t.Fatalf("the query on a full tmpfs returned %v, want a MySQL error", err)
	}
	if !fullError(myErr, tmpdir) {
		t.Errorf("the query on a full tmpfs failed with error %d %q, which does not say that %s is full", myErr.Number, myErr.Message, tmpdir)
	}
	t.Logf("A query filling the tmpfs failed with: Error %d (%s): %s", myErr.Number, myErr.SQLState, myErr.Message)

	if !pod.Running() {
		t.Fatalf("the server stopped after the tmpfs filled up:%s", tail(pod.Log("mariadb"), 20))
	}
	if used := tmpfsUsed(t, pod, tmpdir); used > baseline {
		t.Errorf("the failed query left %d bytes on the tmpfs", used-baseline)
	}
	if got := checksumKept(t, db); got != want {
		t.Errorf("committed data changed after the tmpfs filled up: %s, want %s", got, want)
	}
	mustExec(t, db, "INSERT INTO app.kept VALUES (10001, 'written after the tmpfs was full')")

	// A restart mounts an empty tmpfs and keeps the claim: files there show which is which.
	marker, err := pod.Path(filepath.Join(tmpdir, "marker"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want = checksumKept(t, db)
	if err := pod.Restart(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := checksumKept(t, pod.DB()); got != want {
		t.Errorf("committed data changed across the restart: %s, want %s", got, want)
	}
	if check := queryMaps(t, pod.DB(), "CHECK TABLE app.kept"); len(check) == 0 || check[len(check)-1]["Msg_text"] != "OK" {
		t.Errorf("CHECK TABLE app.kept after the restart: %v", check)
	}
	if _, err := os.Stat(mustPath(t, pod, filepath.Join(tmpdir, "marker"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file on the tmpfs survived the pod restart (%v): the harness did not mount a fresh one", err)
	}
}

// fullError reports whether err is the server saying that a temporary file or table in tmpdir ran
// out of space: a failed write (EE_WRITE, errno 28), a full table or a full disk.
func fullError(err *mysql.MySQLError, tmpdir string) bool {
	const (
		eeWrite          = 3    // "Error writing file … (Errcode: 28 …)"
		erDiskFull       = 1021 // ER_DISK_FULL
		erRecordFileFull = 1114 // ER_RECORD_FILE_FULL: "The table … is full"
	)
	msg := err.Message
	switch err.Number {
	case eeWrite, erDiskFull:
		return strings.Contains(msg, "No space left on device") && strings.Contains(msg, tmpdir)
	case erRecordFileFull:
		return strings.Contains(msg, "is full")
	}
	return false
}

func checksumKept(t *testing.T, db *sql.DB) string {
	t.Helper()
	return queryString(t, db, "SELECT CONCAT(COUNT(*), ' rows, checksum ', SUM(CRC32(CONCAT(id, v)))) FROM app.kept")
}

// sessionStatus reads the session's counters of temporary tables and sort merges.
func sessionStatus(t *testing.T, conn *sql.Conn) map[string]int64 {
	t.Helper()
	rows, err := conn.QueryContext(ctx(t), "SHOW SESSION STATUS WHERE Variable_name IN ('Created_tmp_disk_tables', 'Sort_merge_passes')")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		out[name] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func countRows(t *testing.T, conn *sql.Conn, query string) int {
	t.Helper()
	n, err := queryAll(ctx(t), conn, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// queryAll runs a query and reads every row; errors can come while rows are read.
func queryAll(c context.Context, conn *sql.Conn, query string) (int, error) {
	rows, err := conn.QueryContext(c, query)
	if err != nil {
		return 0, err
	}
	defer func() { _ = rows.Close() }()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

func mustPath(t *testing.T, pod *mariadb.Pod, dir string) string {
	t.Helper()
	p, err := pod.Path(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tmpfsUsed is how many bytes the filesystem holding dir in the pod has in use.
func tmpfsUsed(t *testing.T, pod *mariadb.Pod, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(mustPath(t, pod, dir), &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		t.Fatalf("%s is not on a tmpfs", dir)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// watchUsage samples the usage of the tmpfs holding dir, and how many entries dir lists, until the
// returned function is called, which returns the largest of each seen.
func watchUsage(t *testing.T, pod *mariadb.Pod, dir string) func() (bytes int64, entries int) {
	t.Helper()
	p := mustPath(t, pod, dir)
	stop := make(chan struct{})
	var peak int64
	var listed int
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			var st unix.Statfs_t
			if unix.Statfs(p, &st) == nil {
				peak = max(peak, int64(st.Blocks-st.Bfree)*st.Bsize)
			}
			if i%5 == 0 {
				if es, err := os.ReadDir(p); err == nil {
					listed = max(listed, len(es))
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	return func() (int64, int) {
		close(stop)
		wg.Wait()
		return peak, listed
	}
}
