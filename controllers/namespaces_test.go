package controllers_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
	"github.com/dbtune/scratch-operator/test/testmanager"
)

// TestManagerWatchingSomeNamespaces runs a manager that watches two namespaces, as --namespaces
// makes it: its cache holds an informer of each kind per namespace, and the controller reads its
// indexes from each. It injects by selector in one namespace and by name in the other, and leaves
// a namespace it does not watch alone. The API server is one of its own: the package's manager
// watches every namespace.
func TestManagerWatchingSomeNamespaces(t *testing.T) {
	testenv.Require(t, env)
	own, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	bySelector, byName, unwatched := own.Namespace(t), own.Namespace(t), own.Namespace(t)
	testmanager.RunIn(t, own.Config, own.Scheme, []string{bySelector, byName}, nil)

	for _, ns := range []string{bySelector, unwatched} {
		sv := testenv.SelectorScratchVolume("tmp", nil)
		sv.Namespace, sv.UID, sv.Generation = ns, "", 0
		create(t, own, mariadbStatefulSet(ns, "db"), &sv)
	}
	create(t, own, mariadbStatefulSet(byName, "db"), scratchVolume(byName, "tmp", "db"))

	for _, ns := range []string{bySelector, byName} {
		testenv.Eventually(t, waitTimeout, func() string {
			return conditionIs(t, own, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
		})
		if _, ok := getSTS(t, own, ns, "db").Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+"tmp"]; !ok {
			t.Errorf("namespace %s: the StatefulSet does not carry the injection", ns)
		}
	}
	testenv.Consistently(t, 2*time.Second, func() string {
		if sts := getSTS(t, own, unwatched, "db"); len(sts.Spec.Template.Annotations) > 0 {
			return "the StatefulSet of a namespace the manager does not watch was changed"
		}
		if sv := getSV(t, own, unwatched, "tmp"); len(sv.Status.Conditions) > 0 {
			return "the ScratchVolume of a namespace the manager does not watch has a status"
		}
		return ""
	})
}
