package decide

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// fleetOf is n StatefulSets of 3 replicas, rolled out and ready but those named in rolling.
func fleetOf(n int, rolling ...int) []*appsv1.StatefulSet {
	out := make([]*appsv1.StatefulSet, n)
	for i := range out {
		sts := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
		sts.Name = fmt.Sprintf("db-%d", i)
		sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "a", UpdateRevision: "a"}
		out[i] = sts
	}
	for _, i := range rolling {
		out[i].Status.UpdatedReplicas, out[i].Status.UpdateRevision = 1, "b"
	}
	return out
}

func TestInFlight(t *testing.T) {
	tests := []struct {
		name   string
		change func(*appsv1.StatefulSet)
		want   bool
	}{
		{"rolled out and ready", func(*appsv1.StatefulSet) {}, false},
		{"new spec not observed yet", func(s *appsv1.StatefulSet) { s.Generation++ }, true},
		{"pods on the old revision", func(s *appsv1.StatefulSet) { s.Status.UpdatedReplicas = 2 }, true},
		{"a pod not ready", func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 2 }, true},
		{"OnDelete leaves old pods until deleted", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			s.Status.UpdatedReplicas = 0
		}, false},
		{"pods below the partition stay", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}
			s.Status.UpdatedReplicas = 1
		}, false},
		{"pods above the partition not updated yet", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}
			s.Status.UpdatedReplicas = 1
		}, true},
		{"scaled to zero", func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](0)
			s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation}
		}, false},
	}
	for _, tt := range tests {
		sts := fleetOf(1)[0]
		tt.change(sts)
		if got := InFlight(sts); got != tt.want {
			t.Errorf("%s: in flight %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPace(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	sv := func(rollout *v1alpha1.RolloutPolicy, since map[string]time.Time) *v1alpha1.ScratchVolume {
		s := scratchVolumes(nil)[0]
		s.Spec.Rollout = rollout
		for name, at := range since {
			s.Status.Targets = append(s.Status.Targets, v1alpha1.ScratchTargetStatus{Name: name, InFlightSince: &metav1.Time{Time: at}})
		}
		return s
	}
	count := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	share := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	tests := []struct {
		name     string
		sv       *v1alpha1.ScratchVolume
		targets  []*appsv1.StatefulSet
		defaults RolloutDefaults
		budget   int
		stopped  string
	}{
		{"no limit anywhere", sv(nil, nil), fleetOf(8, 1, 2), RolloutDefaults{}, -1, ""},
		{"the manager's share, rounded up", sv(nil, nil), fleetOf(10, 1), RolloutDefaults{MaxInFlight: intstr.FromString("25%")}, 2, ""},
		{"a share of one target is one", sv(nil, nil), fleetOf(1), RolloutDefaults{MaxInFlight: intstr.FromString("25%")}, 1, ""},
		{"the ScratchVolume's count wins", sv(&v1alpha1.RolloutPolicy{MaxInFlight: count(4)}, nil), fleetOf(10, 0), RolloutDefaults{MaxInFlight: intstr.FromString("25%")}, 3, ""},
		{"100% is no limit", sv(&v1alpha1.RolloutPolicy{MaxInFlight: share("100%")}, nil), fleetOf(10, 0), RolloutDefaults{MaxInFlight: intstr.FromInt32(1)}, -1, ""},
		{"more in flight than allowed", sv(&v1alpha1.RolloutPolicy{MaxInFlight: count(1)}, nil), fleetOf(4, 0, 1), RolloutDefaults{}, 0, ""},
		{"in flight past the manager's deadline stops the rollout",
			sv(&v1alpha1.RolloutPolicy{MaxInFlight: count(3)}, map[string]time.Time{"db-1": now.Add(-11 * time.Minute), "db-2": now.Add(-12 * time.Minute)}),
			fleetOf(4, 1, 2), RolloutDefaults{}, 0, "db-2"},
		{"the ScratchVolume's deadline is longer",
			sv(&v1alpha1.RolloutPolicy{MaxInFlight: count(3), ProgressDeadline: &metav1.Duration{Duration: time.Hour}}, map[string]time.Time{"db-1": now.Add(-11 * time.Minute)}),
			fleetOf(4, 1), RolloutDefaults{}, 2, ""},
		{"an old in-flight time of a target rolled out since does not count",
			sv(&v1alpha1.RolloutPolicy{MaxInFlight: count(3)}, map[string]time.Time{"db-1": now.Add(-time.Hour)}),
			fleetOf(4), RolloutDefaults{}, 3, ""},
	}
	for _, tt := range tests {
		p := Pace(tt.sv, tt.targets, nil, tt.defaults, now)
		if p.Budget() != tt.budget || p.Stopped != tt.stopped {
			t.Errorf("%s: budget %d stopped %q, want %d %q", tt.name, p.Budget(), p.Stopped, tt.budget, tt.stopped)
		}
	}
}
