package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// What the suite names in the cluster.
const (
	// systemNamespace holds the operator's ServiceAccounts, the manager's leader-election Lease and
	// the agent's probe-slot Leases, as in a real installation.
	systemNamespace = "dbtune-system"
	managerAccount  = "manager"
	agentAccount    = "node-agent"
	// agentNode is the fake node the agent runs for; localcluster labels it as a database node.
	agentNode = "kwok-node-1"
	// leaseName is the manager's leader-election Lease: LeaderElectionID in main.go.
	leaseName = "scratch-operator.dbtune.io"
)

// env is the suite TestMain set up; tests reach it through requireSuite.
var env *suite

// suite is one local cluster with the operator running on it, shared by every test of the package.
type suite struct {
	// unavailable says why the suite cannot run on this machine; short means -short mode, where
	// it never runs, strict or not.
	unavailable string
	short       bool

	root, binDir, dir string
	cluster           *localcluster.Cluster
	admin             client.Client
	clientset         kubernetes.Interface
	manager, agent    *identity
	// tmpfsDir, on /dev/shm, holds the agent's tmpfs probe target and its kubelet root.
	tmpfsDir, kubeletRoot string
	logs                  *logScanner
	// notes are things about the generated configuration that a reader of the test output should
	// know, such as a permission the suite had to add.
	notes []string

	mu              sync.Mutex
	managerProc     *process
	agentProc       *process
	managerStarts   int
	apiServerStarts int
}

// unavailableError is a missing prerequisite: the tests skip, or fail in strict mode.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return e.reason }

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		env = &suite{short: true, unavailable: "the e2e suite starts a control plane; it does not run in -short mode"}
		return m.Run()
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	start := time.Now()
	s, err := setUp(ctx)
	var unavailable *unavailableError
	switch {
	case errors.As(err, &unavailable):
		env = &suite{unavailable: unavailable.reason}
		return m.Run()
	case err != nil:
		fmt.Fprintf(os.Stderr, "e2e: failed to set up: %v\n", err)
		if s != nil {
			s.tearDown(true)
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster, identities, manager and node agent ready in %s\n", time.Since(start).Round(time.Millisecond))
	env = s
	code := m.Run()
	if lines := s.logs.scan(); len(lines) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: the API server refused requests after the last test ended:\n%s\n", strings.Join(lines, "\n"))
		code = 1
	}
	s.tearDown(code != 0)
	return code
}

// requireSuite returns the running suite, or skips t (fails it in strict mode) when the suite could
// not start here. It also makes t fail on any "forbidden" log line that appears while it runs.
func requireSuite(t *testing.T) *suite {
	t.Helper()
	switch {
	case env == nil:
		t.Fatal("TestMain did not set up the suite")
	case env.short:
		t.Skip(env.unavailable)
	case env.unavailable != "":
		testenv.SkipOrFail(t, "%s", env.unavailable)
	}
	t.Cleanup(func() { env.afterTest(t) })
	return env
}

// afterTest reports refused requests and processes that died, and shows the end of the operator's
// logs when t failed.
func (s *suite) afterTest(t *testing.T) {
	if lines := s.logs.scan(); len(lines) > 0 {
		t.Errorf("the API server refused requests of the operator: a permission is missing from config/rbac:\n%s", strings.Join(lines, "\n"))
	}
	for _, p := range s.operatorProcesses() {
		if !p.Alive() {
			t.Errorf("%s exited; the end of %s:\n%s", p.Name, p.Log, localcluster.Tail(p.Log, 30))
		}
	}
	if t.Failed() {
		for _, p := range s.operatorProcesses() {
			t.Logf("the end of %s:\n%s", p.Log, localcluster.Tail(p.Log, 30))
		}
	}
}

