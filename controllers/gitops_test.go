package controllers_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// settle waits for the injection, then returns the number of controller writes so far.
func settle(t *testing.T, e *testenv.Env, ns string) int {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
		sts := getSTS(t, e, ns, "db")
		if inject.Observed(&sts.Spec.Template).Empty() {
			return "not injected"
		}
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	time.Sleep(500 * time.Millisecond)
	return writes.get(ns)
}

// expectWrites asserts that the controller settles at exactly base+extra writes and stays there.
func expectWrites(t *testing.T, ns string, base, extra int) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
		if n := writes.get(ns) - base; n != extra {
			return fmt.Sprintf("%d controller writes, want %d", n, extra)
		}
		return ""
	})
	testenv.Consistently(t, 2*time.Second, func() string {
		if n := writes.get(ns) - base; n != extra {
			return fmt.Sprintf("%d controller writes, want %d: a write loop", n, extra)
		}
		return ""
	})
}

func unstructuredSTS(t *testing.T, sts *appsv1.StatefulSet) *unstructured.Unstructured {
	t.Helper()
	sts = sts.DeepCopy()
	sts.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sts)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: raw}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	return u
}

// TestForcedServerSideApplyByAnotherManager is Argo CD with server-side apply and --force-conflicts
// re-applying the StatefulSet from Git: it owns none of our entries, so they stay, and the controller
// does not write at all.
func TestForcedServerSideApplyByAnotherManager(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	manifest := unstructuredSTS(t, mariadbStatefulSet(ns, "db"))
	apply := func() {
		t.Helper()
		ac := client.ApplyConfigurationFromUnstructured(manifest.DeepCopy())
		if err := e.Client.Apply(ctxFor(t), ac, client.FieldOwner("argocd-controller"), client.ForceOwnership); err != nil {
			t.Fatalf("apply by argocd-controller: %v", err)
		}
	}
	apply()
	create(t, e, scratchVolume(ns, "tmp", "db"))
	base := settle(t, e, ns)
	apply()
	apply()
	expectWrites(t, ns, base, 0)
	if inject.Observed(&getSTS(t, e, ns, "db").Spec.Template).Empty() {
		t.Fatal("the other manager's apply removed the injection")
	}
}

// TestReplaceByAnotherManager is a full replace (kubectl replace, or a sync with Replace=true) of the
// original object, which drops our entries: the controller restores them with one write and settles.
func TestReplaceByAnotherManager(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	base := settle(t, e, ns)
	for range 2 {
		cur := getSTS(t, e, ns, "db")
		replaced := mariadbStatefulSet(ns, "db")
		replaced.ResourceVersion = cur.ResourceVersion
		if err := e.Client.Update(ctxFor(t), replaced, client.FieldOwner("kubectl-replace")); err != nil {
			t.Fatal(err)
		}
		base++
		expectWrites(t, ns, base-1, 1)
		base = writes.get(ns)
		if inject.Observed(&getSTS(t, e, ns, "db").Spec.Template).Empty() {
			t.Fatal("entries not restored")
		}
	}
	assertEvent(t, ns, "tmp", "Restored")
}

// TestClientSideKubectlApply re-applies the original manifest with `kubectl apply` (client-side, with
// its last-applied annotation), the way many GitOps pipelines and people still do.
func TestClientSideKubectlApply(t *testing.T) {
	e := startManager(t)
	kubectl := testenv.Kubectl(t)
	ns := e.Namespace(t)
	kubeconfig := e.AdminKubeconfig(t, "gitops-admin")
	manifest, err := yaml.Marshal(unstructuredSTS(t, mariadbStatefulSet(ns, "db")).Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "db.yaml")
	if err := os.WriteFile(file, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", file).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	run()
	create(t, e, scratchVolume(ns, "tmp", "db"))
	base := settle(t, e, ns)
	run()
	run()
	expectWrites(t, ns, base, 0)
	if inject.Observed(&getSTS(t, e, ns, "db").Spec.Template).Empty() {
		t.Fatal("kubectl apply removed the injection")
	}
}

// TestRolloutFollowsTheStatefulSetController plays the StatefulSet controller (envtest has none) and
// checks that RolledOut and Ready follow the pods, honoring OnDelete.
func TestRolloutFollowsTheStatefulSetController(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	create(t, e, sts, scratchVolume(ns, "tmp", "db"))
	settle(t, e, ns)
	setStatus := func(updated int32, current, update string) {
		t.Helper()
		cur := getSTS(t, e, ns, "db")
		cur.Status = appsv1.StatefulSetStatus{
			ObservedGeneration: cur.Generation, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: updated,
			CurrentRevision: current, UpdateRevision: update, AvailableReplicas: 2,
		}
		if err := e.Client.Status().Update(ctxFor(t), cur); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(1, "rev1", "rev2")
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionRolledOut, metav1.ConditionFalse, "WaitingForPodDeletion")
	})
	if c := condition(t, e, ns, "tmp", v1alpha1.ConditionRolledOut); c.Message == "" || !strings.Contains(c.Message, "1 of 2 pods") {
		t.Errorf("the OnDelete message should count pods: %q", c.Message)
	}
	setStatus(2, "rev2", "rev2")
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionReady, metav1.ConditionTrue, "Ready")
	})
	st := getSV(t, e, ns, "tmp").Status.Targets[0]
	if st.UpdatedReplicas != 2 || st.Replicas != 2 || st.ReadyReplicas != 2 {
		t.Errorf("target status does not follow the StatefulSet: %+v", st)
	}
}
