package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// everySecond runs write every second until stop, which ends it and waits; t's end stops it too.
func everySecond(t *testing.T, write func(ctx context.Context)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			write(ctx)
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// otherOperator plays an operator that owns the StatefulSet "db" and, every second, writes its own
// pod template back with an Update, the way many operators reconcile: whatever it did not put
// there goes. stop ends it and waits.
func otherOperator(t *testing.T, e *testenv.Env, ns string, template corev1.PodTemplateSpec) (stop func()) {
	t.Helper()
	return everySecond(t, func(ctx context.Context) {
		sts := &appsv1.StatefulSet{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, sts); err != nil {
			return
		}
		sts.Spec.Template = *template.DeepCopy()
		_ = e.Client.Update(ctx, sts, client.FieldOwner("other-operator")) // a conflict waits for the next round
	})
}

// storedCopyWriter plays another controller that keeps the StatefulSet "db" as it first stored
// it and, every second, writes that copy back over the live object with an Update under its own
// field manager, stamping an annotation: the pod template it writes is the one kubectl created,
// so it owns no field under it, yet it removes the injection. stop ends it and waits.
func storedCopyWriter(t *testing.T, e *testenv.Env, ns string, stored *appsv1.StatefulSet) (stop func()) {
	t.Helper()
	return everySecond(t, func(ctx context.Context) {
		live := &appsv1.StatefulSet{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, live); err != nil {
			return
		}
		restored := stored.DeepCopy()
		restored.ResourceVersion, restored.ManagedFields = live.ResourceVersion, nil
		restored.Annotations = map[string]string{"example.com/restored-at": time.Now().Format(time.RFC3339Nano)}
		_ = e.Client.Update(ctx, restored, client.FieldOwner("stored-copy-writer")) // a conflict waits for the next round
	})
}

// TestWriteWarWithAStoredCopyWriter is a StatefulSet created with kubectl and then written back
// every second from another controller's stored copy: the controller stops after the window's
// restores, and since the API server does not record who removes a field, its conditions say the
// remover is not known for sure and list the candidates, the stored-copy writer first, instead of
// blaming kubectl, which created the pod template.
func TestWriteWarWithAStoredCopyWriter(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	if err := e.Client.Create(ctxFor(t), sts, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
	stored := getSTS(t, e, ns, "db")
	create(t, e, scratchVolume(ns, "tmp", "db"))
	settle(t, e, ns)
	storedCopyWriter(t, e, ns, stored)
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionFalse, v1alpha1.ReasonFightingAnotherWriter)
	})
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInjected, v1alpha1.ConditionConflict} {
		c := condition(t, e, ns, "tmp", typ)
		if !strings.Contains(c.Message, "not known for sure") || !strings.Contains(c.Message, "stored-copy-writer (last update ") {
			t.Errorf("%s does not say that the remover is not known for sure, nor list stored-copy-writer with its time: %s", typ, c.Message)
		}
		if i, j := strings.Index(c.Message, "stored-copy-writer"), strings.Index(c.Message, "kubectl-client-side-apply"); j >= 0 && j < i {
			t.Errorf("%s lists kubectl-client-side-apply before the newer stored-copy-writer: %s", typ, c.Message)
		}
		if strings.Contains(c.Message, "field manager kubectl-client-side-apply removed") {
			t.Errorf("%s blames kubectl-client-side-apply: %s", typ, c.Message)
		}
	}
	war := getSV(t, e, ns, "tmp").Status.Targets[0].WriteWar
	if war == nil || len(war.Candidates) == 0 || war.Candidates[0].FieldManager != "stored-copy-writer" || war.Candidates[0].LastUpdate.IsZero() {
		t.Errorf("status.targets[0].writeWar = %+v, want stored-copy-writer first among the candidates, with its time", war)
	}
}

