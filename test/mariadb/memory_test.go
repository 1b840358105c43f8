package mariadb_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/mariadb"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// memoryLimit is the database container's limits.memory in these tests: small enough that the sort
// below needs more than it, large enough for the server (about 100 MiB with a 32 MiB buffer pool).
const memoryLimit = 256 << 20

// bigSort sorts about 430 MB of rows: with a small sort buffer, a filesort that merges through
// temporary files in tmpdir, well over memoryLimit. The derived table's LIMIT, larger than the
// row count, keeps the ORDER BY from being dropped without turning it into an in-memory top-N.
const bigSort = "SELECT SUM(LENGTH(pad)) FROM (SELECT seq, REPEAT(MD5(seq), 30) AS pad FROM app.seq_1_to_450000 ORDER BY pad LIMIT 100000000) AS sorted"

// bigSortBytes is a lower bound of what bigSort writes to tmpdir: its rows, once.
const bigSortBytes = 450000 * 960

// TestMemoryLimitKillsTmpfsFill fills a RAM tmpdir past the container's memory limit. tmpfs pages
// are charged to the memory cgroup of the process that writes them and cannot be reclaimed without
// swap, so the kernel OOM-kills the server, as a kubelet's cgroup would. Without the cgroup the
// same sort would succeed: the tmpfs is four times the size of the limit.
func TestMemoryLimitKillsTmpfsFill(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	sts := limitedStatefulSet(h, "oomtmpfs")
	sv := scratchVolume(sts.Name, "1Gi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk)
	// Ignore, so that only the kernel stands between the fill and the limit: the controller would
	// refuse a volume larger than the container's limit otherwise.
	sv.Spec.Memory.Accounting = v1alpha1.MemoryIgnore
	pod := startPod(t, h, sts, sv)
	logUsage(t, pod, "after start")

	conn, err := pod.DB().Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "CREATE DATABASE IF NOT EXISTS app", "SET SESSION sort_buffer_size = 32768")
	var sum int64
	err = conn.QueryRowContext(ctx(t), bigSort).Scan(&sum)
	_ = conn.Close()
	if err == nil {
		t.Fatalf("the sort of %d MiB in a RAM tmpdir succeeded in a container limited to %d MiB: the memory limit was not applied",
			bigSortBytes>>20, memoryLimit>>20)
	}
	t.Logf("The sort failed as expected: %v", err)
	stopAfterFailure(t, pod)
	u := logUsage(t, pod, "after the sort")
	if u.OOMKills == 0 {
		t.Errorf("the sort failed but the memory cgroup counts no OOM kill: %+v", u)
	}
	if u.PeakBytes < memoryLimit*9/10 {
		t.Errorf("the cgroup's peak is %d MiB, short of the %d MiB limit the fill should have reached", u.PeakBytes>>20, memoryLimit>>20)
	}
}

// TestMemoryLimitBoundsPageCache runs the same sort with tmpdir on the disk. The page cache of the
// temporary files is charged to the container too, but clean pages can be dropped and dirty ones
// written back, so the sort completes while the charge stays within the limit, and gets close to it:
// the server alone is far below it, so the page cache must have been counted.
func TestMemoryLimitBoundsPageCache(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	sts := limitedStatefulSet(h, "pagecache")
	pod, err := h.NewPod(sts)
	if err != nil {
		t.Fatal(err)
	}
	start(t, pod)
	before := logUsage(t, pod, "after start")

	conn, err := pod.DB().Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	mustExec(t, conn, "CREATE DATABASE IF NOT EXISTS app", "SET SESSION sort_buffer_size = 32768")
	var sum int64
	if err := conn.QueryRowContext(ctx(t), bigSort).Scan(&sum); err != nil {
		t.Fatalf("the sort with tmpdir on disk failed: %v", err)
	}
	u := logUsage(t, pod, "after the sort")
	if u.OOMKills != 0 || u.PeakBytes > memoryLimit {
		t.Errorf("the sort on disk went past the limit: %+v", u)
	}
	if u.PeakBytes-before.CurrentBytes < (memoryLimit-before.CurrentBytes)/2 {
		t.Errorf("the cgroup's peak (%d MiB) rose less than half-way from the server's %d MiB to the %d MiB limit while %d MiB of temporary files were written: their page cache was not charged to the container",
			u.PeakBytes>>20, before.CurrentBytes>>20, memoryLimit>>20, bigSortBytes>>20)
	}
}

// limitedStatefulSet is statefulSet with the database container limited to memoryLimit.
func limitedStatefulSet(h *mariadb.Host, name string) *appsv1.StatefulSet {
	sts := statefulSet(h, name, "--skip-networking")
	sts.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		corev1.ResourceMemory: *resource.NewQuantity(memoryLimit, resource.BinarySI),
	}
	return sts
}

func logUsage(t *testing.T, pod *mariadb.Pod, when string) mariadb.MemoryUsage {
	t.Helper()
	u, err := pod.MemoryUsage()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Memory cgroup %s: %d MiB charged, peak %d MiB, limit %d MiB, %d OOM kills",
		when, u.CurrentBytes>>20, u.PeakBytes>>20, u.LimitBytes>>20, u.OOMKills)
	return u
}

// stopAfterFailure stops a pod whose server died: the sandbox reports the unrequested exit, which is
// what the test expects.
func stopAfterFailure(t *testing.T, pod *mariadb.Pod) {
	t.Helper()
	if err := pod.Stop(ctx(t)); err != nil {
		t.Logf("The pod stopped after its server died: %v", tail(err.Error(), 5))
	}
}

// TestStaleCgroupsRemoved leaves the memory cgroups a killed test process would, named after a
// process that has exited, and checks that the next host removes them.
func TestStaleCgroupsRemoved(t *testing.T) {
	testenv.RequireRoot(t, "create memory cgroups")
	root := memoryCgroupRoot(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, "dbtune-mariadb", fmt.Sprintf("%d-dbtune-mariadb-killed", dead.Process.Pid))
	run := filepath.Join(stale, "db-0-1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	newHost(t)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(run)
		_ = os.Remove(stale)
		t.Fatalf("the cgroup %s of exited process %d is still there after the next host started (%v)", stale, dead.Process.Pid, err)
	}
}

// memoryCgroupRoot is the root of the memory controller's hierarchy, v2 or v1.
func memoryCgroupRoot(t *testing.T) string {
	t.Helper()
	if raw, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(string(raw), "memory") {
		return "/sys/fs/cgroup"
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		return "/sys/fs/cgroup/memory"
	}
	testenv.SkipOrFail(t, "no cgroup memory controller under /sys/fs/cgroup")
	return ""
}
