//go:build realnode

package realnode_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/realnode"
)

// childDirEnv tells the test binary it is the child of TestCleanupAfterKill, and where to work.
const childDirEnv = "DBTUNE_REALNODE_CHILD_DIR"

// TestCleanupAfterKill kills (SIGKILL, so no cleanup of its own runs) a test binary whose node runs
// a pod, and checks that Cleanup, which Start also runs first, restores the machine from the state
// file: the container and its shim keep running after such a kill, with their mounts, cgroups, the
// bridge and the changed kernel settings.
func TestCleanupAfterKill(t *testing.T) {
	e := requireEnv(t)
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestKilledNodeChild$", "-test.v", "-test.timeout=10m")
	child.Env = append(os.Environ(), childDirEnv+"="+dir)
	logPath := filepath.Join(dir, "child.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	child.Stdout, child.Stderr = logFile, logFile
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	readyFile := filepath.Join(dir, "ready")
	waitFor(t, 5*time.Minute, "the child's node to run a pod", func() (bool, string) {
		select {
		case err := <-exited:
			t.Fatalf("the child exited (%v):\n%s", err, localcluster.Tail(logPath, 40))
		default:
		}
		_, err := os.Stat(readyFile)
		return err == nil, localcluster.Tail(logPath, 3)
	})
	_ = child.Process.Kill()
	t.Logf("killed the child (%v); the end of its log:\n%s", <-exited, localcluster.Tail(logPath, 8))

	nodeDir := filepath.Join(dir, "cluster", "realnode")
	// The control plane and the node's daemons got SIGTERM when their parent died; make sure.
	if err := localcluster.Down(filepath.Join(dir, "cluster")); err != nil {
		t.Errorf("failed to stop the child's control plane: %v", err)
	}
	left, err := realnode.Leftovers(nodeDir, e.absent)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) == 0 {
		t.Fatal("the killed node left nothing behind: this test would prove nothing")
	}
	t.Logf("the killed node left: %s", strings.Join(left, "; "))
	if err := realnode.Cleanup(t.Logf); err != nil {
		t.Fatal(err)
	}
	assertRestored(t, e, nodeDir)
}

// TestKilledNodeChild is the child of TestCleanupAfterKill: it starts a cluster and a node, runs a
// pod, says so and waits to be killed. It skips unless run as that child.
func TestKilledNodeChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestCleanupAfterKill")
	}
	e := requireEnv(t)
	ctx := context.Background()
	c := startCluster(ctx, t, e, filepath.Join(dir, "cluster"))
	// Not in a t.TempDir: this process is killed, so its own cleanups never run.
	node := startNode(ctx, t, e, c, filepath.Join(dir, "images"))
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	runTmpfsPod(ctx, t, cs, createNamespace(ctx, t, cs), node.Name(), "killed", "96Mi", "64Mi")
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Minute) // until killed
}
