// Package testenv runs tests against a real kube-apiserver and etcd (controller-runtime's envtest)
// with this project's CRDs installed, and holds the one rule about missing prerequisites: a test that
// cannot run here skips with a clear message on a developer machine, and fails in CI, where
// DBTUNE_TEST_STRICT=1 is set.
package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dbtunev1alpha1 "github.com/dbtune/scratch-operator/api/v1alpha1"
)

// StrictEnv is the environment variable that turns skips for missing prerequisites (root, packages,
// Kubernetes binaries) into failures. CI sets it.
const StrictEnv = "DBTUNE_TEST_STRICT"

// AssetsEnv names the directory holding kube-apiserver and etcd, as envtest expects.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Strict reports whether missing prerequisites must fail tests.
func Strict() bool { return os.Getenv(StrictEnv) == "1" }

// SkipOrFail skips t with the given reason, or fails it when Strict.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		t.Fatalf("%s (%s=1 makes this a failure)", msg, StrictEnv)
	}
	t.Skip(msg)
}

// RequireRoot skips (or, when Strict, fails) a test that needs root.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "needs root to %s: run the tests as root, as CI does", why)
	}
}

// Env is a running API server with the project's CRDs and a client for it.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme

	env         *envtest.Environment
	unavailable string
}

// Scheme returns a scheme with the built-in kinds and the dbtune.io kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := dbtunev1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// RepoRoot finds the repository root (the directory holding go.mod) from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Start starts kube-apiserver and etcd from KUBEBUILDER_ASSETS and installs the CRDs from
// config/crd/bases. It fails when a CRD file is missing.
func Start() (*Env, error) {
	assets := os.Getenv(AssetsEnv)
	if assets == "" {
		return nil, fmt.Errorf("%s is not set: run `make test`, which builds kube-apiserver and etcd and sets it", AssetsEnv)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
	}
	cfg, err := env.Start()
	if err != nil {
		// A CRD the API server refuses fails Start after kube-apiserver and etcd are up: stop
		// them, or every such run leaves a pair of processes behind.
		_ = env.Stop()
		return nil, fmt.Errorf("failed to start kube-apiserver and etcd from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: env.Scheme, env: env}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error {
	if e == nil || e.env == nil {
		return nil
	}
	return e.env.Stop()
}

// Environment exposes the underlying envtest environment (to add users, for example).
func (e *Env) Environment() *envtest.Environment { return e.env }

// Main is a TestMain body: it starts the environment into *envp, runs the tests, calls beforeStop
// (to stop managers that talk to the API server) and stops it. When the environment cannot start,
// tests that call Require skip with the reason (or the run fails when Strict). In -short mode it does
// not start the environment at all.
func Main(m *testing.M, envp **Env, beforeStop ...func()) int {
	flag.Parse()
	if testing.Short() {
		*envp = &Env{unavailable: "envtest suites do not run in -short mode"}
		return m.Run()
	}
	e, err := Start()
	if err != nil {
		if Strict() {
			fmt.Fprintf(os.Stderr, "envtest: %v (%s=1 makes this a failure)\n", err, StrictEnv)
			return 1
		}
		*envp = &Env{unavailable: err.Error()}
		return m.Run()
	}
	*envp = e
	code := m.Run()
	for _, f := range beforeStop {
		f()
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "envtest: failed to stop: %v\n", err)
	}
	return code
}

// Require returns the running environment, or skips t when it is unavailable.
func Require(t testing.TB, e *Env) *Env {
	t.Helper()
	switch {
	case e == nil:
		t.Fatal("testenv.Require called without testenv.Main in TestMain")
	case e.unavailable != "":
		t.Skip("no API server: " + e.unavailable)
	}
	return e
}

// Namespace creates a namespace with a unique name for t and deletes it when t ends. envtest runs no
// namespace controller, so deletion only marks it; the unique name keeps tests apart.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("failed to create a namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), ns)
	})
	return ns.Name
}
