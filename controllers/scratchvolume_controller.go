// Package controllers holds the reconcilers of the scratch-operator. The decisions they act on live in
// the pure sub-packages inject (what goes into a pod template) and mysql (what a server needs).
package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// ScratchVolumeReconciler injects RAM scratch volumes into the StatefulSets a ScratchVolume selects,
// reports what it did, and removes exactly what it added when the ScratchVolume goes.
type ScratchVolumeReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	// APIReader reads around the cache: the whole StatefulSets that are planned (the cache keeps
	// only part of each), and the one a write must see as it just changed it. SetupWithManager
	// sets the manager's when it is nil.
	APIReader client.Reader
	// MaxConcurrentReconciles bounds parallel reconciles, and the target syncs in flight across
	// them (default 1).
	MaxConcurrentReconciles int
	// WriteWar is when the controller stops restoring entries another writer keeps removing
	// (default: 3 restores within 10 minutes).
	WriteWar WriteWarRule

	// statefulSets and scratchVolumes are the cache's indexers of those kinds, when it gives them
	// (statefulSetIndexer, scratchVolumeIndexer).
	statefulSets, scratchVolumes toolscache.Indexer

	// slots bounds the target syncs in flight across all reconciles (acquireSlot).
	slots     chan struct{}
	slotsOnce sync.Once

	guards guardStore
	// written holds the generations of the controller's writes the cache has not seen yet.
	written writtenGenerations
	// decisions holds each target's last decision that needed no write, for the syncs that follow
	// with the same inputs.
	decisions decisionStore
}

// Every verb below is one the manager's requests need; test/realnode compares them with the API
// server's audit log of the installed manager. Two are needed without a request of their own:
// create on ConfigMaps, which a server-side apply of a new object is also authorized for, and
// update on scratchvolumes/finalizers, which the OwnerReferencesPermissionEnforcement admission
// plugin checks for a ConfigMap whose owner reference blocks its ScratchVolume's deletion.
//
// +kubebuilder:rbac:groups=dbtune.io,resources=scratchvolumes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=dbtune.io,resources=scratchvolumes/status,verbs=patch
// +kubebuilder:rbac:groups=dbtune.io,resources=scratchvolumes/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=dbtune-system,resources=leases,verbs=get;create;update

// Reconcile brings one ScratchVolume's targets to the state it asks for and records the outcome.
func (r *ScratchVolumeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	sv := &v1alpha1.ScratchVolume{}
	if err := r.Get(ctx, req.NamespacedName, sv, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.decisions.forgetScratchVolume(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The metadata and spec are the reconcile's own, to change (the finalizer); the status, which
	// lists every target of a selector, stays the cache's, read only: a new one replaces it whole.
	sv.ObjectMeta, sv.Spec = *sv.ObjectMeta.DeepCopy(), *sv.Spec.DeepCopy()
	if !sv.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, sv)
	}
	if err := r.ensureFinalizer(ctx, sv); err != nil {
		return ctrl.Result{}, err
	}
	report := newReport(sv, r.WriteWar)
	defer func() {
		if staleWrite(err) {
			// The StatefulSet moved between read and write, or the cache has not caught up with
			// the last write yet: the retry comes at once and reports. The second is no error.
			if errors.Is(err, errCacheBehind) {
				result, err = ctrl.Result{RequeueAfter: cacheBehindRetry}, nil
			}
			return
		}
		report.failure = err
		if obsErr := r.observe(ctx, sv, report); obsErr != nil {
			log.FromContext(ctx).Error(obsErr, "Keeping the last reported usage")
		}
		if statusErr := r.updateStatus(ctx, sv, report); statusErr != nil && err == nil {
			err = statusErr
		}
	}()
	targets, err := r.targets(ctx, sv)
	if invalid := (*invalidSelectorError)(nil); errors.As(err, &invalid) {
		// Nothing can be known to be selected, so nothing is injected or reverted; the status
		// says what to fix, and the next change of the spec brings the next reconcile.
		report.invalidSelector = invalid.Error()
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	report.targetsFound = len(targets)
	report.targets = make([]v1alpha1.ScratchTargetStatus, 0, len(targets))
	if err := r.syncTargets(ctx, sv, targets, report); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.revertDropped(ctx, sv, targets); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.pruneConfigMaps(ctx, sv, report.configMaps()); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: report.retryAfter(time.Now())}, nil
}

// syncTargets syncs every target and reports each, in order. A failed write is reported as such
// and the others still go ahead; the failures come back joined, for a retry with backoff. A
// conflict ends the reconcile: the retry re-reads everything.
//
// The targets are synced in parallel, each holding one of the reconciler's sync slots, as many as
// it has workers: all reconciles together never have more syncs in flight than workers, as when
// each reconcile synced its targets one after the other, but when fewer ScratchVolumes than
// workers are left to reconcile, their targets use the idle slots instead of leaving them idle.
func (r *ScratchVolumeReconciler) syncTargets(ctx context.Context, sv *v1alpha1.ScratchVolume, targets []*appsv1.StatefulSet, report *report) error {
	type synced struct {
		out map[string]*outcome
		err error
	}
	sel, err := r.selectorsIn(ctx, sv.Namespace)
	if err != nil {
		return err
	}
	events := r.changeEvents()
	defer events.record()
	results := make([]synced, len(targets))
	var wg sync.WaitGroup
	for i := range targets {
		release, err := r.acquireSlot(ctx)
		if err != nil {
			wg.Wait()
			return err
		}
		wg.Go(func() {
			defer release()
			out, err := r.syncStatefulSet(ctx, targets[i], sel, events)
			results[i] = synced{out, err}
		})
	}
	wg.Wait()
	var errs []error
	for i := range targets {
		out, err := results[i].out, results[i].err
		if denial := admissionDenial(err); denial != "" {
			// Trying again at once would be refused the same way: the status says why, and the
			// StatefulSet's next change (the label a policy asks for) or the retry brings the next try.
			log.FromContext(ctx).Info("Admission control refused a StatefulSet change", "statefulset", client.ObjectKeyFromObject(targets[i]), "message", denial)
			report.denied(targets[i], denial)
			continue
		}
		if staleWrite(err) {
			return err
		}
		if err != nil {
			report.failed(targets[i], err)
			errs = append(errs, err)
			continue
		}
		report.add(targets[i], out[sv.Name])
	}
	return errors.Join(errs...)
}

