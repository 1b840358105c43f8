package localcluster_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestStatefulSetRollsOutAndStopLeavesNothing proves what the e2e tests and the demo rely on: a
// StatefulSet with a volumeClaimTemplate gets Bound claims and Running pods on the fake nodes, every
// component listens on loopback only, and Stop leaves no process and no listening port behind.
func TestStatefulSetRollsOutAndStopLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane")
	}
	binDir := requireBinaries(t)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	start := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, Dir: t.TempDir(), Nodes: localcluster.DefaultNodes(2), PersistentVolumes: 2, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Processes() {
				t.Logf("the end of %s:\n%s", p.Log, localcluster.Tail(p.Log, 20))
			}
		}
		_ = c.Stop()
	})
	t.Logf("started in %s", time.Since(start).Round(time.Millisecond))
	procs := c.Processes()
	listening := listeningAddresses(t, procs)
	for _, addr := range listening {
		if !addr.IP.IsLoopback() {
			t.Errorf("a cluster process listens on %s, which is not a loopback address", addr)
		}
	}

	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	web := testenv.StatefulSet("default", "web", testenv.WithReplicas(2))
	if _, err := cs.AppsV1().StatefulSets("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, "2 Running pods and 2 Bound claims", func() (bool, string) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=web"})
		if err != nil {
			return false, err.Error()
		}
		claims, err := cs.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running, bound := 0, 0
		var seen []string
		for _, p := range pods.Items {
			seen = append(seen, p.Name+"="+string(p.Status.Phase)+"@"+p.Spec.NodeName)
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		for _, pvc := range claims.Items {
			seen = append(seen, pvc.Name+"="+string(pvc.Status.Phase))
			if pvc.Status.Phase == corev1.ClaimBound {
				bound++
			}
		}
		return running == 2 && bound == 2, strings.Join(seen, " ")
	})
	t.Logf("rolled out %s after start", time.Since(start).Round(time.Millisecond))

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if err := syscall.Kill(p.PID, 0); err == nil {
			t.Errorf("%s (pid %d) still runs after Stop", p.Name, p.PID)
		}
	}
	for _, addr := range listening {
		if conn, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("%s still accepts connections after Stop", addr)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), "state.json")); !os.IsNotExist(err) {
		t.Errorf("the state file is still there after Stop (stat: %v)", err)
	}
}

// requireBinaries returns the folder hack/k8s-binaries.sh builds into, or skips (fails in CI) when
// any binary the cluster needs is missing there.
func requireBinaries(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := localcluster.DefaultBinDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range localcluster.Binaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			testenv.SkipOrFail(t, "%s is not built in %s: run `hack/k8s-binaries.sh all` (minutes when cold)", name, dir)
		}
	}
	return dir
}

func waitUntil(ctx context.Context, t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	last := ""
	for {
		ok, state := check()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s (%v); last seen: %s", what, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// listeningAddresses returns the TCP addresses the processes listen on, from their socket file
// descriptors and the kernel's socket tables.
func listeningAddresses(t *testing.T, procs []localcluster.Process) []*net.TCPAddr {
	t.Helper()
	inodes := map[string]bool{}
	for _, p := range procs {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.PID))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p.PID, fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
			}
		}
	}
	var addrs []*net.TCPAddr
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			const listen = "0A"
			if len(fields) < 10 || fields[3] != listen || !inodes[fields[9]] {
				continue
			}
			addrs = append(addrs, parseProcNetAddr(t, fields[1]))
		}
		_ = f.Close()
	}
	if len(addrs) == 0 {
		t.Fatal("found no listening socket of the cluster's processes; the API server at least should listen")
	}
	return addrs
}

// parseProcNetAddr parses "0100007F:1F90": the address as 32-bit words in host (little-endian) byte
// order, and the port in hex.
func parseProcNetAddr(t *testing.T, s string) *net.TCPAddr {
	t.Helper()
	hexIP, hexPort, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexIP)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	return &net.TCPAddr{IP: net.IP(raw), Port: int(port)}
}
