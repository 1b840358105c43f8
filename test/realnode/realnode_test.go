//go:build realnode

package realnode_test

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/realnode"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// env is what every test here needs: the repository, the binaries' directories and the machine's
// state before anything started.
type env struct {
	root, binDir, containerdDir string
	sysctls                     map[string]string
	absent                      []string
}

// requireEnv skips (fails in strict mode) without root, the binaries or Debian's runc, CNI plugins
// and busybox-static, and otherwise records the machine's state.
func requireEnv(t *testing.T) env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane, containerd and a kubelet")
	}
	testenv.RequireRoot(t, "run containerd, a kubelet and containers")
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	e := env{root: root}
	if e.binDir, e.containerdDir, err = realnode.DefaultDirs(root); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(append([]string{}, localcluster.Binaries...), realnode.KubeletBinaries...) {
		requireFile(t, filepath.Join(e.binDir, name), "run `hack/k8s-binaries.sh all node` (minutes when cold)")
	}
	for _, name := range realnode.ContainerdBinaries {
		requireFile(t, filepath.Join(e.containerdDir, name), "run `hack/k8s-binaries.sh node` (minutes when cold)")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		testenv.SkipOrFail(t, "runc is not installed: apt-get install runc")
	}
	requireFile(t, "/usr/lib/cni/bridge", "apt-get install containernetworking-plugins")
	requireFile(t, realnode.DefaultBusybox, "apt-get install busybox-static")
	if e.sysctls, err = realnode.ReadKernelSettings(); err != nil {
		t.Fatal(err)
	}
	e.absent = realnode.AbsentHostPaths()
	return e
}

func requireFile(t *testing.T, path, fix string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		testenv.SkipOrFail(t, "%s is missing: %s", path, fix)
	}
}

// startCluster starts a control plane with two fake nodes, stopped when the test ends.
func startCluster(ctx context.Context, t *testing.T, e env, dir string) *localcluster.Cluster {
	t.Helper()
	return startClusterWith(ctx, t, e, dir, nil)
}

// startClusterWith is startCluster with options changed by change.
func startClusterWith(ctx context.Context, t *testing.T, e env, dir string, change func(*localcluster.Options)) *localcluster.Cluster {
	t.Helper()
	opts := localcluster.Options{
		BinDir: e.binDir, Dir: dir, Nodes: localcluster.DefaultNodes(2), Logf: t.Logf,
	}
	if change != nil {
		change(&opts)
	}
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Processes() {
				t.Logf("the end of %s:\n%s", p.Log, localcluster.Tail(p.Log, 30))
			}
		}
		_ = c.Stop()
	})
	return c
}

// startNode builds the pause image into imageDir and starts a real node in the cluster.
func startNode(ctx context.Context, t *testing.T, e env, c *localcluster.Cluster, imageDir string) *realnode.Node {
	t.Helper()
	pause, err := realnode.BuildPauseImage(ctx, e.root, realnode.DefaultBusybox, imageDir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := realnode.Start(ctx, realnode.Options{
		Cluster: c, BinDir: e.binDir, ContainerdDir: e.containerdDir, PauseImage: pause, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	return n
}

// assertRestored checks that the machine is as it was before the node: kernel settings, cgroups,
// mounts, bridge, shims and fixed paths.
func assertRestored(t *testing.T, e env, nodeDir string) {
	t.Helper()
	now, err := realnode.ReadKernelSettings()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range e.sysctls {
		if now[name] != want {
			t.Errorf("sysctl %s is %s after Stop, was %s before the node", name, now[name], want)
		}
	}
	left, err := realnode.Leftovers(nodeDir, e.absent)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		t.Errorf("left on the machine after Stop: %s", l)
	}
}

func signalContext(t *testing.T) context.Context {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	t.Cleanup(cancel)
	return ctx
}

func nodesReady(ctx context.Context, cs kubernetes.Interface) (ready, all []string, err error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, n := range nodes.Items {
		all = append(all, n.Name)
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, n.Name)
			}
		}
	}
	return ready, all, nil
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, timeout, func() string {
		ok, state := cond()
		if ok {
			return ""
		}
		return what + "; last seen: " + state
	})
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
