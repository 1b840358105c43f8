package controllers

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// rolledOutBefore reports whether the ScratchVolume's last status had target rolled out with the
// configuration hash: the ScratchVolume was RolledOut, and the target carried hash then.
func (rep *report) rolledOutBefore(target, hash string) bool {
	if !meta.IsStatusConditionTrue(rep.sv.Status.Conditions, v1alpha1.ConditionRolledOut) {
		return false
	}
	for _, t := range rep.sv.Status.Targets {
		if t.Name == target {
			return t.Injected && t.ConfigHash == hash
		}
	}
	return false
}

// onlyPodCountsMoved reports whether next differs from last in nothing but the targets' pod
// counts while every target stays rolled out. Such a change is not written: the StatefulSets'
// own status has those counts, and with a selector over a fleet every scale and every pod turning
// ready or not would rewrite a status listing hundreds of targets. The counts are brought up to
// date with the next change that is written, and on every change during a rollout.
func onlyPodCountsMoved(last, next v1alpha1.ScratchVolumeStatus) bool {
	if !meta.IsStatusConditionTrue(last.Conditions, v1alpha1.ConditionRolledOut) ||
		!meta.IsStatusConditionTrue(next.Conditions, v1alpha1.ConditionRolledOut) {
		return false
	}
	return equality.Semantic.DeepEqual(withoutPodCounts(last), withoutPodCounts(next))
}

// withoutPodCounts is s with its targets' pod counts zeroed.
func withoutPodCounts(s v1alpha1.ScratchVolumeStatus) v1alpha1.ScratchVolumeStatus {
	s.Targets = append([]v1alpha1.ScratchTargetStatus(nil), s.Targets...)
	for i := range s.Targets {
		s.Targets[i].Replicas, s.Targets[i].UpdatedReplicas, s.Targets[i].ReadyReplicas = 0, 0, 0
	}
	return s
}
