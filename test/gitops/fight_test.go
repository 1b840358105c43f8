package gitops

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fluxcd/pkg/ssa"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestWithoutTheIgnoreRuleTheFightStops is what the drift ignore rule of docs/gitops.md prevents:
// a Bitnami StatefulSet whose repository sets MARIADB_EXTRA_FLAGS, applied by Flux's engine without
// the rule. Each interval the engine puts the repository's value back and the controller restores
// its flags, until the controller stops writing with FightingAnotherWriter after at most three
// restores, naming the engine's field manager as the owner of the value that replaced its flags;
// from then on neither side writes, and the repository's value stands.
func TestWithoutTheIgnoreRuleTheFightStops(t *testing.T) {
	s := requireSuite(t)
	ns := s.namespace(t)
	all, err := LoadRepository(repository, ns)
	if err != nil {
		t.Fatal(err)
	}
	repo := slices.DeleteFunc(all, func(o *unstructured.Unstructured) bool {
		return o.GetName() != "ram" && o.GetName() != "bitnami-mariadb-flags"
	})
	flux, err := NewEngine(s.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	reconcile(t, flux, repo)
	testenv.Eventually(t, settleTimeout, func() string {
		sts := testenv.Get[appsv1.StatefulSet](t, s.admin, ns, "bitnami-mariadb-flags")
		if v := envValue(sts, "mariadb", "MARIADB_EXTRA_FLAGS"); !strings.Contains(v, "--tmpdir=") {
			return "MARIADB_EXTRA_FLAGS has no flags of the ScratchVolume yet: " + v
		}
		return ""
	})

	var held bool
	for i := 1; i <= 10 && !held; i++ {
		reconcile(t, flux, repo)
		time.Sleep(interval)
		c := meta.FindStatusCondition(testenv.Get[v1alpha1.ScratchVolume](t, s.admin, ns, "ram").Status.Conditions, v1alpha1.ConditionInjected)
		held = c != nil && c.Reason == v1alpha1.ReasonFightingAnotherWriter
	}
	if !held {
		t.Fatalf("the controller did not stop restoring within 10 intervals")
	}
	sv := testenv.Get[v1alpha1.ScratchVolume](t, s.admin, ns, "ram")
	if n := len(sv.Status.Targets[0].Restores); n == 0 || n > 3 {
		t.Errorf("%d restores before the controller stopped, want 1 to 3", n)
	}
	before := s.manager.Writes.Count("statefulsets", ns, "bitnami-mariadb-flags")
	reconcile(t, flux, repo) // the engine puts its value back one last time, if the last write was the controller's
	engineWrites := flux.Writes()
	for i := 1; i <= 5; i++ {
		if cs := reconcile(t, flux, repo); count(cs, ssa.UnchangedAction) != len(repo) {
			t.Errorf("interval %d after the controller stopped: the engine still changes objects:\n%s", i, cs)
		}
		time.Sleep(interval)
	}
	if d := s.manager.Writes.Count("statefulsets", ns, "bitnami-mariadb-flags") - before; d != 0 {
		t.Errorf("the controller wrote %d more times to the StatefulSet after it stopped", d)
	}
	if d := flux.Writes() - engineWrites; d != 0 {
		t.Errorf("the engine wrote %d more times after the controller stopped", d)
	}
	sts := testenv.Get[appsv1.StatefulSet](t, s.admin, ns, "bitnami-mariadb-flags")
	if v := envValue(sts, "mariadb", "MARIADB_EXTRA_FLAGS"); v != "--max-connections=200 --log-bin=mysql-bin" {
		t.Errorf("MARIADB_EXTRA_FLAGS is %q after the fight, want the repository's value", v)
	}
	msg := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionInjected).Message
	t.Logf("the controller stopped after %d restores: %s", len(sv.Status.Targets[0].Restores), msg)
	// The engine's apply set the value that replaced the flags: it owns that field, and the
	// message names it as such, and no manager that does not own it.
	if want := "field manager " + FieldManager + " (with a server-side apply, last change "; !strings.Contains(msg, want) ||
		!strings.Contains(msg, "owns the value of MARIADB_EXTRA_FLAGS in container mariadb") {
		t.Errorf("the Injected condition does not name %s as the owner of the variable's value: %s", FieldManager, msg)
	}
	for _, wrong := range []string{v1alpha1.FieldManager, "not known", "kube-controller-manager"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("the Injected condition says %q: %s", wrong, msg)
		}
	}
	war := sv.Status.Targets[0].WriteWar
	if war == nil || len(war.Candidates) != 1 || war.Candidates[0].FieldManager != FieldManager ||
		war.Candidates[0].Operation != metav1.ManagedFieldsOperationApply || len(war.Candidates[0].Owns) != 1 {
		t.Errorf("status.targets[0].writeWar = %+v, want %s alone, as the owner of the value", war, FieldManager)
	}
}
