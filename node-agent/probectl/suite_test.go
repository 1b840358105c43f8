package probectl_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/node-agent/probectl"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	level := zapcore.ErrorLevel
	if os.Getenv("DBTUNE_TEST_VERBOSE") == "1" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(level)))
	os.Exit(testenv.Main(m, &env))
}

// tinyOptions keep a real run well under a second and a few MiB per target.
func tinyOptions() probe.Options {
	o := probe.DefaultOptions()
	o.SeqWriteBytes, o.SeqWriteBlockBytes = 4*probe.MiB, 1*probe.MiB
	o.ColdReadBlockBytes = 1 * probe.MiB
	o.DirectWriteBytes, o.DirectWriteBlockBytes = 1*probe.MiB, 256*probe.KiB
	o.Churn = []probe.ChurnSize{{FileBytes: 5000, Files: 50}, {FileBytes: 100_000, Files: 5}}
	o.TempFiles = []probe.TempFileSize{{FileBytes: 1 * probe.MiB, Files: 4}}
	o.FsyncSamples = 20
	o.DeviceReadMaxBytes, o.DeviceReadDuration = 4*probe.MiB, 200*time.Millisecond
	o.MaxDuration = 20 * time.Second
	return o
}

var fastBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 100, Cap: 500 * time.Millisecond}

// testConfig is an agent for node with fast retries and no listeners.
func testConfig(node, leaseNamespace string, targets ...probe.Target) probectl.Config {
	return probectl.Config{
		NodeName: node, Targets: targets, Options: tinyOptions(), LeaseNamespace: leaseNamespace,
		SlotBackoff: fastBackoff, WriteBackoff: fastBackoff, MetricsAddr: "0", HealthProbeAddr: "0",
	}
}

// runningAgent is an agent started in its own manager, as on a node.
type runningAgent struct {
	node     string
	registry *prometheus.Registry
	stop     func()
	stopped  chan struct{}
}

// startAgent runs cfg's agent in a manager of its own (through restConfig when given) until the
// test ends or stop is called.
func startAgent(t *testing.T, e *testenv.Env, cfg probectl.Config, restConfig *rest.Config) *runningAgent {
	t.Helper()
	if restConfig == nil {
		restConfig = e.Config
	}
	opts := probectl.ManagerOptions(cfg, e.Scheme)
	opts.Controller.SkipNameValidation = ptr.To(true) // one manager per agent, many per process
	opts.Logger = ctrl.Log.WithName(cfg.NodeName)
	mgr, err := ctrl.NewManager(restConfig, opts)
	if err != nil {
		t.Fatalf("failed to create the manager: %v", err)
	}
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	if err := probectl.Setup(mgr, cfg); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &runningAgent{node: cfg.NodeName, registry: reg, stopped: make(chan struct{})}
	go func() {
		defer close(a.stopped)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager of %s stopped with an error: %v", cfg.NodeName, err)
		}
	}()
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-a.stopped:
			case <-time.After(30 * time.Second):
				t.Errorf("the agent of %s did not stop", cfg.NodeName)
			}
		})
	}
	t.Cleanup(a.stop)
	return a
}

// createNode creates a Node (envtest has no kubelet) and returns its name.
func createNode(t *testing.T, e *testenv.Env) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-test-"}}
	if err := e.Client.Create(context.Background(), node); err != nil {
		t.Fatalf("failed to create a Node: %v", err)
	}
	t.Cleanup(func() {
		// envtest runs no garbage collector: remove the profile with its Node.
		_ = e.Client.Delete(context.Background(), &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: node.Name}})
		_ = e.Client.Delete(context.Background(), node)
	})
	return node
}

func getProfile(t *testing.T, e *testenv.Env, name string) *v1alpha1.NodeIOProfile {
	t.Helper()
	p := &v1alpha1.NodeIOProfile{}
	err := e.Client.Get(context.Background(), client.ObjectKey{Name: name}, p)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		t.Fatalf("failed to get NodeIOProfile %s: %v", name, err)
	}
	return p
}

// waitForCondition waits until the profile's condition has status and reason, and returns the
// profile.
func waitForCondition(t *testing.T, e *testenv.Env, node, typ string, status metav1.ConditionStatus, reason string) *v1alpha1.NodeIOProfile {
	t.Helper()
	var p *v1alpha1.NodeIOProfile
	testenv.Eventually(t, 20*time.Second, func() string {
		p = getProfile(t, e, node)
		if p == nil {
			return "no NodeIOProfile " + node
		}
		c := meta.FindStatusCondition(p.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Sprintf("%s condition is %+v, want %s/%s", typ, c, status, reason)
		}
		return ""
	})
	return p
}

func annotate(t *testing.T, e *testenv.Env, node, key, value string) {
	t.Helper()
	p := &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: node}}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := e.Client.Patch(context.Background(), p, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatalf("failed to annotate NodeIOProfile %s: %v", node, err)
	}
}

// diskDir returns an empty directory on a disk filesystem.
func diskDir(t *testing.T) string {
	t.Helper()
	for _, parent := range []string{"", "/var/tmp"} {
		dir, err := os.MkdirTemp(parent, "agent-disk-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		if kind, _, err := probe.Inspect(dir, probe.Options{}); err == nil && kind == probe.KindDisk {
			return dir
		}
	}
	testenv.SkipOrFail(t, "needs a temporary directory on a disk filesystem; TMPDIR and /var/tmp are RAM-backed")
	return ""
}

// mountTmpfs mounts a tmpfs of size (a size= value) with flags, unmounted when the test ends.
func mountTmpfs(t *testing.T, size string, flags uintptr) string {
	t.Helper()
	return testenv.MountTmpfs(t, size, flags)
}

// assertEmpty fails when a run left anything in dir.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("failed to list %s: %v", dir, err)
	}
	for _, e := range entries {
		t.Errorf("a run left %s behind in %s", e.Name(), dir)
	}
}

// span is one call of the prober: when it ran, and on which node.
type span struct {
	node       string
	start, end time.Time
}

// spans records prober calls; it is the test's view of the runner's runs.
type spans struct {
	mu   sync.Mutex
	list []span
}

// wrap records every call of inner for node, keeping the slot at least hold so that runs of
// different nodes would overlap if nothing kept them apart.
func (s *spans) wrap(node string, inner probectl.Prober, hold time.Duration) probectl.Prober {
	return probectl.ProberFunc(func(ctx context.Context, targets []probe.Target, opts probe.Options) (*probe.Result, error) {
		start := time.Now()
		res, err := inner.Probe(ctx, targets, opts)
		if rest := hold - time.Since(start); rest > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(rest):
			}
		}
		s.mu.Lock()
		s.list = append(s.list, span{node: node, start: start, end: time.Now()})
		s.mu.Unlock()
		return res, err
	})
}

func (s *spans) count(node string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sp := range s.list {
		if node == "" || sp.node == node {
			n++
		}
	}
	return n
}

func (s *spans) all() []span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]span(nil), s.list...)
}

// outage makes every request through it fail while down is set, like an unreachable API server.
type outage struct {
	rt   http.RoundTripper
	down *atomic.Bool
}

func (o *outage) RoundTrip(req *http.Request) (*http.Response, error) {
	if o.down.Load() {
		return nil, fmt.Errorf("dial tcp %s: connect: connection refused (simulated outage)", req.URL.Host)
	}
	return o.rt.RoundTrip(req)
}
