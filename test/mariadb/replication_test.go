package mariadb_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

// TestReplicaLoadDir is the replication story behind the design, run against two statement-based
// replicas of one primary: one with the operator's layout (slave_load_tmpdir on the data volume),
// one hand-tuned with everything temporary, the load directory too, on the tmpfs.
//
// A replica applies a LOAD DATA INFILE event by event: Begin_load_query and each Append_block write
// the file's blocks to an SQL_LOAD-* file in slave_load_tmpdir, and Execute_load_query loads it. The
// table is MyISAM so that nothing is transactional; MariaDB wraps the group in BEGIN…COMMIT anyway.
func TestReplicaLoadDir(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	primaryPort := freePort(t)
	primary := newPod(t, h, statefulSet(h, "primary", "--server-id=1", "--log-bin=primary-bin", "--binlog-format=STATEMENT",
		"--bind-address=127.0.0.1", fmt.Sprintf("--port=%d", primaryPort)),
		scratchVolume("primary", "64Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
	var replicas []*replica
	for i, layout := range []string{"operator", "naive"} {
		sts := statefulSet(h, layout+"-replica", fmt.Sprintf("--server-id=%d", i+2), "--relay-log=relay-bin",
			"--bind-address=127.0.0.1", fmt.Sprintf("--port=%d", freePort(t)))
		pod := newPod(t, h, sts, scratchVolume(sts.Name, replicaScratchSize, v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
		replicas = append(replicas, &replica{layout: layout, pod: pod, link: newThrottle(t, fmt.Sprintf("127.0.0.1:%d", primaryPort))})
	}
	operator, naive := replicas[0], replicas[1]
	// The command line overrides the drop-in: this is the layout the design warns against.
	c := naive.pod.DatabaseContainer()
	c.Args = append(c.Args, "--slave-load-tmpdir="+naive.pod.Plans[0].Layout.TmpDir)
	startAll(t, primary, operator.pod, naive.pod)
	if got := queryString(t, naive.pod.DB(), "SELECT @@slave_load_tmpdir"); got != naive.pod.Plans[0].Layout.TmpDir {
		t.Fatalf("the naive replica's slave_load_tmpdir is %s, not the tmpfs", got)
	}
	src := setUpReplication(t, primary, replicas)

	t.Run("PodRestartInsideLoadData", func(t *testing.T) {
		restartInsideLoadData(t, src, replicas)
	})
	t.Run("LoadDataLargerThanScratchVolume", func(t *testing.T) {
		size := writeCSV(t, primary, "large.csv", restartRows, largeRows)
		if limit := naive.pod.Plans[0].Volume.EmptyDir.SizeLimit.Value(); size <= limit {
			t.Fatalf("the file (%d bytes) must be larger than the scratch volume (%d bytes)", size, limit)
		}
		end := src.load(t, "large.csv")
		operator.waitCaughtUp(t, src, end)
		s := naive.waitStopped(t, end)
		if s["Slave_SQL_Running"] != "No" || s["Last_SQL_Errno"] == "0" {
			t.Fatalf("the naive replica staged a %d-byte LOAD DATA in a %s tmpfs without an error: the test no longer shows why the load directory must stay on disk",
				size, replicaScratchSize)
		}
		// MariaDB reports the write's errno, ENOSPC, as the error number.
		tmp := naive.pod.Plans[0].Layout.TmpDir
		if msg := s["Last_SQL_Error"]; s["Last_SQL_Errno"] != strconv.Itoa(int(unix.ENOSPC)) || !strings.Contains(msg, tmp+"/SQL_LOAD-") {
			t.Errorf("replication stopped with error %s: %s; want %d (no space) writing an SQL_LOAD file in %s", s["Last_SQL_Errno"], msg, unix.ENOSPC, tmp)
		}
		t.Logf("The naive replica stopped: error %s: %s", s["Last_SQL_Errno"], s["Last_SQL_Error"])
	})
}

// Sizes for TestReplicaLoadDir: a LOAD DATA of restartRows rows (about 1.6 MiB) fits the replicas'
// scratch volume (the smallest the API admits), one of largeRows rows (about 24 MiB) does not.
const (
	replicaScratchSize = "16Mi"
	restartRows        = 30000
	largeRows          = 440000
)

// restartInsideLoadData stops each replica's pod with half of a LOAD DATA applied and starts it again
// on a fresh tmpfs, the scenario. MariaDB keeps a replica's position at the start of an
// unfinished event group and replays the group after a restart, and Begin_load_query recreates the
// SQL_LOAD file; so both replicas recover, and only the operator's keeps the file across the restart.
// This test pins that behavior: should a MariaDB release resume inside the group, the naive
// replica's failure shows up here first.
func restartInsideLoadData(t *testing.T, src *source, replicas []*replica) {
	size := writeCSV(t, src.pod, "events.csv", 0, restartRows)
	for _, r := range replicas {
		r.link.Limit(size / 2)
	}
	groupStart := src.pos(t)
	end := src.load(t, "events.csv")
	for _, r := range replicas {
		// Settled: nothing more arrives, and the SQL thread has applied all that did.
		var received string
		var since time.Time
		s := waitSlave(t, r.pod, "applied the half of the LOAD DATA it received", func(s map[string]string) bool {
			if s["Read_Master_Log_Pos"] != received {
				received, since = s["Read_Master_Log_Pos"], time.Now()
				return false
			}
			return time.Since(since) > 500*time.Millisecond && received != strconv.FormatInt(groupStart, 10) &&
				strings.Contains(s["Slave_SQL_Running_State"], "waiting for more")
		})
		read, _ := strconv.ParseInt(s["Read_Master_Log_Pos"], 10, 64)
		if s["Exec_Master_Log_Pos"] != strconv.FormatInt(groupStart, 10) || read <= groupStart || read >= end {
			t.Fatalf("%s replica: executed to %s, received to %d; want inside the group %d-%d", r.layout, s["Exec_Master_Log_Pos"], read, groupStart, end)
		}
		if files := loadFiles(t, r.pod); len(files) != 1 {
			t.Fatalf("%s replica: want the partly written SQL_LOAD file in its load directory, found %q", r.layout, files)
		}
		if got := queryInt(t, r.pod.DB(), "SELECT COUNT(*) FROM app.events"); got != 0 {
			t.Fatalf("%s replica: %d rows loaded before the group was complete", r.layout, got)
		}
	}
	for _, r := range replicas {
		t.Logf("Restarting the %s replica's pod with half of the LOAD DATA applied.", r.layout)
		if err := r.pod.Stop(ctx(t)); err != nil {
			t.Fatal(err)
		}
		r.link.Unlimit()
	}
	kept, err := filepath.Glob(filepath.Join(replicas[0].pod.ClaimDir("data"), mysql.PersistentDirName, "replica-load", "SQL_LOAD-*"))
	if err != nil || len(kept) != 1 {
		t.Errorf("the operator replica's SQL_LOAD file did not survive the restart on the data volume: %q %v", kept, err)
	}
	startAll(t, replicas[0].pod, replicas[1].pod)
	for _, r := range replicas {
		r.waitCaughtUp(t, src, end)
	}
}

// replica is one replica pod, connected to the primary through a throttle.
type replica struct {
	layout string
	pod    *mariadb.Pod
	link   *throttle
}

// source is the primary and its binary log.
type source struct {
	pod  *mariadb.Pod
	file string
}

// setUpReplication creates the replication user and table on the primary and starts both replicas
// from the position before the table, by file and position as a statement-based setup does.
func setUpReplication(t *testing.T, primary *mariadb.Pod, replicas []*replica) *source {
	t.Helper()
	mustExec(t, primary.DB(),
		"CREATE USER repl@'127.0.0.1' IDENTIFIED BY 'repl'",
		"GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1'")
	src := &source{pod: primary}
	src.file = masterStatus(t, primary)["File"]
	start := src.pos(t)
	mustExec(t, primary.DB(),
		"CREATE DATABASE app",
		"CREATE TABLE app.events (id INT PRIMARY KEY, kind VARCHAR(16), payload VARCHAR(40)) ENGINE=MyISAM")
	end := src.pos(t)
	for _, r := range replicas {
		mustExec(t, r.pod.DB(), fmt.Sprintf(
			"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='repl', MASTER_PASSWORD='repl', "+
				"MASTER_LOG_FILE='%s', MASTER_LOG_POS=%d, MASTER_USE_GTID=no", r.link.Port(), src.file, start),
			"START SLAVE")
		r.waitCaughtUp(t, src, end)
	}
	return src
}

func masterStatus(t *testing.T, primary *mariadb.Pod) map[string]string {
	t.Helper()
	rows := queryMaps(t, primary.DB(), "SHOW MASTER STATUS")
	if len(rows) != 1 {
		t.Fatalf("SHOW MASTER STATUS returned %d rows: is the binary log on?", len(rows))
	}
	return rows[0]
}

// pos is the end of the primary's binary log.
func (s *source) pos(t *testing.T) int64 {
	t.Helper()
	st := masterStatus(t, s.pod)
	if st["File"] != s.file {
		t.Fatalf("the primary switched binary logs from %s to %s", s.file, st["File"])
	}
	pos, err := strconv.ParseInt(st["Position"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// load runs LOAD DATA INFILE on a file in the primary's data directory, checks that it was logged
// as the event group the test relies on, and returns the end of the group.
func (s *source) load(t *testing.T, name string) int64 {
	t.Helper()
	from := s.pos(t)
	mustExec(t, s.pod.DB(), "LOAD DATA INFILE '"+path.Join(s.pod.DataDir, name)+"' INTO TABLE app.events FIELDS TERMINATED BY ','")
	var kinds []string
	for _, ev := range queryMaps(t, s.pod.DB(), fmt.Sprintf("SHOW BINLOG EVENTS IN '%s' FROM %d", s.file, from)) {
		if k := ev["Event_type"]; len(kinds) == 0 || kinds[len(kinds)-1] != k {
			kinds = append(kinds, k)
		}
	}
	if want := []string{"Gtid", "Begin_load_query", "Append_block", "Execute_load_query", "Query"}; !slices.Equal(kinds, want) {
		t.Fatalf("LOAD DATA was logged as %q, want %q (statement-based, several blocks)", kinds, want)
	}
	return s.pos(t)
}

// writeCSV writes rows for app.events, ids from first on, onto the primary's data volume and returns
// the file's size.
func writeCSV(t *testing.T, primary *mariadb.Pod, name string, first, rows int) int64 {
	t.Helper()
	var csv strings.Builder
	for i := first; i < first+rows; i++ {
		fmt.Fprintf(&csv, "%d,kind-%d,%040d\n", i, i%7, i)
	}
	if err := os.WriteFile(filepath.Join(primary.ClaimDir("data"), name), []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return int64(csv.Len())
}

// waitCaughtUp waits until the replica has applied the primary's log up to end without an error and
// holds the same rows.
func (r *replica) waitCaughtUp(t *testing.T, src *source, end int64) {
	t.Helper()
	s := waitSlave(t, r.pod, fmt.Sprintf("applied %s:%d", src.file, end), func(s map[string]string) bool {
		return (s["Relay_Master_Log_File"] == src.file && s["Exec_Master_Log_Pos"] == strconv.FormatInt(end, 10)) ||
			s["Slave_SQL_Running"] == "No"
	})
	if s["Slave_SQL_Running"] != "Yes" || s["Last_SQL_Errno"] != "0" {
		t.Fatalf("%s replica: replication stopped: error %s: %s", r.layout, s["Last_SQL_Errno"], s["Last_SQL_Error"])
	}
	if got, want := tableChecksum(t, r.pod.DB()), tableChecksum(t, src.pod.DB()); got != want {
		t.Fatalf("%s replica has %s, the primary %s", r.layout, got, want)
	}
}

// waitStopped waits until the replica's SQL thread stops, or it applies up to end.
func (r *replica) waitStopped(t *testing.T, end int64) map[string]string {
	t.Helper()
	return waitSlave(t, r.pod, "stopped", func(s map[string]string) bool {
		return s["Slave_SQL_Running"] == "No" || s["Exec_Master_Log_Pos"] == strconv.FormatInt(end, 10)
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// startAll starts pods side by side: most of a start is waiting for the disk.
func startAll(t *testing.T, pods ...*mariadb.Pod) {
	t.Helper()
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() { errs[i] = p.Start(ctx(t)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitSlave polls SHOW SLAVE STATUS until done accepts it, and returns that status.
func waitSlave(t *testing.T, r *mariadb.Pod, what string, done func(map[string]string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		rows := queryMaps(t, r.DB(), "SHOW SLAVE STATUS")
		if len(rows) == 1 && done(rows[0]) {
			return rows[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has not %s within a minute; status: %v", r.Name, what, rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loadFiles lists the SQL_LOAD files in the replica's load directory.
func loadFiles(t *testing.T, r *mariadb.Pod) []string {
	t.Helper()
	dir, err := r.Path(queryString(t, r.DB(), "SELECT @@slave_load_tmpdir"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "SQL_LOAD") {
			names = append(names, e.Name())
		}
	}
	return names
}

func tableChecksum(t *testing.T, db *sql.DB) string {
	t.Helper()
	return queryString(t, db, "SELECT CONCAT(COUNT(*), ' rows, checksum ', COALESCE(SUM(CRC32(CONCAT_WS(',', id, kind, payload))), 0)) FROM app.events")
}

// queryMaps runs a query and returns its rows as column → value.
func queryMaps(t *testing.T, db *sql.DB, query string) []map[string]string {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.QueryContext(c, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer func() { _ = rows.Close() }()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := make(map[string]string, len(cols))
		for i, c := range cols {
			m[c] = vals[i].String
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
