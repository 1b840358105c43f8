package gitops

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/testenv"
	"github.com/dbtune/scratch-operator/test/testmanager"
)

// suite is the local control plane (a real StatefulSet controller rolls the pods out on kwok's fake
// nodes) with the CRDs installed and the product's controller running in this process, its writes
// counted. Every test shares it, each in a namespace of its own.
type suite struct {
	// unavailable says why the suite cannot run here; short is -short mode, where it never runs.
	unavailable string
	short       bool

	cfg     *rest.Config
	admin   client.Client
	manager *testmanager.Manager
}

var env *suite

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		env = &suite{short: true, unavailable: "starts a local control plane; not in -short mode"}
		return m.Run()
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	s, stop, err := setUp(ctx)
	if err != nil {
		env = &suite{unavailable: err.Error()}
		return m.Run()
	}
	env = s
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "gitops: failed to stop: %v\n", err)
		code = 1
	}
	return code
}

// setUp starts the cluster, installs the CRDs and starts the controller. An error means the suite
// cannot run here: a binary is missing, or the cluster did not come up.
func setUp(ctx context.Context) (*suite, func() error, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, nil, err
	}
	binDir, err := localcluster.DefaultBinDir(root)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range localcluster.Binaries {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return nil, nil, fmt.Errorf("%s is not built in %s: run `hack/k8s-binaries.sh all` (minutes when cold)", name, binDir)
		}
	}
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir, Nodes: localcluster.DefaultNodes(2), PersistentVolumes: 16})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to start the local control plane: %w", err)
	}
	s, err := connect(c.Config(), filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		return nil, nil, errors.Join(err, c.Stop())
	}
	return s, func() error { return errors.Join(s.manager.Stop(), c.Stop()) }, nil
}

// connect installs the CRDs on the cluster of cfg and starts the controller against it.
func connect(cfg *rest.Config, crds string) (*suite, error) {
	scheme := testenv.Scheme()
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{crds}, ErrorIfPathMissing: true, Scheme: scheme, MaxTime: 2 * time.Minute,
	}); err != nil {
		return nil, fmt.Errorf("failed to install the CRDs of %s: %w", crds, err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	mgr, err := testmanager.Start(cfg, scheme, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to start the controller: %w", err)
	}
	return &suite{cfg: cfg, admin: admin, manager: mgr}, nil
}

// requireSuite returns the running suite, or skips t (fails it when DBTUNE_TEST_STRICT=1) when it
// could not start here.
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
	return env
}

// namespace creates a namespace for t, named after it.
func (s *suite) namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(name) > 40 {
		name = name[:40]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.admin.Create(ctx, ns); err != nil {
		t.Fatalf("failed to create a namespace: %v", err)
	}
	return ns.Name
}
