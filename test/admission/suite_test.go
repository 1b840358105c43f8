// Package admission_test ties the ScratchVolume API's admission rules to the controller's planning:
// every spec the real API server admits must either be injected exactly as it says, as the
// database's own option-file parser reads it back, or be refused with a named condition.
package admission_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// env is the one API server of a package run. When fuzzing, the worker processes share the
// coordinator's (see TestMain); envMissing says why there is none.
var (
	env        *testenv.Env
	envMissing string
)

// sharedKubeconfigEnv hands the coordinator's API server to its fuzz workers: they are started
// with the coordinator's environment once TestMain has set it.
const sharedKubeconfigEnv = "DBTUNE_ADMISSION_TEST_KUBECONFIG"

// TestMain starts one API server, as testenv.Main does, except in a fuzz worker, which connects to
// the coordinator's. A worker is stopped by closing its pipes, and killed a second later if it has
// not exited: one that ran its own API server would leave it behind, still holding the pipes, and
// the coordinator would wait on them forever.
func TestMain(m *testing.M) {
	flag.Parse()
	closeInheritedFiles()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		envMissing = "envtest suites do not run in -short mode"
		return m.Run()
	}
	if path := os.Getenv(sharedKubeconfigEnv); path != "" && fuzzWorker() {
		e, err := connect(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fuzz worker: %v\n", err)
			return 1
		}
		env = e
		return m.Run()
	}
	e, err := testenv.Start()
	if err != nil {
		if testenv.Strict() {
			fmt.Fprintf(os.Stderr, "envtest: %v (%s=1 makes this a failure)\n", err, testenv.StrictEnv)
			return 1
		}
		envMissing = err.Error()
		return m.Run()
	}
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "envtest: failed to stop: %v\n", err)
		}
	}()
	env = e
	dir, err := os.MkdirTemp("", "dbtune-admission-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %v\n", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path, err := shareKubeconfig(e, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %v\n", err)
		return 1
	}
	if err := os.Setenv(sharedKubeconfigEnv, path); err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %v\n", err)
		return 1
	}
	return m.Run()
}

// requireEnv returns the API server, or skips t as testenv.Require does (a missing one already
// failed the run in strict mode).
func requireEnv(t testing.TB) *testenv.Env {
	t.Helper()
	if env == nil {
		t.Skip("no API server: " + envMissing)
	}
	return testenv.Require(t, env)
}

// fuzzWorker reports whether this process is a fuzz worker rather than the coordinator.
func fuzzWorker() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// shareKubeconfig writes an administrator's kubeconfig for e into dir.
func shareKubeconfig(e *testenv.Env, dir string) (string, error) {
	user, err := e.Environment().ControlPlane.AddUser(envtest.User{Name: "fuzz-worker", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("failed to add a user for the fuzz workers: %w", err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("failed to write a kubeconfig for the fuzz workers: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}

// connect is a client of the API server the kubeconfig at path names.
func connect(path string) (*testenv.Env, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid kubeconfig %s: %w", path, err)
	}
	// What envtest gives its own clients: client-go's default of 5 requests a second would throttle
	// the worker to one input every two seconds.
	cfg.QPS, cfg.Burst = 1000, 2000
	s := testenv.Scheme()
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	return &testenv.Env{Config: cfg, Client: c, Scheme: s}, nil
}

// closeInheritedFiles keeps inherited descriptors (a fuzz worker's pipes to its coordinator) out of
// the processes the test starts; Go opens its own with close-on-exec already.
func closeInheritedFiles() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
