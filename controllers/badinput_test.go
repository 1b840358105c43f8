package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestInvalidSelectorStoredByAnOlderCRD stores a ScratchVolume whose selector the current API
// refuses, as a cluster that ran an older CRD may hold one: the controller must say so in a
// condition, leave every StatefulSet alone and not retry in a loop.
func TestInvalidSelectorStoredByAnOlderCRD(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	create(t, e, sts)
	before := getSTS(t, e, ns, "db").ResourceVersion

	sv := scratchVolume(ns, "bad-selector", "")
	sv.Spec.Target = v1alpha1.ScratchTarget{Selector: &v1alpha1.LabelSelector{
		MatchLabels: map[string]v1alpha1.LabelValue{"tier": "my db"},
	}}
	createUnderRelaxedCRD(t, e, sv)
	errorsBefore := reconcileErrors(t)

	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "bad-selector", v1alpha1.ConditionTargetFound, metav1.ConditionFalse, v1alpha1.ReasonInvalidSelector)
	})
	ready := condition(t, e, ns, "bad-selector", v1alpha1.ConditionReady)
	if ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.ReasonInvalidSelector ||
		!strings.Contains(ready.Message, "spec.target.selector is invalid") || !strings.Contains(ready.Message, "my db") {
		t.Errorf("Ready = %+v, want False/%s naming the bad value", ready, v1alpha1.ReasonInvalidSelector)
	}
	testenv.Consistently(t, 3*time.Second, func() string {
		if n := reconcileErrors(t); n != errorsBefore {
			return "the controller keeps failing the reconcile of a spec only the user can fix"
		}
		if rv := getSTS(t, e, ns, "db").ResourceVersion; rv != before {
			return "the StatefulSet was written"
		}
		return ""
	})
}

// createUnderRelaxedCRD creates obj while the ScratchVolume CRD lacks the label key and value
// rules, as an older version of it did, and puts the CRD back at once.
func createUnderRelaxedCRD(t *testing.T, e *testenv.Env, obj client.Object) {
	t.Helper()
	ctx := ctxFor(t)
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "scratchvolumes.dbtune.io"}, crd); err != nil {
		t.Fatal(err)
	}
	original := crd.DeepCopy()
	restore := func() {
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(crd.GroupVersionKind())
		if err := e.Client.Get(context.Background(), client.ObjectKey{Name: crd.GetName()}, current); err != nil {
			t.Errorf("failed to read the CRD back: %v", err)
			return
		}
		current.Object["spec"] = original.Object["spec"]
		if err := e.Client.Update(context.Background(), current); err != nil {
			t.Errorf("failed to restore the CRD: %v", err)
		}
	}
	t.Cleanup(restore)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	selector := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "target", "properties", "selector"}
	v := versions[0].(map[string]any)
	unstructured.RemoveNestedField(v, append(selector, "x-kubernetes-validations")...)
	unstructured.RemoveNestedField(v, append(selector, "properties", "matchLabels", "additionalProperties", "x-kubernetes-validations")...)
	versions[0] = v
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Update(ctx, crd); err != nil {
		t.Fatalf("failed to relax the CRD: %v", err)
	}
	// The API server takes the new schema a moment after the update.
	testenv.Eventually(t, 20*time.Second, func() string {
		if err := e.Client.Create(ctx, obj); err != nil {
			return "the relaxed CRD still refuses it: " + err.Error()
		}
		return ""
	})
	restore()
}

// reconcileErrors is controller-runtime's count of failed reconciles of the ScratchVolume
// controller in this process.
func reconcileErrors(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") == "scratchvolume" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
