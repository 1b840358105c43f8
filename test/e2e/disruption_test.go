package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// The tests in this file stop parts of the system under everything else, so they do not call
// t.Parallel: Go runs them one after the other, before the parallel tests start.

// TestManagerKilledMidRollout kills the manager with SIGKILL the moment its injection reaches the
// StatefulSet, while the pods are still rolling, and starts a new one. The new manager waits out the
// dead one's lease, finds the injection already there and writes nothing to the StatefulSet: the
// work is neither lost nor done twice, and the status catches up.
func TestManagerKilledMidRollout(t *testing.T) {
	s := requireSuite(t)
	ns := s.namespace(t)
	before := s.applyStatefulSet(t, ns, s.sample(statefulSetSample))
	w, err := s.clientset.AppsV1().StatefulSets(ns).Watch(t.Context(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", before.Name).String(), ResourceVersion: before.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))

	killed := waitForGeneration(t, w, before.Generation+1)
	s.killManager(t)
	atKill := s.statefulSet(t, ns, before.Name)
	t.Logf("killed the manager as generation %d reached the StatefulSet; by then its controller had observed generation %d and updated %d of %d pods",
		killed.Generation, atKill.Status.ObservedGeneration, atKill.Status.UpdatedReplicas, replicas(atKill))

	if err := s.startManager(t.Context()); err != nil {
		t.Fatal(err)
	}
	sv = s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	sts := s.waitRolledOut(t, ns, before.Name, runsScratchVolume(sv))
	assertInjectedOnce(t, &sts.Spec.Template, sv)
	if sts.Generation != before.Generation+1 {
		t.Errorf("generation %d before the ScratchVolume, %d now: want exactly one write", before.Generation, sts.Generation)
	}
	if ownEntries(sts) != ownEntries(atKill) {
		t.Errorf("the restarted manager wrote the StatefulSet again; managers: %s", managers(sts))
	}
	if n := s.currentManager().statefulSetWrites(t); n != 0 {
		t.Errorf("the restarted manager made %d StatefulSet writes, want none", n)
	}
	if sv.Status.ObservedGeneration != sv.Generation || sv.Status.InjectedTargets != 1 {
		t.Errorf("the status did not catch up: %+v", sv.Status)
	}
}

// waitForGeneration returns the StatefulSet from the first watch event at or past generation.
func waitForGeneration(t *testing.T, w watch.Interface, generation int64) *appsv1.StatefulSet {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the StatefulSet watch ended")
			}
			if sts, isSTS := ev.Object.(*appsv1.StatefulSet); isSTS && sts.Generation >= generation {
				return sts
			}
		case <-timeout:
			t.Fatalf("the StatefulSet did not reach generation %d within %s", generation, waitTimeout)
		}
	}
}

// TestAPIServerRestartUnderTheManager restarts kube-apiserver, right after the manager renewed its
// lease, while the manager runs with an injected StatefulSet. The same manager process must keep its
// leadership, re-establish its watches, leave the settled StatefulSet alone after relisting, and
// inject a ScratchVolume created after the restart.
func TestAPIServerRestartUnderTheManager(t *testing.T) {
	s := requireSuite(t)
	settled := s.namespace(t)
	sts := s.applyStatefulSet(t, settled, s.sample(statefulSetSample))
	sv := s.applyScratchVolume(t, settled, s.sample(scratchVolumeSample))
	s.waitCondition(t, settled, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	s.waitRolledOut(t, settled, sts.Name, runsScratchVolume(sv))
	before := s.settle(t, settled, sts.Name)
	manager := s.currentManager()
	writes := manager.statefulSetWrites(t)

	s.waitForLeaseRenewal(t)
	downtime := s.restartAPIServer(t)
	t.Logf("the API server was unreachable for %s", downtime.Round(time.Millisecond))
	if !manager.Alive() {
		// Leader election gives up after its renew deadline (10 s): an outage that long makes any
		// leader-elected controller exit, by design, and a slow machine can get there.
		t.Fatalf("the manager exited during the %s outage of the API server; the end of %s:\n%s",
			downtime.Round(time.Millisecond), manager.Log, localcluster.Tail(manager.Log, 20))
	}

	fresh := s.namespace(t)
	sts = s.applyStatefulSet(t, fresh, s.sample(statefulSetSample))
	sv = s.applyScratchVolume(t, fresh, s.sample(scratchVolumeSample))
	sv = s.waitCondition(t, fresh, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	assertInjectedOnce(t, &s.waitRolledOut(t, fresh, sts.Name, runsScratchVolume(sv)).Spec.Template, sv)

	if cur := s.currentManager(); cur != manager || !manager.Alive() {
		t.Fatalf("the manager (pid %d) did not survive the restart of the API server", manager.PID)
	}
	if after := s.settle(t, settled, before.Name); after.Generation != before.Generation || ownEntries(after) != ownEntries(before) {
		t.Errorf("the StatefulSet injected before the restart was written again: generation %d -> %d; managers: %s",
			before.Generation, after.Generation, managers(after))
	}
	if n := manager.statefulSetWrites(t) - writes; n != 1 {
		t.Errorf("the manager made %d StatefulSet writes across the restart, want 1 (the new injection)", n)
	}
}

// waitForLeaseRenewal returns right after the manager renewed its leader-election lease, so that a
// short outage that follows stays within the renew deadline (10 s) and costs no leadership.
func (s *suite) waitForLeaseRenewal(t *testing.T) {
	t.Helper()
	get := func() *coordinationv1.Lease {
		lease := testenv.Get[coordinationv1.Lease](t, s.admin, systemNamespace, leaseName)
		return lease
	}
	first := get().Spec.RenewTime
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		if cur := get().Spec.RenewTime; cur != nil && (first == nil || !cur.Equal(first)) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(fmt.Errorf("the manager did not renew Lease %s/%s: %w", systemNamespace, leaseName, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
