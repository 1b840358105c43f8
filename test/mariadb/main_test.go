package mariadb_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/mariadb"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func TestMain(m *testing.M) {
	mariadb.RunSandboxIfRequested()
	os.Exit(m.Run())
}

// newHost returns a host for t, removed when t ends, or skips t (fails it under strict mode) on a
// machine that cannot run pods.
func newHost(t *testing.T) *mariadb.Host {
	t.Helper()
	testenv.RequireRoot(t, "mount tmpfs volumes and run mariadbd in its own mount and PID namespaces")
	if _, err := mariadb.Check(); err != nil {
		testenv.SkipOrFail(t, "%v", err)
	}
	h, err := mariadb.NewHost("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("failed to clean up the host: %v", err)
		}
	})
	return h
}

// serverImages are the database test images the harness runs pods with beside this machine's
// MariaDB: their names under bin/images/root, unpacked by make images-databases.
var serverImages = []string{"mariadb-sid", "mysql-sid"}

// forEachServer runs f as a parallel subtest per database server, each on a host of its own: this
// machine's MariaDB packages (MariaDB 10.11 on Debian 12) and every database test image (MariaDB
// 11.8 and MySQL 9.7 from Debian's development suite). A server that cannot run skips its subtest
// (fails it under strict mode) with the reason.
func forEachServer(t *testing.T, f func(t *testing.T, h *mariadb.Host)) {
	t.Helper()
	testenv.RequireRoot(t, "mount tmpfs volumes and run database servers in their own mount and PID namespaces")
	type candidate struct {
		name   string
		server *mariadb.Server
		err    error
	}
	var all []candidate
	s, err := mariadb.Check()
	name := "MariaDB-machine"
	if err == nil {
		name = s.Name
	}
	all = append(all, candidate{name, s, err})
	for _, image := range serverImages {
		root, err := testenv.DatabaseImageRoot(image)
		var s *mariadb.Server
		if err == nil {
			s, err = mariadb.ImageServer(root)
		}
		name := image
		if err == nil {
			name = s.Name
		}
		all = append(all, candidate{name, s, err})
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.err != nil {
				testenv.SkipOrFail(t, "%v", c.err)
			}
			h, err := mariadb.NewHostFor(c.server, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := h.Close(); err != nil {
					t.Errorf("failed to clean up the host: %v", err)
				}
			})
			f(t, h)
		})
	}
}

// isMySQL reports whether the host runs MySQL rather than MariaDB.
func isMySQL(h *mariadb.Host) bool { return h.Server.Flavor == v1alpha1.FlavorMySQL }

// statefulSet is a database StatefulSet as a chart writes it for the host's server: its image, the
// data directory on a volumeClaimTemplate, a memory limit, and the server's settings as args. The
// settings keep a server small and quick to initialize; args add to them.
func statefulSet(h *mariadb.Host, name string, args ...string) *appsv1.StatefulSet {
	settings := []string{
		"--innodb-buffer-pool-size=32M",
		"--innodb-log-file-size=16M",
		"--innodb-buffer-pool-dump-at-shutdown=OFF",
		"--innodb-buffer-pool-load-at-startup=OFF",
	}
	if isMySQL(h) {
		// MySQL sizes its redo log with innodb_redo_log_capacity (8.0.30) and, from 8.0.13,
		// makes ten session temporary tablespaces at start; keep the binary log off as the
		// MariaDB servers have it by default.
		settings = []string{
			"--innodb-buffer-pool-size=32M",
			"--innodb-redo-log-capacity=16M",
			"--innodb-buffer-pool-dump-at-shutdown=OFF",
			"--innodb-buffer-pool-load-at-startup=OFF",
			"--skip-log-bin",
		}
	}
	var env []corev1.EnvVar
	if h.Server.Root != "" {
		// The image's entrypoint refuses an empty data directory without a root password or
		// this; the harness logs in as root over the socket.
		env = []corev1.EnvVar{{Name: "MYSQL_ALLOW_EMPTY_PASSWORD", Value: "1"}}
	}
	return testenv.StatefulSet("default", name, testenv.WithImage(h.Server.Image), testenv.WithArgs(append(settings, args...)...),
		testenv.WithEnv(env...), testenv.WithMemoryLimit(serverMemoryLimit(h)))
}

// serverMemoryLimit is the database container's memory limit: 1Gi, or on MySQL 2Gi, as the memory
// accounting counts the TempTable engine's default 1GiB there.
func serverMemoryLimit(h *mariadb.Host) string {
	if isMySQL(h) {
		return "2Gi"
	}
	return "1Gi"
}

// scratchVolume is a ScratchVolume as the API server stores it, defaults filled in.
func scratchVolume(target, size string, mode v1alpha1.InjectionMode, innodb v1alpha1.InnoDBTmpdirPlacement) *v1alpha1.ScratchVolume {
	return &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "scratch"},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: target},
			Size:    resource.MustParse(size),
			Purpose: v1alpha1.PurposeMySQLTmpdir,
			MySQL:   &v1alpha1.MySQLSpec{Injection: mode, InnoDBTmpdir: innodb},
			Memory:  v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryValidate},
		},
	}
}

// newPod injects sv into sts on h, failing t when the controller would refuse to.
func newPod(t *testing.T, h *mariadb.Host, sts *appsv1.StatefulSet, sv *v1alpha1.ScratchVolume) *mariadb.Pod {
	t.Helper()
	pod, err := h.NewPod(sts, sv)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func start(t *testing.T, pod *mariadb.Pod) {
	t.Helper()
	if err := pod.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

func startPod(t *testing.T, h *mariadb.Host, sts *appsv1.StatefulSet, sv *v1alpha1.ScratchVolume) *mariadb.Pod {
	t.Helper()
	pod := newPod(t, h, sts, sv)
	start(t, pod)
	return pod
}

// ctx bounds one step of a test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

func mustExec(t *testing.T, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := db.ExecContext(ctx(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func queryString(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRowContext(ctx(t), query).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s.String
}

func queryInt(t *testing.T, db *sql.DB, query string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(ctx(t), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
