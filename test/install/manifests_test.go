// Package install_test checks the installation manifests of config/ against a real API server:
// every object of each kustomization passes server-side validation and admission, the
// generated ClusterRoles grant what the operator and the node agent need and nothing on the list
// of things they must never have, and the workloads hold only the privileges their features need.
package install_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}

// Names the kustomizations give the installed objects.
const (
	installNamespace = "dbtune-system"
	managerName      = "dbtune-scratch-operator"
	agentName        = "dbtune-node-agent"
)

// repoPath joins parts under the repository root.
func repoPath(t testing.TB, parts ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// kustomize builds a kustomization under config/ with `kubectl kustomize`: the kustomize built
// into kubectl is what `kubectl apply -k` runs, so it is the one whose output must be valid.
func kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	kubectl := filepath.Join(os.Getenv(testenv.AssetsEnv), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		if testing.Short() {
			t.Skip("kubectl is not built, and -short runs no test that needs the Kubernetes binaries")
		}
		testenv.SkipOrFail(t, "kubectl not found in $%s (%q): run `make k8s-binaries`", testenv.AssetsEnv, os.Getenv(testenv.AssetsEnv))
	}
	objs, err := testenv.Kustomize(kubectl, repoPath(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the object of a kind and name, failing the test when it is missing.
func find(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("the manifests have no %s %s", kind, name)
	return nil
}

// convert turns an unstructured object into a typed one.
func convert[T any](t testing.TB, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("failed to convert %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// generatedRoles reads both documents `make manifests` writes under config/rbac: the ClusterRole
// and the Role that holds the rules of namespace-scoped markers (Leases, in the install
// namespace). Each must be present exactly once.
func generatedRoles(t testing.TB, file string) (*rbacv1.ClusterRole, *rbacv1.Role) {
	t.Helper()
	raw, err := os.ReadFile(repoPath(t, "config", "rbac", file))
	if err != nil {
		t.Fatal(err)
	}
	var cluster *rbacv1.ClusterRole
	var role *rbacv1.Role
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("config/rbac/%s: %v", file, err)
		}
		switch {
		case meta.Kind == "ClusterRole" && cluster == nil:
			cluster = &rbacv1.ClusterRole{}
			err = yaml.UnmarshalStrict([]byte(doc), cluster)
		case meta.Kind == "Role" && role == nil:
			role = &rbacv1.Role{}
			err = yaml.UnmarshalStrict([]byte(doc), role)
		default:
			t.Fatalf("config/rbac/%s: unexpected document of kind %q", file, meta.Kind)
		}
		if err != nil {
			t.Fatalf("config/rbac/%s: %v", file, err)
		}
	}
	if cluster == nil || role == nil {
		t.Fatalf("config/rbac/%s: want a ClusterRole and a Role, got ClusterRole %t, Role %t", file, cluster != nil, role != nil)
	}
	return cluster, role
}
