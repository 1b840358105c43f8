package scratchusage_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/nodeprofile"
	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, &env))
}

// stagedFS serves figures the test sets, per pod UID, for volumes the API says exist.
type stagedFS struct {
	mu    sync.Mutex
	usage map[string]scratchusage.Usage
}

// set stages a 64 MiB volume with usedMiB in use.
func (f *stagedFS) set(uid string, usedMiB uint64) {
	const sizeMiB = 64
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usage[uid] = scratchusage.Usage{SizeBytes: sizeMiB * mib, UsedBytes: usedMiB * mib, FreeBytes: (sizeMiB - usedMiB) * mib}
}

func (f *stagedFS) Usage(dir string) (scratchusage.Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for uid, u := range f.usage {
		if strings.Contains(dir, "/pods/"+uid+"/") {
			return u, nil
		}
	}
	return scratchusage.Usage{}, os.ErrNotExist
}

// statusPatches counts PATCH requests to a status subresource.
type statusPatches struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c statusPatches) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/status") {
		c.n.Add(1)
	}
	return c.rt.RoundTrip(req)
}

// TestFiguresReachTheNodeIOProfile runs the agent's sampler against a real API server: it finds
// the injected pods of its node through its restricted cache, writes their figures into the
// node's NodeIOProfile beside what another field manager of the agent wrote there, writes nothing
// while nothing changes, holds a change back for the report interval, reports a full volume at
// once, and drops a deleted pod.
func TestFiguresReachTheNodeIOProfile(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := e.Namespace(t)
	node := "node-" + rand.String(6)
	create(t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	// The read-ahead side of the agent owns status.readAhead; the sampler must leave it alone.
	other := nodeprofile.NewWriter(e.Client, e.Client, node, v1alpha1.AgentFieldManager+"-readahead", ctrl.Log)
	if _, err := other.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.ApplyStatus(ctx, &v1alpha1.NodeIOProfileStatus{ReadAhead: []v1alpha1.DeviceReadAheadStatus{{Device: "vda"}}}); err != nil {
		t.Fatal(err)
	}

	db0, db1 := injectedPod(ns, "db-0", node), injectedPod(ns, "db-1", node)
	elsewhere, plain := injectedPod(ns, "db-2", "another-node"), injectedPod(ns, "web-0", node)
	plain.Annotations = nil
	for _, p := range []*corev1.Pod{db0, db1, elsewhere, plain} {
		startPod(t, e.Client, p)
	}
	fs := &stagedFS{usage: map[string]scratchusage.Usage{}}
	fs.set(string(db0.UID), 10)
	fs.set(string(db1.UID), 0)
	fs.set(string(elsewhere.UID), 5)
	fs.set(string(plain.UID), 5)

	const reportEvery = 15 * time.Second
	var patches atomic.Int64
	startAgent(ctx, t, e, &patches, scratchusage.Config{
		NodeName: node, FS: fs, Interval: 100 * time.Millisecond, ReportInterval: reportEvery, Registerer: prometheus.NewRegistry(),
	})

	profile := func() []v1alpha1.ScratchVolumeUsage {
		p := &v1alpha1.NodeIOProfile{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: node}, p); err != nil {
			t.Fatal(err)
		}
		if len(p.Status.ReadAhead) != 1 {
			t.Fatalf("the read-ahead side's status.readAhead was changed: %+v", p.Status.ReadAhead)
		}
		return p.Status.ScratchVolumes
	}
	describe := func(us []v1alpha1.ScratchVolumeUsage) string {
		var parts []string
		for _, u := range us {
			parts = append(parts, fmt.Sprintf("%s/%s peak %d MiB full %t×%d", u.ScratchVolume, u.Pod, u.PeakBytes/mib, u.Full, u.FullEpisodes))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	testenv.Eventually(t, 20*time.Second, func() string {
		got := profile()
		if len(got) != 2 || got[0].Pod != "db-0" || got[0].PeakBytes != 10*mib || got[0].SizeBytes != 64*mib || got[1].Pod != "db-1" {
			return "the profile lists " + describe(got) + ", want db-0 (peak 10 MiB of 64) and db-1: the node's injected pods only"
		}
		return ""
	})
	if got := profile()[0]; got.Namespace != ns || got.ScratchVolume != "tmp" || got.SampledSince.IsZero() || got.Full || got.LastFullTime != nil {
		t.Errorf("db-0's entry: %+v, want namespace %s, ScratchVolume tmp, a SampledSince, never full", got, ns)
	}
	writes := patches.Load()

	testenv.Consistently(t, 2*time.Second, func() string {
		if n := patches.Load(); n != writes {
			return fmt.Sprintf("%d status writes while no figure changed", n-writes)
		}
		return ""
	})
	fs.set(string(db0.UID), 20)
	testenv.Consistently(t, 2*time.Second, func() string {
		if got := profile(); got[0].PeakBytes != 10*mib {
			return "a new peak was written " + describe(got) + " before the report interval passed"
		}
		return ""
	})
	// A full volume is the figure a user waits for: it goes out at once, with the pending peak.
	fs.set(string(db1.UID), 64)
	testenv.Eventually(t, reportEvery*2/3, func() string {
		got := profile()
		if !got[1].Full || got[1].FullEpisodes != 1 || got[1].LastFullTime == nil || got[1].PeakBytes != 64*mib || got[0].PeakBytes != 20*mib {
			return "the profile lists " + describe(got) + ", want db-1 full (one episode, peak 64 MiB) and db-0's 20 MiB peak, before the report interval"
		}
		return ""
	})

	// A bound pod stays until its kubelet confirms it stopped; there is no kubelet here.
	if err := e.Client.Delete(ctx, db0, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, reportEvery*2, func() string {
		if got := profile(); len(got) != 1 || got[0].Pod != "db-1" {
			return "the profile lists " + describe(got) + ", want db-1 only after db-0 was deleted"
		}
		return ""
	})
}

// TestNodeWithoutInjectedPods: an agent whose node runs no injected pod writes its NodeIOProfile
// once, with no scratch volumes, and then nothing.
func TestNodeWithoutInjectedPods(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := e.Namespace(t)
	node := "quiet-" + rand.String(6)
	create(t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	plain := injectedPod(ns, "web-0", node)
	plain.Annotations = nil
	startPod(t, e.Client, plain)
	fs := &stagedFS{usage: map[string]scratchusage.Usage{}}
	fs.set(string(plain.UID), 5)

	var patches atomic.Int64
	startAgent(ctx, t, e, &patches, scratchusage.Config{
		NodeName: node, FS: fs, Interval: 100 * time.Millisecond, ReportInterval: time.Second, Registerer: prometheus.NewRegistry(),
	})
	p := &v1alpha1.NodeIOProfile{}
	testenv.Eventually(t, 20*time.Second, func() string {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: node}, p); err != nil {
			return "no NodeIOProfile yet: " + err.Error()
		}
		return ""
	})
	testenv.Consistently(t, 3*time.Second, func() string {
		if n := patches.Load(); n > 1 {
			return fmt.Sprintf("%d status writes from an agent with nothing to report, want at most the first", n)
		}
		return ""
	})
	if err := e.Client.Get(ctx, client.ObjectKey{Name: node}, p); err != nil || len(p.Status.ScratchVolumes) != 0 {
		t.Errorf("the profile of a node without injected pods reports %+v (%v), want nothing", p.Status.ScratchVolumes, err)
	}
}

// injectedPod is a pod of node into which ScratchVolume "tmp" injected its RAM volume.
func injectedPod(ns, name, node string) *corev1.Pod {
	p := runningPod(name)
	p.Namespace, p.UID, p.Spec.NodeName = ns, "", node
	p.Spec.Containers = []corev1.Container{{Name: "db", Image: "mariadb:11.4"}}
	return p
}

// startPod creates p and marks it Running, as the kubelet would.
func startPod(t *testing.T, c client.Client, p *corev1.Pod) {
	t.Helper()
	create(t, c, p)
	p.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(context.Background(), p); err != nil {
		t.Fatalf("failed to mark pod %s Running: %v", p.Name, err)
	}
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("failed to create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
}

// startAgent runs a manager built as the agent's is (its cache restricted to the node's pods and
// profile) with the sampler alone, until ctx ends, counting its status writes in patches.
func startAgent(ctx context.Context, t *testing.T, e *testenv.Env, patches *atomic.Int64, cfg scratchusage.Config) {
	t.Helper()
	restCfg := rest.CopyConfig(e.Config)
	restCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return statusPatches{rt: rt, n: patches} })
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache:      scratchusage.RestrictCache(nodeprofile.CacheOptions(cfg.NodeName), cfg.NodeName),
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := scratchusage.Setup(mgr, cfg); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("the agent's manager stopped with %v", err)
		}
	})
}
