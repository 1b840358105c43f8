package controllers

// This file holds the rollout budget of a reconcile (decide.Pacing): the syncs of its targets,
// which run in parallel, take a rollout from it before each write that starts a StatefulSet rolling
// out, and a change that finds none left waits for the next reconcile. Reverts are paced alike; the
// StatefulSets a ScratchVolume reverted no longer carry it, so the reconciler remembers them
// until they are rolled out.

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// rolloutBudget is how many more StatefulSets a reconcile may start rolling out.
type rolloutBudget struct {
	mu sync.Mutex
	// left is the rollouts left; -1 for no limit.
	left int
	// inFlight are the targets in flight, which a write takes no new rollout for.
	inFlight map[string]bool
	// note says why a change waits, for its status.
	note string
	// waiting counts the changes that found none left.
	waiting int
}

func newRolloutBudget(p decide.Pacing) *rolloutBudget {
	b := &rolloutBudget{left: p.Budget(), inFlight: map[string]bool{}, note: p.Queued()}
	for name := range p.Since {
		b.inFlight[name] = true
	}
	return b
}

// take reports whether sts may begin rolling out now, taking a rollout for it unless it is in
// flight already.
func (b *rolloutBudget) take(sts *appsv1.StatefulSet) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.left < 0 || b.inFlight[sts.Name]:
		return true
	case b.left == 0:
		b.waiting++
		return false
	}
	b.left--
	b.inFlight[sts.Name] = true
	return true
}

// rolloutDefaults are the manager's pacing.
func (r *ScratchVolumeReconciler) rolloutDefaults() decide.RolloutDefaults {
	return decide.RolloutDefaults{MaxInFlight: r.MaxInFlight, ProgressDeadline: r.ProgressDeadline}
}

// reverting remembers, per ScratchVolume, the StatefulSets it reverted that may still be rolling
// out: they count as in flight for the next reverts.
type reverting struct {
	mu  sync.Mutex
	set map[types.NamespacedName]map[string]bool
}

func (rv *reverting) add(sv types.NamespacedName, sts string) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.set == nil {
		rv.set = map[types.NamespacedName]map[string]bool{}
	}
	if rv.set[sv] == nil {
		rv.set[sv] = map[string]bool{}
	}
	rv.set[sv][sts] = true
}

// stillRolling are the StatefulSets sv reverted that are still in flight, as the cache has them;
// the others are forgotten.
func (r *ScratchVolumeReconciler) stillRolling(ctx context.Context, sv *v1alpha1.ScratchVolume) []*appsv1.StatefulSet {
	key := client.ObjectKeyFromObject(sv)
	r.reverted.mu.Lock()
	names := r.reverted.set[key]
	r.reverted.mu.Unlock()
	var out []*appsv1.StatefulSet
	for name := range names {
		sts := &appsv1.StatefulSet{}
		err := r.Get(ctx, client.ObjectKey{Namespace: sv.Namespace, Name: name}, sts)
		if err == nil && (decide.InFlight(sts) || r.written.Behind(sts)) {
			out = append(out, sts)
			continue
		}
		r.reverted.mu.Lock()
		delete(r.reverted.set[key], name)
		r.reverted.mu.Unlock()
	}
	return out
}

// forgetReverted drops what is remembered of sv's reverts.
func (r *ScratchVolumeReconciler) forgetReverted(sv types.NamespacedName) {
	r.reverted.mu.Lock()
	defer r.reverted.mu.Unlock()
	delete(r.reverted.set, sv)
}

// revertRetry is how soon a ScratchVolume whose reverts wait for the targets in flight is
// reconciled again, besides the events of those targets.
const revertRetry = 10 * time.Second

// ParseMaxInFlight reads the manager's --max-in-flight: a count or a share such as 25%.
func ParseMaxInFlight(s string) (intstr.IntOrString, error) {
	v := intstr.Parse(s)
	if v.Type == intstr.Int && v.IntVal >= 1 {
		return v, nil
	}
	if p, err := intstr.GetScaledValueFromIntOrPercent(&v, 100, true); err == nil && v.Type == intstr.String && p >= 1 && p <= 100 {
		return v, nil
	}
	return v, errMaxInFlight
}
