package controllers_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// writeWarWindow is the test manager's write-war window (10 minutes in the product).
const writeWarWindow = 6 * time.Second

// progressDeadline is the test manager's default progress deadline (10 minutes in the product).
const progressDeadline = 8 * time.Second

var (
	env *testenv.Env
	// writes counts the controller's StatefulSet writes per namespace/name.
	writes = &writeCounter{n: map[string]int{}}

	managerOnce sync.Once
	managerErr  error
	stopManager = func() {}
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env, func() { stopManager() }))
}

// startManager runs the real manager (same cache options and reconciler as the binary) against the
// test API server, once per package, with a transport that counts its StatefulSet writes.
func startManager(t *testing.T) *testenv.Env {
	t.Helper()
	e := testenv.Require(t, env)
	managerOnce.Do(func() { managerErr = runManager(e) })
	if managerErr != nil {
		t.Fatalf("failed to start the manager: %v", managerErr)
	}
	return e
}

func runManager(e *testenv.Env) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, c: writes} })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(nil),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	stopManager = func() { cancel(); <-done }
	r := &controllers.ScratchVolumeReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("scratch-operator"),
		APIReader:               mgr.GetAPIReader(),
		MaxConcurrentReconciles: 4,
		// The default rule with a window short enough for a test to see a fight end.
		WriteWar: controllers.WriteWarRule{Restores: controllers.DefaultWriteWarRestores, Window: writeWarWindow},
		// No pacing but where a ScratchVolume asks for it (envtest runs no StatefulSet controller,
		// so nothing ever rolls out by itself), with a deadline short enough to see a rollout stop.
		ProgressDeadline: progressDeadline,
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			panic(err)
		}
	}()
	return nil
}

// zapLevel keeps the manager quiet unless DBTUNE_TEST_VERBOSE=1.
func zapLevel() zapcore.Level {
	if os.Getenv("DBTUNE_TEST_VERBOSE") == "1" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// writeCounter counts PATCH/PUT requests to StatefulSets made by the controller.
type writeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// get returns the writes to the StatefulSet "db" of namespace ns, the name every test here uses.
func (w *writeCounter) get(ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[ns+"/db"]
}

type countingTransport struct {
	rt http.RoundTripper
	c  *writeCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch || req.Method == http.MethodPut {
		parts := strings.Split(req.URL.Path, "/")
		// /apis/apps/v1/namespaces/NS/statefulsets/NAME
		if len(parts) == 8 && parts[6] == "statefulsets" {
			t.c.mu.Lock()
			t.c.n[parts[5]+"/"+parts[7]]++
			t.c.mu.Unlock()
		}
	}
	return t.rt.RoundTrip(req)
}

// waitTimeout is how long testenv.Eventually waits here for the controller to act.
const waitTimeout = 20 * time.Second

func ctxFor(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}
