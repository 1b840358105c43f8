package mariadb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// statefulSet is a MariaDB StatefulSet as a chart writes it: the data directory on a
// volumeClaimTemplate, a memory limit, and the server's settings as args. The image names this
// machine's MariaDB release line, which stands in for it. The settings keep a server small and
// quick to initialize; args add to them.
func statefulSet(h *mariadb.Host, name string, args ...string) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/name": name}
	v := h.Server.Version
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "mariadb",
					Image: fmt.Sprintf("mariadb:%d.%d", v.Major, v.Minor),
					Args: append([]string{
						"--innodb-buffer-pool-size=32M",
						"--innodb-log-file-size=16M",
						"--innodb-buffer-pool-dump-at-shutdown=OFF",
						"--innodb-buffer-pool-load-at-startup=OFF",
					}, args...),
					Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/mysql"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					},
				},
			}},
		},
	}
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
