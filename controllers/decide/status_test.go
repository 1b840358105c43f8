package decide

import (
	"encoding/json"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// A StatefulSet scaled after its injection rolled out bumps its generation and, for a moment,
// has fewer pods than it wants; neither is a rollout of the injection.
func TestRolloutAfterAScale(t *testing.T) {
	const hash = "abc"
	scaled := func(mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
		sts := &appsv1.StatefulSet{}
		sts.Generation = 5
		sts.Spec.Replicas = ptr.To[int32](3)
		sts.Spec.Template.Annotations = map[string]string{v1alpha1.InjectionAnnotationPrefix + "tmp": hash}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 4, UpdatedReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r1"}
		if mutate != nil {
			mutate(sts)
		}
		return sts
	}
	for _, tc := range []struct {
		name       string
		sts        *appsv1.StatefulSet
		settled    bool
		wantDone   bool
		wantReason string
	}{
		{name: "rolled out before: a scale changes nothing", sts: scaled(nil), settled: true, wantDone: true, wantReason: v1alpha1.ReasonRolledOut},
		{name: "never rolled out: wait for the StatefulSet controller", sts: scaled(nil), wantReason: v1alpha1.ReasonWaitingForController},
		{name: "rolled out before, but a rollout began since", settled: true, wantReason: v1alpha1.ReasonRollingOut,
			sts: scaled(func(s *appsv1.StatefulSet) { s.Status.ObservedGeneration, s.Status.UpdateRevision = 5, "r2" })},
		{name: "rolled out with another configuration", settled: true, wantReason: v1alpha1.ReasonRollingOut,
			sts: scaled(func(s *appsv1.StatefulSet) {
				s.Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+"tmp"] = "old"
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg, done := rollout(tc.sts, hash, tc.settled)
			if done != tc.wantDone || reason != tc.wantReason {
				t.Errorf("rollout() = %s, %q, %v; want %s, done %v", reason, msg, done, tc.wantReason, tc.wantDone)
			}
		})
	}
}

func TestStatusChanged(t *testing.T) {
	status := func(rolledOut metav1.ConditionStatus, replicas int32, hash string) v1alpha1.ScratchVolumeStatus {
		return v1alpha1.ScratchVolumeStatus{
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionRolledOut, Status: rolledOut, Reason: "R"}},
			Targets: []v1alpha1.ScratchTargetStatus{{Name: "db", Injected: true, ConfigHash: hash,
				Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas}},
		}
	}
	with := func(s v1alpha1.ScratchVolumeStatus, change func(*v1alpha1.ScratchVolumeStatus)) v1alpha1.ScratchVolumeStatus {
		s.Conditions = slices.Clone(s.Conditions)
		s.Targets = slices.Clone(s.Targets)
		change(&s)
		return s
	}
	rolledOut := status(metav1.ConditionTrue, 1, "a")
	for _, tc := range []struct {
		name       string
		last, next v1alpha1.ScratchVolumeStatus
		want       bool
	}{
		{name: "the same status", last: rolledOut, next: status(metav1.ConditionTrue, 1, "a")},
		{name: "a scale while rolled out", last: rolledOut, next: status(metav1.ConditionTrue, 3, "a")},
		{name: "only ready pods while rolled out", last: rolledOut, next: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) { s.Targets[0].ReadyReplicas = 0 })},
		{name: "a scale during a rollout", last: status(metav1.ConditionFalse, 1, "a"), next: status(metav1.ConditionFalse, 3, "a"), want: true},
		{name: "a rollout ends", last: status(metav1.ConditionFalse, 1, "a"), next: status(metav1.ConditionTrue, 3, "a"), want: true},
		{name: "a rollout begins", last: rolledOut, next: status(metav1.ConditionFalse, 1, "a"), want: true},
		{name: "counts and configuration", last: rolledOut, next: status(metav1.ConditionTrue, 3, "b"), want: true},
		{name: "a condition's message", last: rolledOut, next: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) { s.Conditions[0].Message = "m" }), want: true},
		{name: "a target's message", last: rolledOut, next: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) { s.Targets[0].Message = "m" }), want: true},
		{name: "a target's location", last: rolledOut, next: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) {
			s.Targets[0].TempLocations = []v1alpha1.TempLocation{{Data: v1alpha1.TempDataTmpdir, Medium: v1alpha1.TempMediumMemory}}
		}), want: true},
		{name: "a target more", last: rolledOut, next: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) {
			s.Targets = append(s.Targets, v1alpha1.ScratchTargetStatus{Name: "db2"})
		}), want: true},
		{name: "a target gone", last: rolledOut, next: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) { s.Targets = nil }), want: true},
		{name: "the name moved from a target to the next", want: true,
			last: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) {
				s.Targets = []v1alpha1.ScratchTargetStatus{{Name: "a", Message: "bc"}, {Name: "d"}}
			}),
			next: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) {
				s.Targets = []v1alpha1.ScratchTargetStatus{{Name: "a", Message: "b"}, {Name: "cd"}}
			})},
		{name: "usage", last: rolledOut, next: with(rolledOut, func(s *v1alpha1.ScratchVolumeStatus) { s.InjectedTargets = 1 }), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lastJSON, nextJSON := mustJSON(t, tc.last), mustJSON(t, tc.next)
			got, err := StatusChanged(&tc.last, &tc.next)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("StatusChanged() = %v, want %v", got, tc.want)
			}
			if mustJSON(t, tc.last) != lastJSON || mustJSON(t, tc.next) != nextJSON {
				t.Error("StatusChanged changed its arguments")
			}
			same, err := sameJSON(&tc.last, &tc.next, false)
			if err != nil {
				t.Fatal(err)
			}
			if want := lastJSON == nextJSON; same != want {
				t.Errorf("sameJSON() = %v, the whole encodings equal: %v", same, want)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
