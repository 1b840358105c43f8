package controllers

// This file syncs a ScratchVolume's targets: it reads each StatefulSet and its ScratchVolumes,
// asks package decide what to write, writes it in the order that loses nothing, and records what
// changed. It decides nothing itself.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
)

// syncTargets syncs every target and returns what each sync left, in order. A failed write is
// reported as such and the others still go ahead; the failures come back joined, for a retry with
// backoff. A conflict ends the reconcile: the retry re-reads everything.
//
// The targets are synced in parallel, each holding one of the reconciler's workers: all reconciles
// together never have more syncs in flight than workers, as when each reconcile synced its targets
// one after the other, but when fewer ScratchVolumes than workers are left to reconcile, their
// targets use the idle workers instead of leaving them idle.
func (r *ScratchVolumeReconciler) syncTargets(ctx context.Context, sv *v1alpha1.ScratchVolume, targets []*appsv1.StatefulSet, rollouts *rolloutBudget) ([]decide.Target, error) {
	type synced struct {
		out map[string]*decide.Outcome
		err error
	}
	view, err := r.namespaceView(ctx, sv.Namespace)
	if err != nil {
		return nil, err
	}
	events := r.changeEvents()
	defer events.record()
	results := make([]synced, len(targets))
	var wg sync.WaitGroup
	for i := range targets {
		release, err := r.acquireWorker(ctx)
		if err != nil {
			wg.Wait()
			return nil, err
		}
		wg.Go(func() {
			defer release()
			out, err := r.syncStatefulSet(ctx, targets[i], view, events, rollouts)
			results[i] = synced{out, err}
		})
	}
	wg.Wait()
	done := make([]decide.Target, 0, len(targets))
	var errs []error
	for i, sts := range targets {
		out, err := results[i].out, results[i].err
		t := decide.Target{StatefulSet: sts}
		switch denial := admissionDenial(err); {
		case denial != "":
			// Trying again at once would be refused the same way: the status says why, and the
			// StatefulSet's next change (the label a policy asks for) or the retry brings the next try.
			log.FromContext(ctx).Info("Admission control refused a StatefulSet change", "statefulset", client.ObjectKeyFromObject(sts), "message", denial)
			t.Outcome = decide.Denied(sv, sts, denial)
		case staleWrite(err):
			return done, err
		case err != nil:
			if fieldConflict(err) != "" {
				err = fmt.Errorf("%w; %w", err, errOwnedByAnother)
			}
			if r.deletedMeanwhile(ctx, sts) {
				return done, fmt.Errorf("%w: %w", errDeletedMeanwhile, err)
			}
			t.Outcome = decide.WriteFailed(sv, sts, err)
			errs = append(errs, err)
		default:
			t.Outcome, t.RecheckAt = out[sv.Name], r.recheckGap(sts)
		}
		if t.Outcome != nil {
			countBlocked(t.Outcome.BlockedBy())
		}
		done = append(done, t)
	}
	return done, errors.Join(errs...)
}

// deletedMeanwhile reports whether sts, whose write failed, is gone from the API server or is
// another object of the same name now: then the failure says nothing about the StatefulSet, and
// the retry, which lists the targets again, reports what there is.
func (r *ScratchVolumeReconciler) deletedMeanwhile(ctx context.Context, sts *appsv1.StatefulSet) bool {
	live := &appsv1.StatefulSet{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sts), live)
	return apierrors.IsNotFound(err) || (err == nil && live.UID != sts.UID)
}

