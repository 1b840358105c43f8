package mariadb_test

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/mariadb"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// Session settings that push a GROUP BY … ORDER BY into an on-disk internal temporary table and a
// filesort that merges through temporary files, whatever the table's size.
const spillToDisk = "SET SESSION tmp_table_size = 1024, max_heap_table_size = 16384, sort_buffer_size = 32768"

// spillQuery groups on an unindexed column and orders by the aggregate: "Using temporary; Using
// filesort".
const spillQuery = "SELECT payload, COUNT(*) AS c FROM app.rows GROUP BY payload ORDER BY c DESC, payload"

// sortQuery needs a filesort and no temporary table: "Using filesort".
const sortQuery = "SELECT payload FROM app.rows ORDER BY payload DESC"

// fillRows creates app.rows with n rows of about 200 bytes each.
func fillRows(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	mustExec(t, db,
		"CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE app.rows (id INT AUTO_INCREMENT PRIMARY KEY, payload VARCHAR(200)) ENGINE=InnoDB",
		"INSERT INTO app.rows (payload) SELECT "+mariadb.SeqText(23)+" FROM "+mariadb.Seq(n))
}

// TestTemporaryFilesOnTmpfs runs, on each server, a query that needs an on-disk temporary table and
// a merging filesort, and watches the tmpfs fill while it runs. The server unlinks its temporary
// files as soon as it creates them, so the directory looks empty: only the filesystem's usage shows
// them. On MySQL the on-disk temporary table is InnoDB, in the session's temporary tablespace on
// the RAM volume, which keeps its grown size until the session ends.
func TestTemporaryFilesOnTmpfs(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, h *mariadb.Host) {
		sts := statefulSet(h, "tmpfiles", "--skip-networking")
		pod := startPod(t, h, sts, scratchVolume(sts.Name, "256Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
		fillRows(t, pod.DB(), 100000)

		conn, err := pod.DB().Conn(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		defer endSession(conn)
		mustExec(t, conn, spillToDisk)
		before := sessionStatus(t, conn)
		tmpdir := pod.Plans[0].Layout.TmpDir
		// The node agent's large pages, as a ScratchVolume gets them by default.
		if opts, err := pod.TmpfsOptions(pod.Plans[0].Volume.Name); err != nil || !strings.Contains(opts, "huge=within_size") {
			t.Errorf("the RAM volume's tmpfs has options %q (%v), want huge=within_size", opts, err)
		}
		baseline := tmpfsUsed(t, pod, tmpdir)

		watch := watchUsage(t, pod, tmpdir)
		rows := countRows(t, conn, spillQuery)
		peak, listed := watch()
		after := sessionStatus(t, conn)

		if rows != 100000 {
			t.Errorf("the query returned %d groups, want 100000", rows)
		}
		if after["Sort_merge_passes"] <= before["Sort_merge_passes"] {
			t.Errorf("Sort_merge_passes stayed at %d: the sort did not merge through temporary files as the test intends", after["Sort_merge_passes"])
		}
		const minGrowth = 8 << 20
		if peak-baseline < minGrowth {
			t.Errorf("the tmpfs grew by %d bytes at most while the query ran, want at least %d", peak-baseline, minGrowth)
		}
		held := tmpfsUsed(t, pod, tmpdir) - baseline
		var table string
		if isMySQL(h) {
			// MySQL does not count a TempTable table that outgrew tmp_table_size into InnoDB
			// in Created_tmp_disk_tables; its session temporary tablespace shows it.
			path, size := sessionTablespace(t, conn)
			if !paths.Within(path, tmpdir) || size < minGrowth/2 {
				t.Errorf("the session temporary tablespace is %s, %d bytes, after the query; want it on the RAM volume %s and grown by the on-disk table", path, size, tmpdir)
			}
			table = fmt.Sprintf("session temporary tablespace %s grown to %.1f MiB", path, float64(size)/(1<<20))
			// It keeps the table's pages until the session ends; then the server truncates it.
			if held < minGrowth/2 {
				t.Errorf("the tmpfs holds only %d bytes more after the query while its session is open; MySQL keeps a session temporary tablespace's size until the session ends", held)
			}
			endSession(conn)
			testenv.Eventually(t, time.Minute, func() string {
				if left := tmpfsUsed(t, pod, tmpdir) - baseline; left > 1<<20 {
					return fmt.Sprintf("the tmpfs still holds %d bytes more than before the query after its session ended", left)
				}
				return ""
			})
		} else {
			if after["Created_tmp_disk_tables"] <= before["Created_tmp_disk_tables"] {
				t.Errorf("Created_tmp_disk_tables stayed at %d: the query did not spill to disk as the test intends", after["Created_tmp_disk_tables"])
			}
			table = fmt.Sprintf("%d on-disk temporary tables", after["Created_tmp_disk_tables"]-before["Created_tmp_disk_tables"])
			if held > 0 {
				t.Errorf("the tmpfs still holds %d bytes more than before the query", held)
			}
		}
		t.Logf("The tmpfs grew by up to %.1f MiB during the query (%s, %d merge passes) and held %.1f MiB after it while the session was open; its directory listed at most %d entries meanwhile.",
			float64(peak-baseline)/(1<<20), table, after["Sort_merge_passes"]-before["Sort_merge_passes"], float64(held)/(1<<20), listed)
	})
}

// TestLargePagesFollowTheScratchVolume: the harness gives a memory volume the node agent's pages as
// spec.largePages asks, through the agent's own mechanism, and Never leaves the kubelet's mount.
func TestLargePagesFollowTheScratchVolume(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	for policy, want := range map[v1alpha1.LargePagesPolicy]string{v1alpha1.LargePagesWithinSize: "huge=within_size", v1alpha1.LargePagesNever: ""} {
		sts := statefulSet(h, "pages-"+strings.ToLower(string(policy)), "--skip-networking")
		sv := scratchVolume(sts.Name, "64Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk)
		sv.Spec.LargePages = policy
		pod := startPod(t, h, sts, sv)
		opts, err := pod.TmpfsOptions(pod.Plans[0].Volume.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(opts, "huge="); got != (want != "") || !strings.Contains(opts, want) {
			t.Errorf("spec.largePages %s: the tmpfs has options %q, want %q", policy, opts, cmp.Or(want, "no huge="))
		}
	}
}

// sessionTablespace is the path and size of the session temporary tablespace of conn's session.
func sessionTablespace(t *testing.T, conn *sql.Conn) (string, int64) {
	t.Helper()
	var path string
	var size int64
	err := conn.QueryRowContext(ctx(t), "SELECT PATH, SIZE FROM INFORMATION_SCHEMA.INNODB_SESSION_TEMP_TABLESPACES WHERE ID = CONNECTION_ID()").Scan(&path, &size)
	if err != nil {
		t.Fatalf("the session's temporary tablespace: %v", err)
	}
	return path, size
}

// endSession closes conn's session on the server: a *sql.Conn that is merely closed goes back to
// the pool and its session lives on, with its temporary tablespace.
func endSession(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// TestFullTmpfs fills the tmpfs with a query's temporary data on each server: the client gets a
// clear error, the server stays up, the space comes back (on MySQL once the session that grew its
// temporary tablespace ends), and committed InnoDB data is intact, also after a restart.
func TestFullTmpfs(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, h *mariadb.Host) {
		sts := statefulSet(h, "fulltmp", "--skip-networking")
		sv := scratchVolume(sts.Name, "16Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk)
		// The volume itself filling up: a server limit on temporary space would stop the query
		// first (TestServerTempSpaceLimit).
		sv.Spec.MySQL.TempSpaceLimit = v1alpha1.TempSpaceLimitNone
		pod := startPod(t, h, sts, sv)
		db := pod.DB()
		fillRows(t, db, 100000)
		want := keep(t, db, 10000)
		tmpdir := pod.Plans[0].Layout.TmpDir
		baseline := tmpfsUsed(t, pod, tmpdir)

		conn, err := db.Conn(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		// On MySQL the sort alone: an on-disk internal temporary table that fills the volume
		// stops the server (TestFullSessionTablespaceStopsMySQL).
		query := spillQuery
		if isMySQL(h) {
			query = sortQuery
		}
		mustExec(t, conn, spillToDisk)
		_, err = queryAll(ctx(t), conn, query)
		endSession(conn)
		var myErr *mysql.MySQLError
		if !errors.As(err, &myErr) {
			t.Fatalf("the query on a full tmpfs returned %v, want a MySQL error", err)
		}
		if !fullError(myErr, tmpdir) {
			t.Errorf("the query on a full tmpfs failed with error %d %q, which does not say that %s is full", myErr.Number, myErr.Message, tmpdir)
		}
		t.Logf("A query filling the tmpfs failed with: Error %d (%s): %s", myErr.Number, myErr.SQLState, myErr.Message)

		if !pod.Running() {
			t.Fatalf("the server stopped after the tmpfs filled up:%s", tail(pod.Log(pod.Container), 20))
		}
		testenv.Eventually(t, time.Minute, func() string {
			if used := tmpfsUsed(t, pod, tmpdir); used > baseline {
				return fmt.Sprintf("the failed query left %d bytes on the tmpfs after its session ended", used-baseline)
			}
			return ""
		})
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
	})
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

// keep commits app.kept, n rows the test checks survive what it does, and returns their checksum.
// The database app must exist.
func keep(t *testing.T, db *sql.DB, n int) string {
	t.Helper()
	mustExec(t, db,
		"CREATE TABLE app.kept (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
		"INSERT INTO app.kept SELECT seq, "+mariadb.SeqText(4)+" FROM "+mariadb.Seq(n))
	return checksumKept(t, db)
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
