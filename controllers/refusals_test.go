package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// rollingTarget is a StatefulSet that carries sv's injection and is rolling onto it, one of its two
// pods deleted and not created again.
func rollingTarget(sv *v1alpha1.ScratchVolume) *appsv1.StatefulSet {
	sts := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
	sts.Namespace, sts.Name, sts.UID, sts.Generation = sv.Namespace, "mariadb", "sts-uid", 2
	sts.Spec.Replicas = ptr.To[int32](2)
	sts.Spec.Template.Annotations = map[string]string{sv.InjectionAnnotation(): "abc"}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, CurrentRevision: "db-1", UpdateRevision: "db-2"}
	return sts
}

func failedCreateEvent(sts *appsv1.StatefulSet, name string, at time.Time, msg string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: sts.Namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Namespace: sts.Namespace, Name: sts.Name, UID: sts.UID},
		Reason:         "FailedCreate", Type: corev1.EventTypeWarning, LastTimestamp: metav1.NewTime(at),
		Message: "create Pod " + sts.Name + "-1 in StatefulSet " + sts.Name + " failed error: " + msg,
	}
}

// TestRefusedCreationsOfTheInjectedRevision checks which FailedCreate Events count as a refusal of
// the injection's rollout: the newest one on the StatefulSet itself, since the rollout began and
// since the last refusal, while a pod is missing from a rollout of a StatefulSet that carries it.
func TestRefusedCreationsOfTheInjectedRevision(t *testing.T) {
	now := time.Now()
	sv := testenv.SelectorScratchVolume("tmp", nil)
	tests := []struct {
		name   string
		sts    func() *appsv1.StatefulSet
		status func(*v1alpha1.ScratchVolume)
		events func(*appsv1.StatefulSet) []client.Object
		want   string
	}{
		{"refused", func() *appsv1.StatefulSet { return rollingTarget(&sv) }, nil, func(s *appsv1.StatefulSet) []client.Object {
			return []client.Object{failedCreateEvent(s, "a", now.Add(-time.Second), "pods \"x\" is forbidden: older"), failedCreateEvent(s, "b", now, "pods \"x\" is forbidden: newest")}
		}, `pods "x" is forbidden: newest`},
		{"another StatefulSet's", func() *appsv1.StatefulSet { return rollingTarget(&sv) }, nil, func(s *appsv1.StatefulSet) []client.Object {
			other := s.DeepCopy()
			other.Name = "other"
			return []client.Object{failedCreateEvent(other, "a", now, "nope")}
		}, ""},
		{"before the rollout", func() *appsv1.StatefulSet { return rollingTarget(&sv) }, func(sv *v1alpha1.ScratchVolume) {
			sv.Status.Targets = []v1alpha1.ScratchTargetStatus{{Name: "mariadb", InFlightSince: &metav1.Time{Time: now.Add(-time.Minute)}}}
		}, func(s *appsv1.StatefulSet) []client.Object {
			return []client.Object{failedCreateEvent(s, "a", now.Add(-2*time.Minute), "nope")}
		}, ""},
		{"before the last refusal", func() *appsv1.StatefulSet { return rollingTarget(&sv) }, func(sv *v1alpha1.ScratchVolume) {
			sv.Status.Targets = []v1alpha1.ScratchTargetStatus{{Name: "mariadb", Refused: &v1alpha1.RolloutRefusal{Time: metav1.NewTime(now.Add(-time.Second))}}}
		}, func(s *appsv1.StatefulSet) []client.Object {
			return []client.Object{failedCreateEvent(s, "a", now.Add(-5*time.Second), "nope")}
		}, ""},
		{"not carrying the injection", func() *appsv1.StatefulSet {
			s := rollingTarget(&sv)
			s.Spec.Template.Annotations = nil
			return s
		}, nil, func(s *appsv1.StatefulSet) []client.Object {
			return []client.Object{failedCreateEvent(s, "a", now, "nope")}
		}, ""},
		{"all pods there", func() *appsv1.StatefulSet {
			s := rollingTarget(&sv)
			s.Status.Replicas = 2
			return s
		}, nil, func(s *appsv1.StatefulSet) []client.Object {
			return []client.Object{failedCreateEvent(s, "a", now, "nope")}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sv := sv.DeepCopy()
			if tt.status != nil {
				tt.status(sv)
			}
			sts := tt.sts()
			c := fake.NewClientBuilder().WithScheme(schemeWithAPI(t)).WithObjects(tt.events(sts)...).Build()
			r := &ScratchVolumeReconciler{Client: c, MissingPodsGrace: time.Hour}
			got := r.refusedCreations(context.Background(), sts, []*v1alpha1.ScratchVolume{sv})
			if msg := got[sv.Name].Message; msg != tt.want {
				t.Errorf("refusal %q, want %q", msg, tt.want)
			}
		})
	}
}

// TestPodsMissingWithoutAnEvent checks the fallback for a refusal whose Event was lost: a pod
// missing from the rollout for the grace counts as refused, and not before.
func TestPodsMissingWithoutAnEvent(t *testing.T) {
	sv := testenv.SelectorScratchVolume("tmp", nil)
	sts := rollingTarget(&sv)
	c := fake.NewClientBuilder().WithScheme(schemeWithAPI(t)).Build()
	r := &ScratchVolumeReconciler{Client: c, MissingPodsGrace: 200 * time.Millisecond}
	if got := r.refusedCreations(context.Background(), sts, []*v1alpha1.ScratchVolume{&sv}); len(got) != 0 {
		t.Fatalf("a pod missing for no time was taken for refused: %+v", got)
	}
	if at := r.recheckGap(sts); at.IsZero() || time.Until(at) > 200*time.Millisecond {
		t.Errorf("the missing pod asks for a look at %v, want one within the grace", at)
	}
	time.Sleep(250 * time.Millisecond)
	got := r.refusedCreations(context.Background(), sts, []*v1alpha1.ScratchVolume{&sv})
	if msg := got[sv.Name].Message; !strings.Contains(msg, "1 of its 2 pods have not been created") {
		t.Errorf("refusal %q, want one naming the missing pod", msg)
	}
	// Once the pod is back, the sighting goes.
	back := sts.DeepCopy()
	back.Status.Replicas = 2
	if at := r.recheckGap(back); !at.IsZero() {
		t.Errorf("a StatefulSet with all its pods asks for a look at %v", at)
	}
	if _, ok := r.gaps.Load(client.ObjectKeyFromObject(sts)); ok {
		t.Errorf("the sighting outlived the missing pod")
	}
}
