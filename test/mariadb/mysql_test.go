package mariadb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
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
		mustExec(t, db,
			"CREATE TABLE app.kept (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
			"INSERT INTO app.kept SELECT seq, "+text("seq", 4)+" FROM "+seq(10000))
		want := checksumKept(t, db)

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
