package controllers_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestRetargetingRevertsTheOldTarget changes spec.target.name: the old StatefulSet gets its original
// template back, the new one is injected.
func TestRetargetingRevertsTheOldTarget(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "a"), mariadbStatefulSet(ns, "b"))
	originalA := getSTS(t, e, ns, "a").Spec.Template
	create(t, e, scratchVolume(ns, "tmp", "a"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Spec.Target.Name = "b" })
	testenv.Eventually(t, waitTimeout, func() string {
		if inject.Observed(&getSTS(t, e, ns, "b").Spec.Template).Empty() {
			return "b not injected"
		}
		if !equality.Semantic.DeepEqual(originalA, getSTS(t, e, ns, "a").Spec.Template) {
			return "a not reverted to its original template"
		}
		return ""
	})
}

// TestMetricsAreExported checks the controller's own metrics are on the manager's registry.
func TestMetricsAreExported(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = true
		if f.GetName() == "dbtune_scratch_targets_injected" {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "namespace" && l.GetValue() == ns && m.GetGauge().GetValue() != 1 {
						t.Errorf("targets_injected for %s = %v, want 1", ns, m.GetGauge().GetValue())
					}
				}
			}
		}
	}
	for _, name := range []string{"dbtune_scratch_statefulset_writes_total", "dbtune_scratch_targets_injected"} {
		if !found[name] {
			t.Errorf("metric %s is not exported", name)
		}
	}
}