// acquireWorker waits for one of the workers that bound the target syncs in flight across all
// reconciles, as many as MaxConcurrentReconciles, and returns the function that gives it back. Every sync holds one:
// those of syncTargets, and the reverts of targets a ScratchVolume no longer selects.
func (r *ScratchVolumeReconciler) acquireWorker(ctx context.Context) (release func(), err error) {
	r.workersOnce.Do(func() { r.workers = make(chan struct{}, max(1, r.MaxConcurrentReconciles)) })
	select {
	case r.workers <- struct{}{}:
		return func() { <-r.workers }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// revertDropped re-syncs every StatefulSet that still carries sv but is not among keep, which removes
// sv's entries from it (sv no longer selects it, or sv is being deleted), as far as the rollout budget allows:
// errRevertsWaiting says some wait for the targets in flight.
func (r *ScratchVolumeReconciler) revertDropped(ctx context.Context, sv *v1alpha1.ScratchVolume, keep []*appsv1.StatefulSet, rollouts *rolloutBudget) error {
	injected, err := r.injectedBy(sv)
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, s := range keep {
		kept[s.Name] = true
	}
	view, err := r.namespaceView(ctx, sv.Namespace)
	if err != nil {
		return err
	}
	events := r.changeEvents()
	defer events.record()
	waiting := false
	for _, sts := range injected {
		if kept[sts.Name] {
			continue
		}
		if !rollouts.take(sts) {
			waiting = true
			continue
		}
		release, err := r.acquireWorker(ctx)
		if err != nil {
			return err
		}
		// Taken above: the revert is the one write of this sync that starts a rollout.
		out, err := r.syncStatefulSet(ctx, sts, view, events, nil)
		release()
		if err != nil {
			return err
		}
		if out == nil {
			continue // deleted meanwhile: nothing was reverted
		}
		r.reverted.add(client.ObjectKeyFromObject(sv), sts.Name)
		events.add(sts, decide.Reverted(sv, sts))
	}
	if waiting {
		return errRevertsWaiting
	}
	return nil
}

// syncStatefulSet makes the controller's entries on sts the union of the plans of every live
// ScratchVolume that selects it, writing only when they differ from what is there. It returns the
// outcome per ScratchVolume name, each plan trimmed to what the status reads
// (fleetcache.SettledOutcomes). view is sts's namespace: the ScratchVolumes that select by label
// and the admission rules (namespaceView). sts is the cache's trimmed object (fleetcache.TrimStatefulSet): a decision
// remembered for its generation is reused as it is, and anything else is planned on the whole
// StatefulSet, read from the API server (readWhole). The changes written are added to events.
func (r *ScratchVolumeReconciler) syncStatefulSet(ctx context.Context, sts *appsv1.StatefulSet, view namespaceView, events *changeEvents, rollouts *rolloutBudget) (map[string]*decide.Outcome, error) {
	if r.written.Behind(sts) {
		return nil, fmt.Errorf("StatefulSet %s/%s at generation %d: %w", sts.Namespace, sts.Name, sts.Generation, errCacheBehind)
	}
	svs, err := r.scratchVolumesFor(sts, view.selectors)
	if err != nil {
		return nil, err
	}
	for _, sv := range svs {
		if r.statuses.Behind(sv) {
			return nil, fmt.Errorf("ScratchVolume %s/%s, which selects StatefulSet %s: %w", sv.Namespace, sv.Name, sts.Name, errCacheBehind)
		}
	}
	key := client.ObjectKeyFromObject(sts)
	refused := r.refusedCreations(ctx, sts, svs)
	if outcomes, ok := r.decisions.Reuse(key, fleetcache.InputsOf(sts, svs, view.stamp), svs); ok && len(refused) == 0 {
		return r.settle(ctx, sts, svs, outcomes)
	}
	// The whole object is this sync's own: the write below works on it and updates it from the
	// responses, and it is dropped with the sync.
	live := &appsv1.StatefulSet{}
	if err := r.readWhole(ctx, sts, live); apierrors.IsNotFound(err) {
		// Deleted since the cache saw it: nothing to plan, and its deletion brings the next
		// reconcile, which no longer finds it.
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("failed to get StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	targetsPlanned.WithLabelValues(sts.Namespace).Inc()
	gate := r.gate(ctx, live, svs, refused)
	tp := decide.PlanTarget(svs, live, view.rules, gate)
	if tp.Settled() {
		if tp.Remembered() {
			r.decisions.Remember(key, fleetcache.InputsOf(live, svs, view.stamp), tp.Outcomes)
		} else {
			r.decisions.Forget(key)
		}
		return r.settle(ctx, live, svs, fleetcache.SettledOutcomes(tp.Outcomes))
	}
	r.decisions.Forget(key)
	out, err := r.writePlan(ctx, sts, live, svs, view, gate, tp, events, rollouts)
	if err == nil {
		r.warnRefused(sts, tp)
	}
	return out, err
}

// writePlan writes tp, which live (the whole object sts, the cache's, stands for) does not carry
// yet, unless the write-war rule holds it off, and remembers what the write leaves. gate is what
// tp was decided with; the decision on what the write leaves takes it again, without the refusals
// the write took back.
func (r *ScratchVolumeReconciler) writePlan(ctx context.Context, sts, live *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume,
	view namespaceView, gate decide.Gate, tp decide.TargetPlan, events *changeEvents, rollouts *rolloutBudget) (map[string]*decide.Outcome, error) {
	key := client.ObjectKeyFromObject(sts)
	rule, now := r.WriteWar.OrDefaults(), time.Now()
	restored := decide.RestoredBy(tp, live)
	if !restored.Empty() && r.holdOff(ctx, live, svs, tp.Outcomes, decide.ConfigKey(tp.Desired), restored) {
		return fleetcache.SettledOutcomes(tp.Outcomes), nil
	}
	// A restore puts back what another writer removed, and an urgent change keeps data safe: both
	// go ahead of the pacing, which holds back only the changes that start a rollout of their own.
	if restored.Empty() && !decide.Urgent(tp.Outcomes) && !rollouts.take(live) {
		decide.Queue(tp.Outcomes, live, rollouts.note)
		return fleetcache.SettledOutcomes(tp.Outcomes), nil
	}
	if err := r.ensureConfigMaps(ctx, live, tp.Outcomes); err != nil {
		return nil, err
	}
	if !tp.Removing() {
		r.wroteAt.Store(key, now)
	}
	if err := r.write(ctx, live, tp); err != nil {
		return nil, err
	}
	// write leaves live as the last write's response has it: the generation the cache must reach
	// before the next decision, and the object that decision is made from, so that the syncs
	// the write brings (its own watch event, the StatefulSet controller's status) need no read.
	r.written.Record(key, live.Generation)
	gate.Refused = nil
	if after := decide.PlanTarget(svs, live, view.rules, gate); after.Remembered() {
		r.decisions.Remember(key, fleetcache.InputsOf(live, svs, view.stamp), after.Outcomes)
	}
	g := r.guards.Update(key, svs, func(g decide.Guard) decide.Guard { return rule.AfterWrite(g, now, !restored.Empty()) })
	if !restored.Empty() {
		restoresTotal.WithLabelValues(sts.Namespace).Inc()
	}
	for _, c := range decide.Changes(sts, tp.Outcomes, tp.Desired, tp.Observed, restored.Names()) {
		events.add(sts, c)
	}
	return decide.WithGuard(fleetcache.SettledOutcomes(tp.Outcomes), g), nil
}

// gate is what holds back the changes nobody wrote to sts, as of now: the manager's version and
// default maintenance windows, the drop-in ConfigMaps of svs as the cache has them, to say what a
// change would do to them, and the refused pod creations found on the StatefulSet.
func (r *ScratchVolumeReconciler) gate(ctx context.Context, sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume, refused map[string]decide.Refusal) decide.Gate {
	dropIns := map[string]map[string]string{}
	for _, sv := range svs {
		cm := &corev1.ConfigMap{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: sv.Namespace, Name: sv.ConfigMapName(sts.Name)}, cm, client.UnsafeDisableDeepCopy); err == nil {
			dropIns[sv.Name] = cm.Data
		}
	}
	return decide.Gate{Now: time.Now(), Version: r.version(), Windows: r.MaintenanceWindows, Refused: refused, DropIns: dropIns}
}

// warnRefused records the Warning of each refusal found now, once its revert is written.
func (r *ScratchVolumeReconciler) warnRefused(sts *appsv1.StatefulSet, tp decide.TargetPlan) {
	for _, o := range tp.Outcomes {
		if s, ok := o.State.(decide.Refused); ok && s.Fresh {
			r.warn(o.SV, sts, decide.PodsRefused(s.Record))
		}
	}
}

// readWhole reads into live the whole StatefulSet that sts, the cache's trimmed copy, stands for.
// It asks the API server for any version it has (resourceVersion "0"), which it answers from its
// watch cache instead of a quorum read of etcd, and takes the answer when it is the object the
// cache holds or a later one (asNewAs): with one API server it always is, since the informer is fed
// from that same watch cache. An older answer, from an API server behind the one the informer
// watches, or none, is read again from etcd. Either read may be overtaken by a change before the
// apply; that change's event plans again.
func (r *ScratchVolumeReconciler) readWhole(ctx context.Context, sts, live *appsv1.StatefulSet) error {
	key := client.ObjectKeyFromObject(sts)
	err := r.APIReader.Get(ctx, key, live, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	switch {
	case err == nil && asNewAs(live, sts):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	*live = appsv1.StatefulSet{}
	return r.APIReader.Get(ctx, key, live)
}

// asNewAs reports whether live is the StatefulSet cached stands for, at its version of what a
// decision depends on or a later one: the same object, at a generation as high, and with the same
// controller if no higher (a change of owner does not move the generation).
func asNewAs(live, cached *appsv1.StatefulSet) bool {
	if live.UID != cached.UID || live.Generation < cached.Generation {
		return false
	}
	return live.Generation > cached.Generation || decide.ControllerName(live) == decide.ControllerName(cached)
}

// settle finishes the sync of a StatefulSet that already carries what the outcomes ask for: a try
// after a write-war hold may have lasted long enough to end the fight, and a drop-in ConfigMap
// someone deleted is put back. Both run on every sync, reused decision or not: the first depends
// on the clock, the second on an object the decision does not cover.
func (r *ScratchVolumeReconciler) settle(ctx context.Context, sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume,
	outcomes map[string]*decide.Outcome) (map[string]*decide.Outcome, error) {
	rule, now := r.WriteWar.OrDefaults(), time.Now()
	g := r.guards.Update(client.ObjectKeyFromObject(sts), svs, func(g decide.Guard) decide.Guard { return rule.Settled(g, now) })
	return decide.WithGuard(outcomes, g), r.ensureConfigMaps(ctx, sts, outcomes)
}

// holdOff applies the write-war verdict before a write that restores entries someone removed from
// sts or changed, sts the whole object read from the API server. When the controller must hold
// off, it marks the outcomes held; when a fight begins, it counts it and warns once.
func (r *ScratchVolumeReconciler) holdOff(ctx context.Context, sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume,
	outcomes map[string]*decide.Outcome, key string, removed decide.Restore) bool {
	rule, now, name := r.WriteWar.OrDefaults(), time.Now(), client.ObjectKeyFromObject(sts)
	var hold, fresh bool
	g := r.guards.Update(name, svs, func(g decide.Guard) decide.Guard {
		g, hold, fresh = rule.BeforeRestore(g, now, key)
		return g
	})
	if fresh {
		g = r.guards.Update(name, svs, func(g decide.Guard) decide.Guard { return g.WithWriters(sts, removed) })
	}
	decide.WithGuard(outcomes, g)
	if !hold {
		return false
	}
	decide.Hold(outcomes, g.War)
	if fresh && g.War.Holds == 1 {
		writeWarsTotal.WithLabelValues(sts.Namespace).Inc()
		log.FromContext(ctx).Info("Stopped restoring a StatefulSet that another writer keeps changing",
			"statefulset", name, "candidates", g.War.Candidates, "retryAt", g.War.RetryAt)
		for _, o := range outcomes {
			if _, held := o.State.(decide.Held); held {
				r.warn(o.SV, sts, decide.FightBegan(sts.Name, g.War, rule))
			}
		}
	}
	return true
}

// write applies the entries and patches the containers, in the order tp.Removing says loses
// nothing. Adding, the apply carries the extra-flags variables too, so that only args and memory,
// which an apply cannot share, are left for the patch: a first injection through ExtraFlags is one
// write, one new pod template. sts ends as the last write's response has it.
func (r *ScratchVolumeReconciler) write(ctx context.Context, sts *appsv1.StatefulSet, tp decide.TargetPlan) error {
	removing := tp.Removing()
	if removing {
		if err := r.patchContainers(ctx, sts, tp.Pending); err != nil {
			return err
		}
	}
	if !tp.Desired.Equal(tp.Observed) {
		if err := r.apply(ctx, sts, tp); err != nil {
			return err
		}
	}
	if removing {
		return nil
	}
	// sts is the apply's response, or the object read: the patch tests its resourceVersion.
	return r.patchContainers(ctx, sts, tp.PendingAfter(&sts.Spec.Template))
}
