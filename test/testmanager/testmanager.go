// Package testmanager runs the manager's ScratchVolume controller inside a test, set up as main.go
// sets it up (the same cache options and reconciler), against a test API server, and counts every
// request it sends that changes something.
//
// It lives apart from test/testenv because it imports the controllers package, whose own in-package
// tests import testenv.
package testmanager

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
)

// Manager is a running manager.
type Manager struct {
	// Writes counts what it wrote.
	Writes *Writes
	stop   func() error
}

// Stop stops the manager and waits until it has; it returns the error it stopped with.
func (m *Manager) Stop() error { return m.stop() }

var logOnce sync.Once

// Start starts a manager against the API server of cfg, with its writes counted; setup, when not
// nil, adjusts the reconciler first (a test's write-war window, version, progress deadline...).
func Start(cfg *rest.Config, scheme *runtime.Scheme, setup func(*controllers.ScratchVolumeReconciler)) (*Manager, error) {
	return StartIn(cfg, scheme, nil, setup)
}

// StartIn is Start for a manager that watches only namespaces, as --namespaces makes it; nil
// watches every namespace.
func StartIn(cfg *rest.Config, scheme *runtime.Scheme, namespaces []string, setup func(*controllers.ScratchVolumeReconciler)) (*Manager, error) {
	logOnce.Do(func() { ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(logLevel()))) })
	w := &Writes{n: map[key]int{}}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, w: w} })
	informers := &fleetcache.Informers{}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(namespaces, informers),
		// A test process may run several managers, one after the other or against several API
		// servers.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	r := &controllers.ScratchVolumeReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("scratch-operator"), APIReader: mgr.GetAPIReader(), Informers: informers,
		MaxConcurrentReconciles: 4,
	}
	if setup != nil {
		setup(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return &Manager{Writes: w, stop: func() error { cancel(); return <-done }}, nil
}

// Run starts a manager for the test t and stops it when t ends.
func Run(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, setup func(*controllers.ScratchVolumeReconciler)) *Manager {
	t.Helper()
	return RunIn(t, cfg, scheme, nil, setup)
}

// RunIn is Run for a manager that watches only namespaces (StartIn).
func RunIn(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, namespaces []string, setup func(*controllers.ScratchVolumeReconciler)) *Manager {
	t.Helper()
	m, err := StartIn(cfg, scheme, namespaces, setup)
	if err != nil {
		t.Fatalf("failed to start the manager: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return m
}

// logLevel keeps the manager quiet unless DBTUNE_TEST_VERBOSE=1.
func logLevel() zapcore.Level {
	if os.Getenv("DBTUNE_TEST_VERBOSE") == "1" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// Writes counts a manager's POST, PUT, PATCH and DELETE requests to namespaced objects.
type Writes struct {
	mu sync.Mutex
	n  map[key]int
}

type key struct{ resource, namespace, name string }

// Count is how many writes the object named name of resource (such as "statefulsets") in
// namespace got, not counting its subresources (such as status).
func (w *Writes) Count(resource, namespace, name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[key{resource, namespace, name}]
}

// Of is the writes to the objects of resource in namespace, by name; a write to a subresource is
// under "name/subresource".
func (w *Writes) Of(resource, namespace string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.n {
		if k.resource == resource && k.namespace == namespace {
			out[k.name] = v
		}
	}
	return out
}

type countingTransport struct {
	rt http.RoundTripper
	w  *Writes
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		// /api(s)/…/namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]]
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		if i := slices.Index(parts, "namespaces"); i >= 0 && len(parts) > i+2 {
			k := key{resource: parts[i+2], namespace: parts[i+1]}
			if len(parts) > i+3 {
				k.name = strings.Join(parts[i+3:], "/")
			}
			t.w.mu.Lock()
			t.w.n[k]++
			t.w.mu.Unlock()
		}
	}
	return t.rt.RoundTrip(req)
}