// counter reads a counter of the controller's metrics for namespace ns.
func counter(t *testing.T, name, ns string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// warningEvents counts the Warning Events with reason about the ScratchVolume "tmp".
func warningEvents(t *testing.T, ns, reason string) int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := env.Client.List(ctxFor(t), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if ev.Regarding.Name == "tmp" && ev.Reason == reason && ev.Type == corev1.EventTypeWarning {
			n++
			if ev.Series != nil {
				n += int(ev.Series.Count) - 1
			}
		}
	}
	return n
}

// startFight creates the StatefulSet as other-operator, injects it, and starts other-operator's
// loop; it returns the controller's writes before the fight and the loop's stop.
func startFight(t *testing.T, e *testenv.Env, ns string) (base int, stop func()) {
	t.Helper()
	sts := mariadbStatefulSet(ns, "db")
	if err := e.Client.Create(ctxFor(t), sts, client.FieldOwner("other-operator")); err != nil {
		t.Fatal(err)
	}
	template := getSTS(t, e, ns, "db").Spec.Template
	create(t, e, scratchVolume(ns, "tmp", "db"))
	base = settle(t, e, ns)
	return base, otherOperator(t, e, ns, template)
}

// expectHeld waits for the fight to be reported and checks that the controller then stays away:
// at most the window's restores, a stable generation, the condition naming other-operator.
func expectHeld(t *testing.T, e *testenv.Env, ns string, base, maxWrites int) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionFalse, v1alpha1.ReasonFightingAnotherWriter)
	})
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInjected} {
		if c := condition(t, e, ns, "tmp", typ); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "other-operator (last update ") ||
			!strings.Contains(c.Message, "the volume dbtune-scratch-tmp") {
			t.Errorf("%s should be False and name other-operator and what it removed: %+v", typ, c)
		}
	}
	if c := condition(t, e, ns, "tmp", v1alpha1.ConditionConflict); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonFightingAnotherWriter {
		t.Errorf("Conflict = %s/%s, want True/%s", c.Status, c.Reason, v1alpha1.ReasonFightingAnotherWriter)
	}
	generation := getSTS(t, e, ns, "db").Generation
	testenv.Consistently(t, 3*time.Second, func() string {
		if n := writes.get(ns) - base; n > maxWrites {
			return fmt.Sprintf("%d controller writes since the injection, want at most %d", n, maxWrites)
		}
		if g := getSTS(t, e, ns, "db").Generation; g != generation {
			return fmt.Sprintf("the StatefulSet's generation moved from %d to %d while the controller held off", generation, g)
		}
		return ""
	})
}

// TestWriteWarStopsAndResumesWhenQuiet is an Update-based operator rewriting the pod template
// every second: the controller restores the injection as often as the window allows, then stops
// writing, says who removed what, warns once, and puts the injection back once the other writer
// has been quiet for the window.
func TestWriteWarStopsAndResumesWhenQuiet(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	restores, wars := counter(t, "dbtune_scratch_restores_total", ns), counter(t, "dbtune_scratch_write_wars_total", ns)
	base, stop := startFight(t, e, ns)
	expectHeld(t, e, ns, base, 3)
	sv := getSV(t, e, ns, "tmp")
	if war := sv.Status.Targets[0].WriteWar; war == nil || !slices.ContainsFunc(war.Candidates, func(c v1alpha1.WriteCandidate) bool { return c.FieldManager == "other-operator" }) || war.Holds != 1 {
		t.Errorf("status.targets[0].writeWar = %+v, want other-operator in its first hold", war)
	}
	if n := len(sv.Status.Targets[0].Restores); n != 3 {
		t.Errorf("status.targets[0].restores holds %d times, want 3", n)
	}
	if n := warningEvents(t, ns, "FightingAnotherWriter"); n != 1 {
		t.Errorf("%d FightingAnotherWriter Warning Events, want 1", n)
	}
	if d := counter(t, "dbtune_scratch_restores_total", ns) - restores; d != 3 {
		t.Errorf("dbtune_scratch_restores_total rose by %v, want 3", d)
	}
	if d := counter(t, "dbtune_scratch_write_wars_total", ns) - wars; d != 1 {
		t.Errorf("dbtune_scratch_write_wars_total rose by %v, want 1", d)
	}

	stop()
	held := writes.get(ns)
	testenv.Eventually(t, waitTimeout, func() string {
		if inject.Observed(&getSTS(t, e, ns, "db").Spec.Template).Empty() {
			return "not injected again after the other writer stopped"
		}
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, v1alpha1.ReasonInjected)
	})
	if n := writes.get(ns) - held; n != 1 {
		t.Errorf("%d writes to resume, want 1", n)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		if war := getSV(t, e, ns, "tmp").Status.Targets[0].WriteWar; war != nil {
			return fmt.Sprintf("the fight is still recorded a window after the injection stayed: %+v", war)
		}
		return ""
	})
}