func (s *suite) operatorProcesses() []*process {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*process
	for _, p := range []*process{s.managerProc, s.agentProc} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

func setUp(ctx context.Context) (*suite, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir, err := localcluster.DefaultBinDir(root)
	if err != nil {
		return nil, err
	}
	if missing := missingBinaries(binDir); len(missing) > 0 {
		return nil, &unavailableError{fmt.Sprintf("%s not built in %s: run `hack/k8s-binaries.sh all` (minutes when cold)",
			strings.Join(missing, ", "), binDir)}
	}
	dir, err := os.MkdirTemp("", "dbtune-e2e-")
	if err != nil {
		return nil, err
	}
	s := &suite{root: root, binDir: binDir, dir: dir, logs: newLogScanner()}
	// The binaries build while the control plane starts: both take seconds, on different resources.
	built := make(chan error, 1)
	go func() { built <- s.build(ctx) }()
	s.cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, Dir: filepath.Join(dir, "cluster"), Nodes: localcluster.DefaultNodes(3),
		// One per pod of every test's StatefulSets, claims are never reused: the namespace-rule,
		// refusal and pacing tests alone run 14 pods.
		PersistentVolumes: 48,
	})
	if buildErr := <-built; err == nil {
		err = buildErr
	}
	if err != nil {
		return s, err
	}
	for _, step := range []func(context.Context) error{s.connect, s.installCRDs, s.createIdentities, s.startManager, s.startAgent} {
		if err := step(ctx); err != nil {
			return s, err
		}
	}
	return s, nil
}

// missingBinaries lists what the local cluster and the suite need from hack/k8s-binaries.sh that is
// not in binDir.
func missingBinaries(binDir string) []string {
	var missing []string
	for _, name := range append([]string{"kubectl"}, localcluster.Binaries...) {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// build compiles the manager, the node agent and the kubectl plugin from the working tree, so the suite always runs the
// code under test and never a stale bin/.
func (s *suite) build(ctx context.Context) error {
	for _, b := range []struct{ name, pkg string }{{"manager", "."}, {"node-agent", "./node-agent"}, {"kubectl-dbtune", "./api/kubectl-dbtune"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", s.binary(b.name), b.pkg)
		cmd.Dir = s.root
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build -o %s %s: %w\n%s", s.binary(b.name), b.pkg, err, out)
		}
	}
	return nil
}

func (s *suite) binary(name string) string { return filepath.Join(s.dir, "bin", name) }

func (s *suite) connect(context.Context) error {
	var err error
	if s.admin, err = client.New(s.cluster.Config(), client.Options{Scheme: testenv.Scheme()}); err != nil {
		return err
	}
	s.clientset, err = kubernetes.NewForConfig(s.cluster.Config())
	return err
}

func (s *suite) installCRDs(ctx context.Context) error {
	crds := filepath.Join(s.root, "config", "crd", "bases")
	if _, err := s.runKubectl(ctx, "apply", "--server-side", "-f", crds); err != nil {
		return err
	}
	_, err := s.runKubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds)
	return err
}

// stopClients stops every process but etcd and the API server, newest first. localcluster stops in
// reverse order of start, and an API server restarted by the suite started last: it would go first,
// and wait with its clients' watches open until it is killed.
func (s *suite) stopClients() {
	procs := s.cluster.Processes()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if p.Name == "etcd" || strings.HasPrefix(p.Name, "kube-apiserver") || !p.Alive() {
			continue
		}
		_ = syscall.Kill(-p.PID, syscall.SIGTERM)
		if !waitGone(&p, 10*time.Second) {
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
			waitGone(&p, 5*time.Second)
		}
	}
}

// tearDown stops everything. After a failure it shows the end of every log and keeps the directory.
func (s *suite) tearDown(failed bool) {
	if failed && s.cluster != nil {
		for _, p := range s.cluster.Processes() {
			fmt.Fprintf(os.Stderr, "e2e: the end of %s:\n%s\n", p.Log, localcluster.Tail(p.Log, 20))
		}
	}
	var errs []error
	if s.cluster != nil {
		s.stopClients()
		errs = append(errs, s.cluster.Stop())
	}
	if s.tmpfsDir != "" {
		errs = append(errs, os.RemoveAll(s.tmpfsDir))
	}
	if failed {
		fmt.Fprintf(os.Stderr, "e2e: kept the logs, kubeconfigs and cluster files in %s\n", s.dir)
	} else {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: failed to clean up: %v\n", err)
	}
}
