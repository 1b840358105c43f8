package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestSelectorRollsOutInWaves plays the StatefulSet controller for a fleet of four under a
// selector that allows two in flight: the injection, a size change and the revert each reach two
// StatefulSets, then the next two once those are rolled out and ready; a target that does not get
// there within the deadline stops the rollout.
func TestSelectorRollsOutInWaves(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	names := []string{"db-0", "db-1", "db-2", "db-3"}
	for _, name := range names {
		create(t, e, mariadbStatefulSet(ns, name))
		rollOut(t, e, ns, name)
	}
	// A fleet still rolling out counts as in flight: let the manager's cache see it rolled out.
	time.Sleep(time.Second)
	sv := scratchVolume(ns, "tmp", "")
	sv.Spec.Target = v1alpha1.ScratchTarget{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "db"}}}
	two := intstr.FromInt32(2)
	sv.Spec.Rollout = &v1alpha1.RolloutPolicy{MaxInFlight: &two}
	create(t, e, sv)

	// A wave of two, and the others wait for it.
	first := waitCarrying(t, e, ns, sv, 2, "")
	testenv.Consistently(t, 2*time.Second, func() string {
		if got := carrying(t, e, ns, sv, ""); len(got) != 2 {
			return fmt.Sprintf("the first wave is two StatefulSets, not %v", got)
		}
		return ""
	})
	if why := conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionFalse, v1alpha1.ReasonWaitingForRolloutSlot); why != "" {
		t.Error(why)
	}
	for _, name := range first {
		rollOut(t, e, ns, name)
	}
	for _, name := range waitCarrying(t, e, ns, sv, 4, "") {
		rollOut(t, e, ns, name)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	})

	// A size change: two at a time again; two that never get ready stop the rollout.
	before := map[string]string{}
	for _, name := range names {
		before[name] = getSTS(t, e, ns, name).Spec.Template.Annotations[sv.InjectionAnnotation()]
	}
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Spec.Size = resource.MustParse("384Mi") })
	changed := func() []string {
		var out []string
		for _, name := range names {
			if getSTS(t, e, ns, name).Spec.Template.Annotations[sv.InjectionAnnotation()] != before[name] {
				out = append(out, name)
			}
		}
		return out
	}
	testenv.Eventually(t, waitTimeout, func() string {
		if got := changed(); len(got) != 2 {
			return fmt.Sprintf("changed: %v", got)
		}
		return ""
	})
	stuck := changed()
	testenv.Eventually(t, progressDeadline+waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionRolledOut, metav1.ConditionFalse, v1alpha1.ReasonRolloutStopped)
	})
	if msg := condition(t, e, ns, "tmp", v1alpha1.ConditionRolledOut).Message; !containsAny(msg, stuck) {
		t.Errorf("the stopped rollout should name a stuck StatefulSet %v: %s", stuck, msg)
	}
	testenv.Consistently(t, 2*time.Second, func() string {
		if got := changed(); len(got) != 2 {
			return fmt.Sprintf("a stopped rollout changed more StatefulSets: %v", got)
		}
		return ""
	})
	for _, name := range stuck {
		rollOut(t, e, ns, name)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		if got := changed(); len(got) != 4 {
			return fmt.Sprintf("changed once the stuck ones are ready: %v", got)
		}
		return ""
	})
	for _, name := range names {
		rollOut(t, e, ns, name)
	}

	// The revert: two at a time, and the ScratchVolume goes once all are reverted.
	if err := e.Client.Delete(ctxFor(t), getSV(t, e, ns, "tmp")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		if got := carrying(t, e, ns, sv, ""); len(got) != 2 {
			return fmt.Sprintf("the first revert wave leaves two carrying the volume, not %v", got)
		}
		return ""
	})
	testenv.Consistently(t, 2*time.Second, func() string {
		if got := carrying(t, e, ns, sv, ""); len(got) != 2 {
			return fmt.Sprintf("reverted more than two at once: %v still carry it", got)
		}
		return ""
	})
	for _, name := range names {
		rollOut(t, e, ns, name)
	}
	testenv.Eventually(t, 2*waitTimeout, func() string {
		if got := carrying(t, e, ns, sv, ""); len(got) != 0 {
			return fmt.Sprintf("still carrying: %v", got)
		}
		err := e.Client.Get(ctxFor(t), client.ObjectKey{Namespace: ns, Name: "tmp"}, &v1alpha1.ScratchVolume{})
		if err == nil {
			return "the ScratchVolume is not gone yet"
		}
		return ""
	})
}

// rollOut plays the StatefulSet controller: every pod of name runs its latest template and is ready.
func rollOut(t *testing.T, e *testenv.Env, ns, name string) {
	t.Helper()
	sts := getSTS(t, e, ns, name)
	n := *sts.Spec.Replicas
	rev := fmt.Sprintf("%s-%d", name, sts.Generation)
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n, CurrentReplicas: n,
		UpdatedReplicas: n, AvailableReplicas: n, CurrentRevision: rev, UpdateRevision: rev}
	if err := e.Client.Status().Update(ctxFor(t), sts); err != nil {
		t.Fatal(err)
	}
}

// carrying names the StatefulSets of ns whose template carries sv's injection, with the hash
// hash when it is not empty.
func carrying(t *testing.T, e *testenv.Env, ns string, sv *v1alpha1.ScratchVolume, hash string) []string {
	t.Helper()
	var list appsv1.StatefulSetList
	if err := e.Client.List(ctxFor(t), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		if h, ok := s.Spec.Template.Annotations[sv.InjectionAnnotation()]; ok && (hash == "" || h == hash) {
			out = append(out, s.Name)
		}
	}
	return out
}

// waitCarrying waits until n StatefulSets carry sv's injection and names them.
func waitCarrying(t *testing.T, e *testenv.Env, ns string, sv *v1alpha1.ScratchVolume, n int, hash string) []string {
	t.Helper()
	var got []string
	testenv.Eventually(t, waitTimeout, func() string {
		if got = carrying(t, e, ns, sv, hash); len(got) != n {
			return fmt.Sprintf("%d StatefulSets carry the injection, want %d: %v", len(got), n, got)
		}
		return ""
	})
	return got
}

func containsAny(s string, subs []string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}
