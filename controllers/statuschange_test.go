package controllers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
			got, err := statusChanged(&tc.last, &tc.next)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("statusChanged() = %v, want %v", got, tc.want)
			}
			if mustJSON(t, tc.last) != lastJSON || mustJSON(t, tc.next) != nextJSON {
				t.Error("statusChanged changed its arguments")
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

// BenchmarkStatusChange compares, for a selector's status of 500 targets, the status write's work
// as it is (the two statuses compared a part at a time, the new one encoded whole to be sent)
// with both statuses encoded whole and compared, and with a deep comparison and a merge patch made from the
// last status. "unchanged" is a reconcile that writes nothing, the most common one.
func BenchmarkStatusChange(b *testing.B) {
	status := func(replicas int32) v1alpha1.ScratchVolumeStatus {
		s := v1alpha1.ScratchVolumeStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}}
		for i := range 500 {
			s.Targets = append(s.Targets, v1alpha1.ScratchTargetStatus{Name: fmt.Sprintf("db-%04d", i), Container: "mysql", Flavor: v1alpha1.FlavorMySQL,
				Version: "8.4.2", Injected: true, ConfigHash: "5d41402abc4b2a76", Injection: v1alpha1.InjectionArgs, Replicas: replicas,
				TempLocations: []v1alpha1.TempLocation{
					{Data: v1alpha1.TempDataTmpdir, Medium: v1alpha1.TempMediumMemory, Option: "tmpdir", Path: "/var/lib/mysql-tmp"},
					{Data: v1alpha1.TempDataSessionTempTablespaces, Medium: v1alpha1.TempMediumMemory, Option: "innodb_temp_tablespaces_dir", Path: "/var/lib/mysql-tmp/innodb_temp"},
				}})
		}
		return s
	}
	last, next, same := &v1alpha1.ScratchVolume{Status: status(2)}, &v1alpha1.ScratchVolume{Status: status(3)}, &v1alpha1.ScratchVolume{Status: status(2)}
	for _, tc := range []struct {
		name  string
		next  *v1alpha1.ScratchVolume
		write bool
	}{{"changed", next, true}, {"unchanged", same, false}} {
		b.Run("parts/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				changed, err := statusChanged(&last.Status, &tc.next.Status)
				if err != nil || changed != tc.write {
					b.Fatal(changed, err)
				}
				if changed {
					n, _ := json.Marshal(&tc.next.Status)
					if _, err := replaceStatus(n).Data(tc.next); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("json/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, _ := json.Marshal(&last.Status)
				n, _ := json.Marshal(&tc.next.Status)
				if bytes.Equal(l, n) == tc.write {
					b.Fatal("wrong comparison")
				}
				if tc.write {
					if _, err := replaceStatus(n).Data(tc.next); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("deep-equal+merge-patch/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if equality.Semantic.DeepEqual(last.Status, tc.next.Status) == tc.write {
					b.Fatal("wrong comparison")
				}
				if tc.write {
					if _, err := client.MergeFrom(last).Data(tc.next); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestSummarizeDescribesOnlyWhatItShows checks that a message over many targets names the first
// five, counts the others, and describes no more than it names.
func TestSummarizeDescribesOnlyWhatItShows(t *testing.T) {
	var fs []finding
	for i := range 7 {
		fs = append(fs, finding{target: fmt.Sprint("db-", i), message: "m"})
	}
	if got, want := summarize(fs), "db-0: m; db-1: m; db-2: m; db-3: m; db-4: m; and 2 more"; got != want {
		t.Errorf("summarize() = %q, want %q", got, want)
	}
	if got, want := summarize(fs[:2]), "db-0: m; db-1: m"; got != want {
		t.Errorf("summarize() = %q, want %q", got, want)
	}
	described := 0
	summarizeFirst(500, func(i int) string { described++; return "" })
	if described != 5 {
		t.Errorf("%d of 500 items described for a message that names 5", described)
	}
}
