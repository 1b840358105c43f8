package decide

// This file decides the status a report becomes, and whether it is worth writing over the last one.

import (
	"bytes"
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/capacity"
)

// Status is the status the report becomes, over the conditions the last one had, and the full
// volumes to announce once it is written.
func (rep *Report) Status() (v1alpha1.ScratchVolumeStatus, []capacity.Episode) {
	sv := rep.sv
	status := v1alpha1.ScratchVolumeStatus{
		ObservedGeneration: sv.Generation, MountPath: sv.EffectiveMountPath(),
		Conditions: append([]metav1.Condition{}, sv.Status.Conditions...),
		Targets:    rep.targets,
	}
	for _, t := range rep.targets {
		if t.Injected {
			status.InjectedTargets++
		}
		if t.PendingChange != nil {
			status.PendingChanges++
		}
	}
	sort.Slice(status.Targets, func(i, j int) bool { return status.Targets[i].Name < status.Targets[j].Name })
	rep.capacity(&status)
	rep.sizing(&status)
	for _, cond := range rep.conditions() {
		meta.SetStatusCondition(&status.Conditions, cond)
	}
	return status, rep.episodes
}

// StatusChanged reports whether next is worth writing over last. Equal statuses are not, and
// neither is one that differs from the last in nothing but the targets' pod counts while every
// target stays rolled out: the StatefulSets' own status has those counts, and with a selector
// over a fleet every scale and every pod turning ready or not would rewrite a status listing
// hundreds of targets. The counts are brought up to date with the next change that is written,
// and on every change during a rollout.
//
// The two are compared as the API server stores them, as JSON (a deep comparison of two statuses
// of 500 targets costs more than encoding both), a part at a time (encoding each whole held two
// copies of ~0.4 MB per reconcile in flight; BenchmarkStatusChange).
func StatusChanged(last, next *v1alpha1.ScratchVolumeStatus) (bool, error) {
	same, err := sameJSON(last, next, false)
	if err != nil || same {
		return false, err
	}
	if !meta.IsStatusConditionTrue(last.Conditions, v1alpha1.ConditionRolledOut) ||
		!meta.IsStatusConditionTrue(next.Conditions, v1alpha1.ConditionRolledOut) {
		return true, nil
	}
	same, err = sameJSON(last, next, true)
	return !same, err
}

// sameJSON reports whether a and b encode alike, their targets' pod counts zeroed when
// withoutPodCounts. They are encoded a part at a time, the status without its targets and then
// each target, and compared part by part: every part is one JSON value, so two sequences of
// parts are alike exactly when the whole encodings are.
func sameJSON(a, b *v1alpha1.ScratchVolumeStatus, withoutPodCounts bool) (bool, error) {
	if len(a.Targets) != len(b.Targets) {
		return false, nil
	}
	var parts partComparer
	restA, restB := *a, *b
	restA.Targets, restB.Targets = nil, nil
	if same, err := parts.same(&restA, &restB); err != nil || !same {
		return false, err
	}
	var ta, tb v1alpha1.ScratchTargetStatus
	for i := range a.Targets {
		ta, tb = a.Targets[i], b.Targets[i]
		if withoutPodCounts {
			ta.Replicas, ta.UpdatedReplicas, ta.ReadyReplicas = 0, 0, 0
			tb.Replicas, tb.UpdatedReplicas, tb.ReadyReplicas = 0, 0, 0
		}
		if same, err := parts.same(&ta, &tb); err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// partComparer encodes two values into buffers it reuses and compares the encodings.
type partComparer struct {
	a, b bytes.Buffer
}

func (c *partComparer) same(a, b any) (bool, error) {
	c.a.Reset()
	c.b.Reset()
	if err := json.NewEncoder(&c.a).Encode(a); err != nil {
		return false, err
	}
	if err := json.NewEncoder(&c.b).Encode(b); err != nil {
		return false, err
	}
	return bytes.Equal(c.a.Bytes(), c.b.Bytes()), nil
}
