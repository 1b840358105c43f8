// Package security_test checks the security model of docs/install.md on a local control plane
// (test/localcluster), whose kube-controller-manager aggregates ClusterRoles as a real cluster's
// does: the user ClusterRoles of config/default reach the built-in admin, edit and view roles and
// grant what they say and nothing more, ReadAheadPolicies stay with cluster administrators, and
// the sample ValidatingAdmissionPolicy of config/samples/policy confines the operator — the real
// reconciler, authenticated as its ServiceAccount — to StatefulSets that opted in. Users are
// played by impersonation, the way an API server sees a user with a RoleBinding.
package security_test

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

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// Names config/default gives the operator's identity.
const (
	installNamespace = "dbtune-system"
	operatorAccount  = "dbtune-scratch-operator"
	operatorUser     = "system:serviceaccount:" + installNamespace + ":" + operatorAccount
)

// fieldOwner is the field manager of what the suite installs.
const fieldOwner = "dbtune-security-test"

// env is the cluster TestMain started; tests reach it through require.
var env *cluster

// cluster is one local control plane with the RBAC part of config/default installed.
type cluster struct {
	// unavailable says why the suite cannot run here; short is -short mode, where it never runs.
	unavailable string
	short       bool

	root, binDir string
	lc           *localcluster.Cluster
	admin        client.Client
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		env = &cluster{short: true, unavailable: "starts a local control plane; not in -short mode"}
		return m.Run()
	}
	// The operator's logs, and controller-runtime's clients', on stderr: errors only, unless
	// DBTUNE_TEST_VERBOSE=1.
	level := zapcore.ErrorLevel
	if os.Getenv("DBTUNE_TEST_VERBOSE") == "1" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(level)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	c, err := setUp(ctx)
	var missing *missingError
	switch {
	case errors.As(err, &missing):
		env = &cluster{unavailable: missing.Error()}
		return m.Run()
	case err != nil:
		fmt.Fprintf(os.Stderr, "security: failed to set up: %v\n", err)
		if c != nil && c.lc != nil {
			_ = c.lc.Stop()
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "security: control plane and roles ready in %s\n", time.Since(start).Round(time.Millisecond))
	env = c
	code := m.Run()
	stopOperator()
	if err := c.lc.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "security: failed to stop the control plane: %v\n", err)
	}
	return code
}

// missingError is a missing prerequisite: the tests skip, or fail in strict mode.
type missingError struct{ what string }

func (e *missingError) Error() string { return e.what }

func setUp(ctx context.Context) (*cluster, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir, err := localcluster.DefaultBinDir(root)
	if err != nil {
		return nil, err
	}
	for _, name := range append([]string{"kubectl"}, localcluster.Binaries...) {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return nil, &missingError{fmt.Sprintf("%s is not built in %s: run `hack/k8s-binaries.sh all` (minutes when cold)", name, binDir)}
		}
	}
	c := &cluster{root: root, binDir: binDir}
	c.lc, err = localcluster.Start(ctx, localcluster.Options{BinDir: binDir, Nodes: localcluster.DefaultNodes(1)})
	if err != nil {
		return c, err
	}
	if c.admin, err = client.New(c.lc.Config(), client.Options{Scheme: testenv.Scheme()}); err != nil {
		return c, err
	}
	if err := c.install(ctx); err != nil {
		return c, err
	}
	return c, nil
}

// installedKinds are the kinds of config/default the suite installs: the CRDs and everything RBAC,
// so that the roles are the ones users get. The workloads stay out; the operator runs in the test.
var installedKinds = map[string]bool{
	"CustomResourceDefinition": true, "Namespace": true, "ServiceAccount": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

// install applies the RBAC part of config/default, CRDs first, and waits until the CRDs serve.
func (c *cluster) install(ctx context.Context) error {
	objs, err := c.kustomize("default")
	if err != nil {
		return err
	}
	var crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "CustomResourceDefinition":
			crds = append(crds, o)
		case installedKinds[o.GetKind()]:
			rest = append(rest, o)
		}
	}
	if err := c.apply(ctx, crds); err != nil {
		return err
	}
	for _, crd := range crds {
		if err := c.waitEstablished(ctx, crd.GetName()); err != nil {
			return err
		}
	}
	return c.apply(ctx, rest)
}

func (c *cluster) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		ac := client.ApplyConfigurationFromUnstructured(o.DeepCopy())
		if err := c.admin.Apply(ctx, ac, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("failed to apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

func (c *cluster) waitEstablished(ctx context.Context, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := c.admin.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, nil //nolint:nilerr // the poll waits out a busy API server
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s never became Established: %w", name, err)
	}
	return nil
}

// kustomize builds config/<dir> with the cluster's kubectl.
func (c *cluster) kustomize(dir string) ([]*unstructured.Unstructured, error) {
	return testenv.Kustomize(filepath.Join(c.binDir, "kubectl"), c.root, dir)
}

// require returns the running cluster, or skips t (fails it in strict mode) when it could not
// start here.
func require(t *testing.T) *cluster {
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

// as returns a client that impersonates user, authenticated, in groups.
func (c *cluster) as(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cl, err := client.New(c.impersonating(user, groups...), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func (c *cluster) impersonating(user string, groups ...string) *rest.Config {
	cfg := c.lc.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{"system:authenticated"}, groups...)}
	return cfg
}

// operatorGroups are the groups the API server puts a ServiceAccount of the install namespace in.
var operatorGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + installNamespace}

// namespace creates a namespace named after t. The cluster runs the namespace controller, so
// deleting it at the end removes what the test left.
func (c *cluster) namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"}}
	if err := c.admin.Create(context.Background(), ns); err != nil {
		t.Fatalf("failed to create a namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.admin.Delete(context.Background(), ns) })
	return ns.Name
}

// create creates objs as the cluster administrator and deletes cluster-scoped ones at the end.
func (c *cluster) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.admin.Create(context.Background(), o); err != nil {
			t.Fatalf("failed to create %T %s: %v", o, o.GetName(), err)
		}
		if o.GetNamespace() == "" {
			t.Cleanup(func() { _ = c.admin.Delete(context.Background(), o) })
		}
	}
}

// waitTimeout is how long testenv.Eventually waits here for the controller to act.
const waitTimeout = 30 * time.Second

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
