package mariadb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
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

// TestReplicaLoadDir is the replication story behind the design, run on each server against two
// statement-based replicas of one primary: one with the operator's layout (the replica load
// directory on the data volume), one hand-tuned with everything temporary, the load directory too,
// on the tmpfs.
//
// A replica applies a LOAD DATA INFILE event by event: Begin_load_query and each Append_block write
// the file's blocks to an SQL_LOAD-* file in the load directory (slave_load_tmpdir on MariaDB,
// replica_load_tmpdir on MySQL), and Execute_load_query loads it. The table is MyISAM so that
// nothing is transactional; both servers wrap the group in BEGIN…COMMIT anyway.
func TestReplicaLoadDir(t *testing.T) {
	t.Parallel()
	forEachServer(t, testReplicaLoadDir)
}

func testReplicaLoadDir(t *testing.T, h *mariadb.Host) {
	primaryPort := freePort(t)
	// The CSV files are written to the data volume; MySQL's image confines LOAD DATA INFILE to
	// /var/lib/mysql-files unless told otherwise.
	primary := newPod(t, h, statefulSet(h, "primary", "--server-id=1", "--log-bin=primary-bin", "--binlog-format=STATEMENT",
		"--secure-file-priv=/var/lib/mysql", "--bind-address=127.0.0.1", fmt.Sprintf("--port=%d", primaryPort)),
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
	loadOption := naive.pod.Plans[0].Profile.ReplicaLoadOption
	c := naive.pod.DatabaseContainer()
	c.Args = append(c.Args, "--"+loadOption+"="+naive.pod.Plans[0].Layout.TmpDir)
	startAll(t, primary, operator.pod, naive.pod)
	if got := queryString(t, naive.pod.DB(), "SELECT @@"+loadOption); got != naive.pod.Plans[0].Layout.TmpDir {
		t.Fatalf("the naive replica's %s is %s, not the tmpfs", loadOption, got)
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
		if s["Replica_SQL_Running"] != "No" || s["Last_SQL_Errno"] == "0" {
			t.Fatalf("the naive replica staged a %d-byte LOAD DATA in a %s tmpfs without an error: the test no longer shows why the load directory must stay on disk",
				size, replicaScratchSize)
		}
		errno, msg := applierError(t, naive.pod, s)
		t.Logf("The naive replica stopped: error %s: %s", errno, msg)
		// MariaDB reports the write's errno, ENOSPC, as the error number; MySQL reports its own
		// error 3 (Error writing file) with the errno in the message.
		tmp := naive.pod.Plans[0].Layout.TmpDir
		noSpace := errno == strconv.Itoa(int(unix.ENOSPC))
		if naive.pod.Plans[0].Profile.Flavor == v1alpha1.FlavorMySQL {
			noSpace = errno == "3" && strings.Contains(msg, fmt.Sprintf("(OS errno %d - ", unix.ENOSPC))
		}
		if !noSpace || !strings.Contains(msg, tmp+"/SQL_LOAD-") {
			t.Errorf("replication stopped with error %s: %s; want %d (no space) writing an SQL_LOAD file in %s", errno, msg, unix.ENOSPC, tmp)
		}
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
		s := waitReplica(t, r.pod, "applied the half of the LOAD DATA it received", func(s map[string]string) bool {
			if s["Read_Source_Log_Pos"] != received {
				received, since = s["Read_Source_Log_Pos"], time.Now()
				return false
			}
			return time.Since(since) > 500*time.Millisecond && received != strconv.FormatInt(groupStart, 10) &&
				strings.Contains(s["Replica_SQL_Running_State"], "waiting for more")
		})
		read, _ := strconv.ParseInt(s["Read_Source_Log_Pos"], 10, 64)
		if s["Exec_Source_Log_Pos"] != strconv.FormatInt(groupStart, 10) || read <= groupStart || read >= end {
			t.Fatalf("%s replica: executed to %s, received to %d; want inside the group %d-%d", r.layout, s["Exec_Source_Log_Pos"], read, groupStart, end)
		}
		if files := loadFiles(t, r.pod); len(files) != 1 {
			t.Fatalf("%s replica: want the partly written SQL_LOAD file in its load directory, found %q", r.layout, files)
		}
		if got := queryInt(t, r.pod.DB(), "SELECT COUNT(*) FROM app.events"); got != 0 {
			t.Fatalf("%s replica: %d rows loaded before the group was complete", r.layout, got)
		}
	}
	stopAll(t, replicas)
	kept, err := filepath.Glob(filepath.Join(replicas[0].pod.ClaimDir("data"), mysql.PersistentDirName, "replica-load", "SQL_LOAD-*"))
	if err != nil || len(kept) != 1 {
		t.Errorf("the operator replica's SQL_LOAD file did not survive the restart on the data volume: %q %v", kept, err)
	}
	startAll(t, replicas[0].pod, replicas[1].pod)
	for _, r := range replicas {
		r.waitCaughtUp(t, src, end)
	}
}

// stopAll stops the replicas' pods side by side as the kubelet does: SIGTERM, and SIGKILL when the
// pod's termination grace period (30 seconds unless the template says) is over. MySQL's SQL thread,
// stopped inside a group that changed a non-transactional table, waits up to 60 seconds for the
// rest of the group before it gives up (MySQL reference manual, STOP REPLICA), so a MySQL replica
// holding half of a LOAD DATA outlives the default grace period and is killed.
func stopAll(t *testing.T, replicas []*replica) {
	t.Helper()
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Go(func() {
			grace := 30 * time.Second
			if s := r.pod.Template.Spec.TerminationGracePeriodSeconds; s != nil {
				grace = time.Duration(*s) * time.Second
			}
			c, cancel := context.WithTimeout(ctx(t), grace)
			defer cancel()
			begin := time.Now()
			err := r.pod.Stop(c)
			killed := errors.Is(err, context.DeadlineExceeded)
			switch {
			case killed:
				t.Logf("The %s replica's pod, stopped with half of the LOAD DATA applied, was killed after its %v grace period.", r.layout, grace)
			case err != nil:
				t.Error(err)
			default:
				t.Logf("The %s replica's pod, stopped with half of the LOAD DATA applied, shut down in %v.", r.layout, time.Since(begin).Round(100*time.Millisecond))
			}
			r.link.Unlimit()
			if r.pod.Plans[0].Profile.Flavor != v1alpha1.FlavorMySQL {
				return
			}
			// What docs/tuning.md says of MySQL replicas: the coordinator defers its exit to the
			// end of the group (MY-010584), which never comes, and the kubelet kills the server.
			const deferred = "[MY-010584]"
			if !killed || !strings.Contains(r.pod.Log(r.pod.Container), deferred) {
				t.Errorf("the %s MySQL replica: killed after the grace period %t, %s in its log %t; want both: the documented shutdown no longer happens",
					r.layout, killed, deferred, strings.Contains(r.pod.Log(r.pod.Container), deferred))
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
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
		mustExec(t, r.pod.DB(), changeSource(r.pod, r.link.Port(), src.file, start), startReplica(r.pod))
		r.waitCaughtUp(t, src, end)
	}
	return src
}

// newSpelling reports whether the pod's server speaks of sources and replicas only: MySQL 8.4
// removed CHANGE MASTER TO, START SLAVE, SHOW SLAVE STATUS and SHOW MASTER STATUS, which MariaDB
// keeps (MySQL 8.4 reference manual, "What Is New in MySQL 8.4": features removed).
func newSpelling(pod *mariadb.Pod) bool {
	v := pod.Plans[0].Profile.Version
	return pod.Plans[0].Profile.Flavor == v1alpha1.FlavorMySQL && (v.Major > 8 || v.Major == 8 && v.Minor >= 4)
}

// changeSource points a replica at the primary's log from file:pos, by position. MySQL's default
// authentication, caching_sha2_password, needs TLS or the source's RSA key to log in; the replica
// asks for the key.
func changeSource(replica *mariadb.Pod, port int, file string, pos int64) string {
	if newSpelling(replica) {
		return fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='repl', "+
			"SOURCE_PASSWORD='repl', SOURCE_LOG_FILE='%s', SOURCE_LOG_POS=%d, GET_SOURCE_PUBLIC_KEY=1", port, file, pos)
	}
	return fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='repl', MASTER_PASSWORD='repl', "+
		"MASTER_LOG_FILE='%s', MASTER_LOG_POS=%d, MASTER_USE_GTID=no", port, file, pos)
}

func startReplica(replica *mariadb.Pod) string {
	if newSpelling(replica) {
		return "START REPLICA"
	}
	return "START SLAVE"
}

func masterStatus(t *testing.T, primary *mariadb.Pod) map[string]string {
	t.Helper()
	query := "SHOW MASTER STATUS"
	if newSpelling(primary) {
		query = "SHOW BINARY LOG STATUS"
	}
	rows := queryMaps(t, primary.DB(), query)
	if len(rows) != 1 {
		t.Fatalf("%s returned %d rows: is the binary log on?", query, len(rows))
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
	// MariaDB's GTID event opens the group; MySQL logs a BEGIN query after it. The group ends with
	// COMMIT on both.
	want := []string{"Gtid", "Begin_load_query", "Append_block", "Execute_load_query", "Query"}
	if s.pod.Plans[0].Profile.Flavor == v1alpha1.FlavorMySQL {
		want = slices.Insert(want, 1, "Query")
	}
	if !slices.Equal(kinds, want) {
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
	s := waitReplica(t, r.pod, fmt.Sprintf("applied %s:%d", src.file, end), func(s map[string]string) bool {
		return (s["Relay_Source_Log_File"] == src.file && s["Exec_Source_Log_Pos"] == strconv.FormatInt(end, 10)) ||
			s["Replica_SQL_Running"] == "No"
	})
	if s["Replica_SQL_Running"] != "Yes" || s["Last_SQL_Errno"] != "0" {
		t.Fatalf("%s replica: replication stopped: error %s: %s", r.layout, s["Last_SQL_Errno"], s["Last_SQL_Error"])
	}
	if got, want := tableChecksum(t, r.pod.DB()), tableChecksum(t, src.pod.DB()); got != want {
		t.Fatalf("%s replica has %s, the primary %s", r.layout, got, want)
	}
}

// applierError is the error that stopped a replica's SQL thread. MySQL applies with worker threads
// (replica_parallel_workers is 4 by default from 8.0.27), and the status shows only that the
// coordinator stopped; the worker's own error is in performance_schema.
func applierError(t *testing.T, r *mariadb.Pod, status map[string]string) (errno, msg string) {
	t.Helper()
	if r.Plans[0].Profile.Flavor == v1alpha1.FlavorMySQL {
		for _, w := range queryMaps(t, r.DB(), "SELECT LAST_ERROR_NUMBER, LAST_ERROR_MESSAGE "+
			"FROM performance_schema.replication_applier_status_by_worker WHERE LAST_ERROR_NUMBER <> 0") {
			return w["LAST_ERROR_NUMBER"], w["LAST_ERROR_MESSAGE"]
		}
	}
	return status["Last_SQL_Errno"], status["Last_SQL_Error"]
}

// waitStopped waits until the replica's SQL thread stops, or it applies up to end.
func (r *replica) waitStopped(t *testing.T, end int64) map[string]string {
	t.Helper()
	return waitReplica(t, r.pod, "stopped", func(s map[string]string) bool {
		return s["Replica_SQL_Running"] == "No" || s["Exec_Source_Log_Pos"] == strconv.FormatInt(end, 10)
	})
}

// freePort returns a loopback port free now, below the kernel's ephemeral range: a server binds it
// seconds later, after its initialization, and a port of that range could meanwhile become the
// source port of any connection on the machine (the API servers of tests running beside these
// ones make many), which would stop the server with "Address already in use". Ports are handed
// out once per process.
func freePort(t *testing.T) int {
	t.Helper()
	low := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		port := 10000 + rand.IntN(low-10000)
		if portsGiven[port] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		_ = l.Close()
		portsGiven[port] = true
		return port
	}
	t.Fatalf("found no free loopback port between 10000 and %d", low)
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

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

// waitReplica polls the replica's status until done accepts it, and returns that status. The
// columns are named as MySQL 8.0.22 and later name them (Replica_SQL_Running, Exec_Source_Log_Pos);
// MariaDB's Slave and Master are renamed to match.
func waitReplica(t *testing.T, r *mariadb.Pod, what string, done func(map[string]string) bool) map[string]string {
	t.Helper()
	query := "SHOW SLAVE STATUS"
	if newSpelling(r) {
		query = "SHOW REPLICA STATUS"
	}
	rename := strings.NewReplacer("Slave", "Replica", "Master", "Source")
	deadline := time.Now().Add(time.Minute)
	for {
		rows := queryMaps(t, r.DB(), query)
		for _, row := range rows {
			for k, v := range row {
				row[rename.Replace(k)] = v
			}
		}
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
	dir, err := r.Path(queryString(t, r.DB(), "SELECT @@"+r.Plans[0].Profile.ReplicaLoadOption))
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
