package helm_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dbtune/scratch-operator/test/helm"
)

// The chart installs what each kustomization installs when given the values that stand for it.
// Every object is compared whole, after removing from the chart's objects only what Helm adds by
// convention (helmLabels, and the keep policy on the CRDs), each checked for its value first, and
// with the pod templates' keyed lists in one order on both sides (inKeyOrder).
func TestChartEqualsKustomize(t *testing.T) {
	tests := []struct {
		kustomization string
		values        string
	}{
		// Without namespace.create the chart leaves the namespace to `helm install
		// --create-namespace`: the one object of config/default it does not render.
		{kustomization: "default", values: ``},
		{kustomization: "default", values: `namespace: {create: true}`},
		{kustomization: "overlays/no-read-ahead", values: `{namespace: {create: true}, nodeAgent: {readAhead: false}}`},
		{kustomization: "overlays/no-large-pages", values: `{namespace: {create: true}, nodeAgent: {largePages: false}}`},
		{kustomization: "overlays/no-aggregation", values: `{namespace: {create: true}, rbac: {userRoles: {aggregate: false}}}`},
		{kustomization: "overlays/prometheus", values: `{namespace: {create: true}, metrics: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.kustomization+" "+tt.values, func(t *testing.T) {
			want := byKey(t, kustomize(t, tt.kustomization))
			vals := values(t, tt.values)
			got := byKey(t, render(t, vals))
			conventional := helmLabels(t)
			if !createsNamespace(vals) {
				delete(want, key{Kind: "Namespace", Name: helm.ReleaseNamespace})
			}
			for _, k := range sortedKeys(want) {
				if _, ok := got[k]; !ok {
					t.Errorf("config/%s has %s, the chart does not", tt.kustomization, k)
				}
			}
			for _, k := range sortedKeys(got) {
				w, ok := want[k]
				if !ok {
					t.Errorf("the chart renders %s, config/%s does not", k, tt.kustomization)
					continue
				}
				g := withoutHelmConventions(t, got[k], conventional)
				if diff := cmp.Diff(inKeyOrder(t, w).Object, inKeyOrder(t, g).Object); diff != "" {
					t.Errorf("%s differs from config/%s's (-kustomize +chart):\n%s", k, tt.kustomization, diff)
				}
			}
		})
	}
}

// helmLabels are the labels Helm's own charts put on every object, with the value each must
// have; config/ has none of them.
func helmLabels(t testing.TB) map[string]string {
	t.Helper()
	meta := loadChart(t).Metadata
	return map[string]string{
		"helm.sh/chart":                meta.Name + "-" + meta.Version,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/instance":   helm.ReleaseName,
		"app.kubernetes.io/version":    meta.AppVersion,
	}
}

// withoutHelmConventions returns a copy of a rendered object without Helm's labels on its
// metadata (each must be there, with its value) and, on a CRD, the resource policy that keeps it
// on uninstall (which must be there). Labels elsewhere (selectors, pod templates) stay compared.
func withoutHelmConventions(t testing.TB, u *unstructured.Unstructured, helmLabels map[string]string) *unstructured.Unstructured {
	t.Helper()
	u = u.DeepCopy()
	labels := u.GetLabels()
	for name, value := range helmLabels {
		if labels[name] != value {
			t.Errorf("%s %s: label %s is %q, want %q", u.GetKind(), u.GetName(), name, labels[name], value)
		}
		delete(labels, name)
	}
	u.SetLabels(labels)
	if u.GetKind() == "CustomResourceDefinition" {
		annotations := u.GetAnnotations()
		if annotations[keepPolicy] != "keep" {
			t.Errorf("CRD %s: annotation %s is %q, want keep", u.GetName(), keepPolicy, annotations[keepPolicy])
		}
		delete(annotations, keepPolicy)
		u.SetAnnotations(annotations)
	}
	return u
}

const keepPolicy = "helm.sh/resource-policy"

// inKeyOrder returns a copy of an object whose pod template has its containers' env and
// volumeMounts, and its volumes, sorted by name (mount path for mounts). kustomize's strategic
// merge puts the entries a patch adds or changes first (the read-ahead Component's), where the
// chart writes them in the base's order; the API gives these lists no order, but for env
// variables that refer to one another, which the test refuses so that sorting hides nothing.
func inKeyOrder(t testing.TB, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u = u.DeepCopy()
	spec, ok, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	if !ok {
		return u
	}
	byField := func(field string) func(a, b any) int {
		return func(a, b any) int {
			return strings.Compare(fmt.Sprint(a.(map[string]any)[field]), fmt.Sprint(b.(map[string]any)[field]))
		}
	}
	sortList := func(m map[string]any, list, field string) {
		if l, ok := m[list].([]any); ok {
			slices.SortStableFunc(l, byField(field))
		}
	}
	sortList(spec, "volumes", "name")
	for _, kind := range []string{"initContainers", "containers"} {
		containers, _ := spec[kind].([]any)
		for _, c := range containers {
			c := c.(map[string]any)
			env, _ := c["env"].([]any)
			for _, e := range env {
				if v, _ := e.(map[string]any)["value"].(string); strings.Contains(v, "$(") {
					t.Fatalf("%s %s: env %v refers to another variable, so the order of env matters", u.GetKind(), u.GetName(), e)
				}
			}
			sortList(c, "env", "name")
			sortList(c, "volumeMounts", "mountPath")
		}
	}
	if err := unstructured.SetNestedMap(u.Object, spec, "spec", "template", "spec"); err != nil {
		t.Fatal(err)
	}
	return u
}

// key names an object the way the API server does.
type key struct {
	Group, Kind, Namespace, Name string
}

func (k key) String() string {
	return strings.TrimPrefix(fmt.Sprintf("%s.%s %s/%s", k.Kind, k.Group, k.Namespace, k.Name), "/")
}

func byKey(t testing.TB, objs []*unstructured.Unstructured) map[key]*unstructured.Unstructured {
	t.Helper()
	if len(objs) == 0 {
		t.Fatal("no objects")
	}
	m := map[key]*unstructured.Unstructured{}
	for _, o := range objs {
		gv, err := schema.ParseGroupVersion(o.GetAPIVersion())
		if err != nil {
			t.Fatal(err)
		}
		k := key{Group: gv.Group, Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
		if _, dup := m[k]; dup {
			t.Errorf("%s is there twice", k)
		}
		m[k] = o
	}
	return m
}

func sortedKeys(m map[key]*unstructured.Unstructured) []key {
	return slices.SortedFunc(maps.Keys(m), func(a, b key) int { return strings.Compare(a.String(), b.String()) })
}

func createsNamespace(vals map[string]any) bool {
	ns, _ := vals["namespace"].(map[string]any)
	create, _ := ns["create"].(bool)
	return create
}