// TestWriteWarResumesOnSpecChange changes the ScratchVolume during a fight: the controller writes
// the new configuration at once, and when that is removed too, holds off again for longer without
// spending the window's restores.
func TestWriteWarResumesOnSpecChange(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	base, stop := startFight(t, e, ns)
	expectHeld(t, e, ns, base, 3)
	held := writes.get(ns)
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Spec.Size = resource.MustParse("1Gi") })
	testenv.Eventually(t, waitTimeout, func() string {
		if n := writes.get(ns) - held; n != 1 {
			return fmt.Sprintf("%d writes after the spec change, want 1", n)
		}
		war := getSV(t, e, ns, "tmp").Status.Targets[0].WriteWar
		if war == nil || war.Holds != 2 {
			return fmt.Sprintf("writeWar = %+v, want the second hold", war)
		}
		return ""
	})
	expectHeld(t, e, ns, held, 1)
	if n := warningEvents(t, ns, "FightingAnotherWriter"); n != 1 {
		t.Errorf("%d FightingAnotherWriter Warning Events, want 1 for the whole fight", n)
	}
	stop()
}

// TestNoFightWithServerSideApplyLoop is a GitOps tool re-applying the StatefulSet with server-side
// apply every second: it never owned the entries, so nothing is removed and nothing is fought.
func TestNoFightWithServerSideApplyLoop(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	manifest := unstructuredSTS(t, mariadbStatefulSet(ns, "db"))
	apply := func() error {
		return e.Client.Apply(ctxFor(t), client.ApplyConfigurationFromUnstructured(manifest.DeepCopy()),
			client.FieldOwner("flux-kustomize"), client.ForceOwnership)
	}
	if err := apply(); err != nil {
		t.Fatal(err)
	}
	create(t, e, scratchVolume(ns, "tmp", "db"))
	base := settle(t, e, ns)
	for range 5 {
		if err := apply(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	expectWrites(t, ns, base, 0)
	if c := condition(t, e, ns, "tmp", v1alpha1.ConditionConflict); c.Status != metav1.ConditionFalse {
		t.Errorf("Conflict = %+v, want False", c)
	}
}

// TestControlledStatefulSetIsLeftToItsOperator gives the StatefulSet a controller owner reference
// to a mariadb-operator MariaDB: untouched, with a condition naming the owner; listed in
// spec.target.allowedControllers, it is injected.
func TestControlledStatefulSetIsLeftToItsOperator(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	sts.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "k8s.mariadb.com/v1alpha1", Kind: "MariaDB", Name: "main", UID: "0b6f1c3e-4d38-4a7e-9c53-d6c1d7d0e001",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	create(t, e, sts, scratchVolume(ns, "tmp", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonControlledByOperator)
	})
	c := condition(t, e, ns, "tmp", v1alpha1.ConditionInjected)
	for _, want := range []string{"MariaDB main", "API group k8s.mariadb.com", "spec.target.allowedControllers"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Injected message %q does not say %q", c.Message, want)
		}
	}
	expectWrites(t, ns, 0, 0)
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) {
		sv.Spec.Target.AllowedControllers = []v1alpha1.ControllerKind{{APIGroup: "k8s.mariadb.com", Kind: "MariaDB"}}
	})
	settle(t, e, ns)
}