// acquireSlot waits for one of the slots that bound the target syncs in flight across all
// reconciles, one per worker, and returns the function that gives it back. Every sync holds one:
// those of syncTargets, and the reverts of targets a ScratchVolume no longer selects.
func (r *ScratchVolumeReconciler) acquireSlot(ctx context.Context) (release func(), err error) {
	r.slotsOnce.Do(func() { r.slots = make(chan struct{}, max(1, r.MaxConcurrentReconciles)) })
	select {
	case r.slots <- struct{}{}:
		return func() { <-r.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// finalize removes the ScratchVolume from every StatefulSet that carries it, then lets it go.
func (r *ScratchVolumeReconciler) finalize(ctx context.Context, sv *v1alpha1.ScratchVolume) error {
	if !controllerutil.ContainsFinalizer(sv, v1alpha1.ScratchVolumeFinalizer) {
		return nil
	}
	if err := r.revertDropped(ctx, sv, nil); err != nil {
		return err
	}
	if err := r.pruneConfigMaps(ctx, sv, nil); err != nil {
		return err
	}
	targetsInjected.DeleteLabelValues(sv.Namespace, sv.Name)
	r.decisions.forgetScratchVolume(client.ObjectKeyFromObject(sv))
	patch := client.MergeFrom(sv.DeepCopy())
	controllerutil.RemoveFinalizer(sv, v1alpha1.ScratchVolumeFinalizer)
	if err := r.Patch(ctx, sv, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to remove the finalizer of ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	return nil
}

func (r *ScratchVolumeReconciler) ensureFinalizer(ctx context.Context, sv *v1alpha1.ScratchVolume) error {
	if controllerutil.ContainsFinalizer(sv, v1alpha1.ScratchVolumeFinalizer) {
		return nil
	}
	patch := client.MergeFrom(sv.DeepCopy())
	controllerutil.AddFinalizer(sv, v1alpha1.ScratchVolumeFinalizer)
	if err := r.Patch(ctx, sv, patch); err != nil {
		return fmt.Errorf("failed to add the finalizer to ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	return nil
}

// revertDropped re-syncs every StatefulSet that still carries sv but is not among keep, which removes
// sv's entries from it (sv no longer selects it, or sv is being deleted).
func (r *ScratchVolumeReconciler) revertDropped(ctx context.Context, sv *v1alpha1.ScratchVolume, keep []*appsv1.StatefulSet) error {
	injected, err := r.injectedBy(ctx, sv)
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, s := range keep {
		kept[s.Name] = true
	}
	sel, err := r.selectorsIn(ctx, sv.Namespace)
	if err != nil {
		return err
	}
	events := r.changeEvents()
	defer events.record()
	for _, sts := range injected {
		if kept[sts.Name] {
			continue
		}
		release, err := r.acquireSlot(ctx)
		if err != nil {
			return err
		}
		out, err := r.syncStatefulSet(ctx, sts, sel, events)
		release()
		if err != nil {
			return err
		}
		if out == nil {
			continue // deleted meanwhile: nothing was reverted
		}
		events.add(sv, sts, change{EventReverted, actionRevert,
			"Removed the RAM volume and its settings from StatefulSet " + sts.Name,
			"Removed the RAM volume and its settings from"})
	}
	return nil
}

// SetupWithManager registers the controller: ScratchVolumes, the StatefulSets they select (mapped
// back through indexes, not owner references), and the ConfigMaps they own.
func (r *ScratchVolumeReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := setupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if r.statefulSets == nil {
		ix, err := statefulSetIndexer(ctx, mgr.GetCache())
		if err != nil {
			return err
		}
		r.statefulSets = ix
	}
	if r.scratchVolumes == nil {
		ix, err := scratchVolumeIndexer(ctx, mgr.GetCache())
		if err != nil {
			return err
		}
		r.scratchVolumes = ix
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ScratchVolume{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
			deletionPredicate{}))).
		Watches(&appsv1.StatefulSet{}, forgetDeleted{
			EventHandler: handler.EnqueueRequestsFromMapFunc(r.scratchVolumesForStatefulSet),
			forget:       r.decisions.forget,
		}).
		Owns(&corev1.ConfigMap{}).
		Watches(&v1alpha1.NodeIOProfile{}, handler.EnqueueRequestsFromMapFunc(r.scratchVolumesForProfile),
			builder.WithPredicates(scratchVolumesChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles)}).
		Named("scratchvolume").
		Complete(r)
}
