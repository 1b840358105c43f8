package decide

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestRestartsOf(t *testing.T) {
	sts := func(replicas int32, strategy appsv1.StatefulSetUpdateStrategy) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), UpdateStrategy: strategy}}
	}
	rolling := func(maxUnavailable *intstr.IntOrString, partition *int32) appsv1.StatefulSetUpdateStrategy {
		return appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: maxUnavailable, Partition: partition}}
	}
	tests := []struct {
		name string
		sts  *appsv1.StatefulSet
		want Restarts
		says string
	}{
		{"default", sts(3, appsv1.StatefulSetUpdateStrategy{}), Restarts{3, 3, 1}, "restarts its 3 pods one at a time"},
		{"one pod", sts(1, appsv1.StatefulSetUpdateStrategy{}), Restarts{1, 1, 1}, "restarts its pod"},
		{"a count", sts(5, rolling(ptr.To(intstr.FromInt32(2)), nil)), Restarts{5, 5, 2}, "restarts its 5 pods 2 at a time (rollingUpdate.maxUnavailable)"},
		{"a share rounds down", sts(5, rolling(ptr.To(intstr.FromString("50%")), nil)), Restarts{5, 5, 2}, "restarts its 5 pods 2 at a time (rollingUpdate.maxUnavailable)"},
		{"a small share is one", sts(3, rolling(ptr.To(intstr.FromString("10%")), nil)), Restarts{3, 3, 1}, "restarts its 3 pods one at a time"},
		{"everything", sts(3, rolling(ptr.To(intstr.FromString("100%")), nil)), Restarts{3, 3, 3}, "restarts its 3 pods all at once (rollingUpdate.maxUnavailable)"},
		{"a partition", sts(4, rolling(ptr.To(intstr.FromInt32(3)), ptr.To[int32](2))), Restarts{2, 4, 2}, "restarts 2 of its 4 pods (those at or above the rollingUpdate partition) all at once (rollingUpdate.maxUnavailable)"},
		{"all below the partition", sts(2, rolling(nil, ptr.To[int32](2))), Restarts{0, 2, 1}, "restarts none of its pods (all are below the rollingUpdate partition)"},
		{"OnDelete", sts(3, appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}), Restarts{0, 3, 0}, "restarts none of its pods until they are deleted (updateStrategy OnDelete)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RestartsOf(tt.sts)
			if got != tt.want {
				t.Errorf("RestartsOf = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.says {
				t.Errorf("says %q, want %q", s, tt.says)
			}
		})
	}
}
