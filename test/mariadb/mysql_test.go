package mariadb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/mariadb"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestFullSessionTablespaceStopsMySQL records what MySQL does when an on-disk internal temporary
// table fills the RAM volume that holds its session temporary tablespaces: MySQL 9.7.4 does not
// return an error to the query, as it does for a sort file (TestFullTmpfs), but fails an InnoDB
// assertion and stops — every session of the server ends with it. Committed data survives the
// crash recovery of the next start. docs/tuning.md sizes the volume for this; should a MySQL
// release turn it into an error for the query alone, this test fails and the advice changes.
func TestFullSessionTablespaceStopsMySQL(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, h *mariadb.Host) {
		if !isMySQL(h) {
			t.Skipf("%s keeps its on-disk internal temporary tables in tmpdir (TestFullTmpfs)", h.Server.Name)
		}
		sts := statefulSet(h, "fullibt", "--skip-networking")
		pod := startPod(t, h, sts, scratchVolume(sts.Name, "16Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
		db := pod.DB()
		fillRows(t, db, 100000)
		want := keep(t, db, 10000)

		conn, err := db.Conn(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		// A GROUP BY whose TempTable table outgrows tmp_table_size becomes an InnoDB table in
		// the session temporary tablespace, on the 16 MiB volume.
		mustExec(t, conn, "SET SESSION tmp_table_size = 1024")
		_, err = queryAll(ctx(t), conn, "SELECT payload, COUNT(*) AS c FROM app.rows GROUP BY payload")
		endSession(conn)
		testenv.Eventually(t, 2*time.Minute, func() string {
			if pod.Running() {
				return fmt.Sprintf("MySQL %s is still running after the query got %v: if it now fails only the query, update docs/tuning.md and this test", h.Server.Version, err)
			}
			return ""
		})
		log := pod.Log(pod.Container)
		for _, line := range []string{"No space left on device", "Assertion failure"} {
			if !strings.Contains(log, line) {
				t.Errorf("the server's log does not say %q:\n%s", line, tail(log, 30))
			}
		}
		t.Logf("The query got %v; the server stopped with:\n%s", err, assertionLines(log))

		// The kubelet starts the container again; InnoDB recovers the committed data.
		stop, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = pod.Stop(stop) // reports the server's crash, which is what this test provoked
		start(t, pod)
		if got := checksumKept(t, pod.DB()); got != want {
			t.Errorf("committed data changed across the crash: %s, want %s", got, want)
		}
	})
}

// assertionLines are the lines of a server log that tell why it stopped.
func assertionLines(log string) string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "[ERROR]") || strings.Contains(line, "Assertion") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestMySQLMemoryCharges measures, under MySQL's defaults, what the memory accounting must cover:
// the server's own memory after start beside its buffer pool, what an in-memory internal temporary
// table of the TempTable engine adds (its default temptable_max_ram is 1GiB), and what a full RAM
// volume adds, all as the container's memory cgroup charges them. It checks that each is charged
// and reports the figures against what accounting: Validate assumed when it admitted the pod.
func TestMySQLMemoryCharges(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, h *mariadb.Host) {
		if !isMySQL(h) {
			t.Skipf("%s has no TempTable engine; its in-memory temporary tables are MEMORY tables, each bounded by tmp_table_size", h.Server.Name)
		}
		const (
			limit  = 2 << 30
			volume = 256 << 20
			rows   = 250000
		)
		sts := statefulSet(h, "memory", "--skip-networking")
		sts.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(limit, resource.BinarySI)}
		sv := scratchVolume(sts.Name, "256Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk)
		need, err := inject.MemoryNeed(sv, &sts.Spec.Template.Spec.Containers[0])
		if err != nil {
			t.Fatal(err)
		}
		pod := startPod(t, h, sts, sv)
		db := pod.DB()
		mustExec(t, db,
			"CREATE DATABASE app",
			"CREATE TABLE app.wide (id INT PRIMARY KEY, payload VARCHAR(1200)) ENGINE=InnoDB",
			fmt.Sprintf("INSERT INTO app.wide SELECT seq, %s FROM %s", mariadb.SeqText(125), mariadb.Seq(rows)))
		base := logUsage(t, pod, "after start and load")
		maxRAM := queryInt(t, db, "SELECT @@temptable_max_ram")

		// An in-memory TempTable table of every row: tmp_table_size no longer bounds it.
		conn, err := db.Conn(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, conn, "SET SESSION tmp_table_size = 4294967296")
		ramBefore := queryInt(t, db, "SELECT CURRENT_NUMBER_OF_BYTES_USED FROM performance_schema.memory_summary_global_by_event_name WHERE EVENT_NAME = 'memory/temptable/physical_ram'")
		countRows(t, conn, "SELECT payload, COUNT(*) FROM app.wide GROUP BY payload")
		ramPeak := queryInt(t, db, "SELECT HIGH_NUMBER_OF_BYTES_USED FROM performance_schema.memory_summary_global_by_event_name WHERE EVENT_NAME = 'memory/temptable/physical_ram'")
		temptable := logUsage(t, pod, "after a GROUP BY held in TempTable memory")
		endSession(conn)

		// A user's temporary table holds most of the volume, in the session's temporary tablespace,
		// for as long as the session lasts (filling it would stop the server, see above).
		conn, err = db.Conn(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		tmpdir := pod.Plans[0].Layout.TmpDir
		emptyVolume := tmpfsUsed(t, pod, tmpdir)
		mustExec(t, conn, fmt.Sprintf("CREATE TEMPORARY TABLE app.held ENGINE=InnoDB AS SELECT * FROM app.wide WHERE id <= %d", rows*3/4))
		held := tmpfsUsed(t, pod, tmpdir) - emptyVolume
		filled := logUsage(t, pod, "with a temporary table on the volume")
		endSession(conn)

		// The GROUP BY's rows are about 1 KiB each: TempTable held at least that much.
		if charged := temptable.PeakBytes - base.CurrentBytes; charged < rows*1000 {
			t.Errorf("the cgroup's peak rose by %d MiB while TempTable held %d rows of 1 KiB (the engine counts %d MiB): its memory was not charged to the container",
				charged>>20, rows, (ramPeak-ramBefore)>>20)
		}
		if held < volume/2 {
			t.Errorf("the temporary table put only %d MiB on the %d MiB volume", held>>20, volume>>20)
		}
		if charged := filled.CurrentBytes - base.CurrentBytes; charged < held*9/10 {
			t.Errorf("the cgroup's charge rose by %d MiB with %d MiB more on the volume: its pages were not charged to the container", charged>>20, held>>20)
		}
		bufferPool := queryInt(t, db, "SELECT @@innodb_buffer_pool_size")
		worst := base.CurrentBytes + maxRAM + volume
		t.Logf("MySQL %s with a %d MiB buffer pool: %d MiB charged after start and a load of %d rows; a GROUP BY held in TempTable memory raised the peak by %d MiB (the engine counts %d MiB allocated; temptable_max_ram %d MiB); a temporary table of %d MiB on the volume raised the charge by %d MiB. "+
			"Validate admitted a %d MiB limit for a need of %d MiB (volume + buffer pool + headroom); the server after start plus temptable_max_ram plus a full volume is %d MiB.",
			h.Server.Version, bufferPool>>20, base.CurrentBytes>>20, rows, (temptable.PeakBytes-base.CurrentBytes)>>20, (ramPeak-ramBefore)>>20, maxRAM>>20,
			held>>20, (filled.CurrentBytes-base.CurrentBytes)>>20, limit>>20, need.Value()>>20, worst>>20)
	})
}
