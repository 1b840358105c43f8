package decide

// This file decides the status a report becomes, and whether it is worth writing over the last one.

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/capacity"
)

// Verdict is what the report of one reconcile comes to, decided without side effects: the status
// to write, the resize to write into spec.size before it, the full volumes to announce once the
// status is written, and when the decisions need the next reconcile without an event.
type Verdict struct {
	// Status is the status to write, over the conditions the last one had.
	Status v1alpha1.ScratchVolumeStatus
	// Resize is the automatic resize spec.sizing lets through now, nil when there is none.
	Resize *Resize
	// Episodes are the pods' volumes that filled up since the last status, to announce once the
	// status that records them is written.
	Episodes []capacity.Episode
	// wake is the earliest time a decision is due again (a write-war hold ends, a window opens, a
	// rollout's deadline passes, a sizing proposal has been sustained); zero when none is.
	wake time.Time
	// denied says admission control refused a change, which a policy's change may let through
	// without any event the controller watches.
	denied bool
}

// Ending is how a reconcile ended, which its verdict reads besides the report.
type Ending struct {
	// Failure is the error that ended the reconcile before every target was reported; nil when
	// none did.
	Failure error
	// Observed is what the node agents report about the RAM volumes of the ScratchVolume's pods
	// (UsageOf); nil when it could not be read, which keeps the usage the last status had.
	Observed []v1alpha1.ScratchVolumeUsage
}

// Verdict decides what the report comes to, with how the reconcile ended. It changes nothing, the
// report included.
func (rep *Report) Verdict(end Ending) Verdict {
	ended := *rep
	ended.failure, ended.observed = end.Failure, end.Observed
	return ended.verdict()
}

func (rep *Report) verdict() Verdict {
	sv := rep.sv
	status := v1alpha1.ScratchVolumeStatus{
		ObservedGeneration: sv.Generation, MountPath: sv.EffectiveMountPath(),
		Conditions: append([]metav1.Condition{}, sv.Status.Conditions...),
		Targets:    append([]v1alpha1.ScratchTargetStatus(nil), rep.targets...),
	}
	for _, t := range status.Targets {
		if t.Injected {
			status.InjectedTargets++
		}
		if t.PendingChange != nil {
			status.PendingChanges++
		}
	}
	sort.Slice(status.Targets, func(i, j int) bool { return status.Targets[i].Name < status.Targets[j].Name })
	episodes := rep.capacity(&status)
	resize, sizingWake := rep.sizing(&status)
	for _, cond := range rep.conditions() {
		rep.setCondition(&status.Conditions, cond)
	}
	return Verdict{Status: status, Resize: resize, Episodes: episodes, wake: earliest(rep.wake, sizingWake), denied: rep.denials > 0}
}

// setCondition sets cond in conds; a condition whose status changes now changed at the time the
// decisions are made at (the wall clock's, without one).
func (rep *Report) setCondition(conds *[]metav1.Condition, cond metav1.Condition) {
	if cond.LastTransitionTime.IsZero() && !rep.now.IsZero() {
		cond.LastTransitionTime = metav1.NewTime(rep.now)
	}
	meta.SetStatusCondition(conds, cond)
}

// RequeueAfter is how long after now to reconcile again without an event: a second past the
// earliest decision due, so that it is due when the reconcile looks, and after a refusal by
// admission control no later than AdmissionRetryInterval. Zero when nothing is waited for.
func (v Verdict) RequeueAfter(now time.Time) time.Duration {
	var after time.Duration
	if v.denied {
		after = AdmissionRetryInterval
	}
	if !v.wake.IsZero() {
		wake := max(v.wake.Sub(now)+time.Second, time.Second)
		if after == 0 || wake < after {
			after = wake
		}
	}
	return after
}

// earliest is the earlier of two times, zero standing for none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
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
