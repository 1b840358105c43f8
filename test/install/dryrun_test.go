package install_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// testFieldOwner is the field manager of what these tests install for real.
const testFieldOwner = "dbtune-install-test"

// TestKustomizationsDryRun sends every object of each kustomization to the API server with
// server-side dry-run: schema validation, defaulting and admission run as for `kubectl apply`,
// and nothing is persisted. CRDs are applied for real first, as the first apply of the install
// does, and the namespace is created, since a namespaced dry-run needs it to exist. Every other
// object is created with dry-run, so a name or a kind the cluster already has would fail too.
//
// The prometheus overlay's ServiceMonitor and PrometheusRule are checked against the Prometheus
// Operator's real CRDs, taken from its released module through the Go module proxy (nothing of it
// is copied into this repository), installed here the way a cluster with kube-prometheus-stack
// has them.
func TestKustomizationsDryRun(t *testing.T) {
	e := testenv.Require(t, env)
	installPrometheusOperatorCRDs(t, e)
	for _, dir := range []string{"default", "overlays/no-read-ahead", "overlays/no-large-pages", "overlays/prometheus", "overlays/no-aggregation"} {
		t.Run(dir, func(t *testing.T) {
			objs := kustomize(t, dir)
			if len(objs) == 0 {
				t.Fatalf("config/%s builds no object", dir)
			}
			dryRunAll(t, e, objs)
		})
	}
}

func dryRunAll(t *testing.T, e *testenv.Env, objs []*unstructured.Unstructured) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rest := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(testFieldOwner), client.ForceOwnership); err != nil {
				t.Errorf("failed to apply CustomResourceDefinition %s: %v", o.GetName(), err)
			}
		case "Namespace":
			// Applied rather than created, since an earlier kustomization of this test may
			// have created it already.
			if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.DryRunAll, client.FieldOwner(testFieldOwner), client.ForceOwnership); err != nil {
				t.Errorf("server-side dry-run of Namespace %s: %v", o.GetName(), err)
			}
			ns := &corev1.Namespace{}
			ns.Name = o.GetName()
			if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("failed to create Namespace %s: %v", ns.Name, err)
			}
		default:
			rest = append(rest, o)
		}
	}
	for _, o := range rest {
		if err := e.Client.Create(ctx, o.DeepCopy(), client.DryRunAll, client.FieldOwner(testFieldOwner)); err != nil {
			t.Errorf("server-side dry-run of %s %s: %v", o.GetKind(), objectRef(o), err)
		}
	}
}

// prometheusOperatorVersion is the Prometheus Operator release whose CRDs the overlay is checked
// against.
const prometheusOperatorVersion = "v0.85.0"

// prometheusOperatorCRDs returns the ServiceMonitor and PrometheusRule CRD files of the Prometheus
// Operator's module, downloaded (once, then cached) through the Go module proxy.
func prometheusOperatorCRDs(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/prometheus-operator/prometheus-operator@"+prometheusOperatorVersion)
	cmd.Dir = t.TempDir() // outside any module, so the project's go.mod is never touched
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		testenv.SkipOrFail(t, "cannot download the Prometheus Operator %s module through the Go module proxy: %v", prometheusOperatorVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download printed no module directory: %v\n%s", err, out)
	}
	dir := filepath.Join(mod.Dir, "example", "prometheus-operator-crd")
	return []string{
		filepath.Join(dir, "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(dir, "monitoring.coreos.com_prometheusrules.yaml"),
	}
}

// installPrometheusOperatorCRDs installs the ServiceMonitor and PrometheusRule CRDs and waits
// until the API server and the client's REST mapper know both kinds.
func installPrometheusOperatorCRDs(t *testing.T, e *testenv.Env) {
	t.Helper()
	crds, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{
		Paths:              prometheusOperatorCRDs(t),
		ErrorIfPathMissing: true,
		PollInterval:       100 * time.Millisecond,
		MaxTime:            30 * time.Second,
	})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("failed to install the Prometheus Operator CRDs: %v", err)
	}
	if len(crds) != 2 {
		t.Fatalf("installed %d Prometheus Operator CRDs, want ServiceMonitor and PrometheusRule", len(crds))
	}
	// The client's REST mapper learns new kinds on a miss; wait until it knows both.
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			for _, crd := range crds {
				gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
				if _, err := e.Client.RESTMapper().RESTMapping(gk, crd.Spec.Versions[0].Name); err != nil {
					return false, nil //nolint:nilerr // an unmapped kind is what the poll waits out
				}
			}
			return true, nil
		})
	if err != nil {
		t.Fatalf("the Prometheus Operator kinds never became known to the client: %v", err)
	}
}

// objectRef is namespace/name, or name for a cluster-scoped object.
func objectRef(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
