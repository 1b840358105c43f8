package decide

// This file says how a change of a target's pod template restarts its pods, as the StatefulSet
// controller of Kubernetes 1.37 rolls them: with the RollingUpdate strategy, from the highest
// ordinal down to the partition, at most rollingUpdate.maxUnavailable at once (beta and on by
// default since 1.35; one at a time without it); with OnDelete, none until they are deleted.

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Restarts is how a change of a StatefulSet's pod template restarts its pods.
type Restarts struct {
	// Pods is how many pods the change restarts by itself: those at or above the partition; 0
	// under OnDelete.
	Pods int32
	// Replicas is how many pods the StatefulSet has.
	Replicas int32
	// AtOnce is how many of them may be down at once.
	AtOnce int32
}

// RestartsOf is how a change of sts's pod template restarts its pods. maxUnavailable is scaled as
// the StatefulSet controller scales it: a share of the replicas rounded down, at least 1.
func RestartsOf(sts *appsv1.StatefulSet) Restarts {
	n := replicas(sts)
	r := Restarts{Replicas: n}
	if sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return r
	}
	r.Pods = max(0, n-partition(sts))
	at := 1
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		if v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(n), false); err == nil {
			at = max(1, v)
		}
	}
	r.AtOnce = min(int32(at), max(1, r.Pods))
	return r
}

// String says it in words: "restarts its 4 pods 2 at a time (rollingUpdate.maxUnavailable)".
func (r Restarts) String() string {
	switch {
	case r.Pods == 0 && r.Replicas > 0 && r.AtOnce == 0:
		return "restarts none of its pods until they are deleted (updateStrategy OnDelete)"
	case r.Pods == 0:
		return "restarts none of its pods (all are below the rollingUpdate partition)"
	}
	which := fmt.Sprintf("its %d pods", r.Pods)
	if r.Pods == 1 {
		which = "its pod"
	}
	if r.Pods < r.Replicas {
		which = fmt.Sprintf("%d of its %d pods (those at or above the rollingUpdate partition)", r.Pods, r.Replicas)
	}
	switch {
	case r.Pods == 1:
		return "restarts " + which
	case r.AtOnce == 1:
		return "restarts " + which + " one at a time"
	case r.AtOnce >= r.Pods:
		return "restarts " + which + " all at once (rollingUpdate.maxUnavailable)"
	}
	return fmt.Sprintf("restarts %s %d at a time (rollingUpdate.maxUnavailable)", which, r.AtOnce)
}