// TestFailedWriteIsReported makes every change to the StatefulSet fail the way an unreachable
// admission webhook with failurePolicy Fail does: the status must say so, not that the
// StatefulSet carries the volume.
func TestFailedWriteIsReported(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"))
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "unreachable-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "statefulsets.unreachable.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL: ptr.To("https://127.0.0.1:1/validate"),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
					Resources: []string{"statefulsets"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](2),
		}},
	}
	create(t, e, webhook)
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), webhook) })
	// The webhook configuration reaches the API server's admission chain a moment after it is stored.
	time.Sleep(2 * time.Second)
	create(t, e, scratchVolume(ns, "tmp", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionFalse, v1alpha1.ReasonWriteFailed)
	})
	for _, typ := range []string{v1alpha1.ConditionInjected, v1alpha1.ConditionReady} {
		if c := condition(t, e, ns, "tmp", typ); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "failed calling webhook") {
			t.Errorf("%s = %+v, want False quoting the error", typ, c)
		}
	}
	sv := getSV(t, e, ns, "tmp")
	if sv.Status.InjectedTargets != 0 || len(sv.Status.Targets) != 1 || sv.Status.Targets[0].Injected {
		t.Errorf("status counts the StatefulSet as injected: %+v", sv.Status)
	}
	if err := e.Client.Delete(ctxFor(t), webhook); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	updateSTS(t, e, ns, "db", func(sts *appsv1.StatefulSet) { sts.Labels["touched"] = "yes" })
	settle(t, e, ns)
}

// TestAnotherManagersValueIsReportedNotRetriedAtOnce has kubectl edit set another size on the
// injected volume: that field is kubectl's now, and the controller, which takes no field from
// another manager, cannot apply its own value. The status must say so, naming the manager and the
// field and what ends it, instead of staying Ready while the StatefulSet holds the other size; the
// controller must back off instead of retrying ten times a second; and once the other value is
// gone, the next retry writes the ScratchVolume's again.
func TestAnotherManagersValueIsReportedNotRetriedAtOnce(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"))
	create(t, e, scratchVolume(ns, "tmp", "db"))
	settle(t, e, ns)
	edit := func(size *resource.Quantity) {
		t.Helper()
		testenv.Eventually(t, waitTimeout, func() string {
			sts := getSTS(t, e, ns, "db")
			findVolume(&sts.Spec.Template.Spec, "dbtune-scratch-tmp").EmptyDir.SizeLimit = size
			if err := e.Client.Update(ctxFor(t), sts, client.FieldOwner("kubectl-edit")); err != nil {
				return err.Error()
			}
			return ""
		})
	}
	edit(ptr.To(resource.MustParse("64Mi")))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionFalse, v1alpha1.ReasonWriteFailed)
	})
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInjected} {
		c := condition(t, e, ns, "tmp", typ)
		for _, want := range []string{`"kubectl-edit"`, "emptyDir.sizeLimit", "never takes a field from another manager", "set it back"} {
			if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, want) {
				t.Errorf("%s = %s, %q: want False, saying %q", typ, c.Status, c.Message, want)
			}
		}
	}
	// Backing off (controller-runtime's delays double from 5 ms), the controller tries once or
	// twice in the 3 s that follow its first 3 s; a retry at once, as for a stale write, would
	// try about thirty times.
	time.Sleep(3 * time.Second)
	base := writes.get(ns)
	time.Sleep(3 * time.Second)
	if n := writes.get(ns) - base; n > 3 {
		t.Errorf("%d write attempts in 3 s, 3 s after the conflict was reported: a retry loop", n)
	}
	edit(nil)
	testenv.Eventually(t, waitTimeout, func() string {
		v := findVolume(&getSTS(t, e, ns, "db").Spec.Template.Spec, "dbtune-scratch-tmp")
		if v == nil || v.EmptyDir.SizeLimit == nil {
			return "the ScratchVolume's size is not back"
		}
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
}
