// Package controllers is the ScratchVolume controller's I/O layer: it reads the ScratchVolume and
// the StatefulSets it selects, asks the pure package decide what each target should carry and
// what the status says, writes that (server-side apply in apply.go, JSON patches in
// jsonpatch.go), records the Events and patches the status. What it keeps between reconciles is
// package fleetcache's. Imports run one way: controllers → fleetcache → decide → inject, mysql,
// capacity; nothing below imports back up.
package controllers

// This file holds the reconciler, its Reconcile (the table of contents of one reconcile), the
// finalizer and the controller's watches.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
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
	// (zero fields take the defaults: 3 restores within 10 minutes).
	WriteWar decide.WriteWarRule
	// Version is the manager's version, recorded in the status with what it applies and named by
	// the changes it holds back (default "dev").
	Version string
	// MaintenanceWindows are when a change nobody wrote is applied without approval, for the
	// ScratchVolumes that declare no windows of their own; none by default.
	MaintenanceWindows []v1alpha1.MaintenanceWindow
	// MaxInFlight is how many of a ScratchVolume's targets may roll out at once when it sets no
	// spec.rollout.maxInFlight: a count or a share; the zero value sets no limit.
	MaxInFlight intstr.IntOrString
	// ProgressDeadline is how long a target may stay in flight when the ScratchVolume sets no
	// spec.rollout.progressDeadline (default decide.DefaultProgressDeadline).
	ProgressDeadline time.Duration
	// Informers are the informers of the manager's cache, whose indexes the controller reads: the
	// cache must be made with CacheOptions and these Informers.
	Informers *fleetcache.Informers
	// MissingPodsGrace is how long a rolling target may miss a pod, with no FailedCreate Event
	// to say why, before its rollout is taken for refused and put back (default
	// DefaultMissingPodsGrace).
	MissingPodsGrace time.Duration

	// workers bounds the target syncs in flight across all reconciles (acquireWorker).
	workers     chan struct{}
	workersOnce sync.Once

	guards fleetcache.Guards
	// written holds the generations of the controller's writes the cache has not seen yet.
	written fleetcache.Written
	// statuses holds the resource versions of the controller's status writes the cache has not
	// seen yet.
	statuses fleetcache.Statuses
	// decisions holds each target's last decision that needed no write, for the syncs that follow
	// with the same inputs.
	decisions fleetcache.Decisions
	// reverted are the StatefulSets each ScratchVolume reverted that may still roll out.
	reverted reverting
	// resized holds, by ScratchVolume, the status.sizing written with an automatic resize until the
	// cache has it: the reconcile the new spec.size brings may read the old status first.
	resized sync.Map
	// gaps holds, by StatefulSet, when the controller first saw it missing pods during a rollout
	// (gapSighting), until it has them all again.
	gaps sync.Map
	// wroteAt holds, by StatefulSet, when the controller last began a write that injects, so that
	// a refusal of an earlier attempt is not taken for one of this (refusedCreations).
	wroteAt sync.Map
}

func (r *ScratchVolumeReconciler) version() string {
	if r.Version == "" {
		return "dev"
	}
	return r.Version
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

// Reconcile brings one ScratchVolume's targets to the state it asks for and records the outcome:
// it syncs every target (each sync reads, decides and writes one StatefulSet), decides the status
// from what the syncs reported, writes it, and decides in one place when to look again.
func (r *ScratchVolumeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sv, err := r.load(ctx, req)
	if sv == nil || err != nil {
		return ctrl.Result{}, err
	}
	if r.statuses.Behind(sv) {
		return r.requeue(ctx, nil, false, fmt.Errorf("ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, errCacheBehind))
	}
	if !sv.DeletionTimestamp.IsZero() {
		return r.requeue(ctx, nil, false, r.finalize(ctx, sv))
	}
	if err := r.ensureFinalizer(ctx, sv); err != nil {
		return ctrl.Result{}, err
	}
	settings := decide.ReportSettings{
		WriteWar: r.WriteWar, Version: r.version(), Now: time.Now(), Windows: r.MaintenanceWindows, KnownSizing: r.knownSizing(sv),
	}
	report, revertsWaiting, err := r.syncAll(ctx, sv, settings)
	if staleWrite(err) {
		// Nothing is reported from a reconcile that saw a StatefulSet change under its write: the
		// retry comes soon, reads again and reports.
		return r.requeue(ctx, nil, false, err)
	}
	observed, obsErr := r.observe(ctx, sv)
	if obsErr != nil {
		log.FromContext(ctx).Error(obsErr, "Keeping the last reported usage")
	}
	verdict := report.Verdict(decide.Ending{Failure: err, Observed: observed})
	if statusErr := r.updateStatus(ctx, sv, verdict); statusErr != nil && err == nil {
		err = statusErr
	}
	return r.requeue(ctx, &verdict, revertsWaiting, err)
}

// load reads the ScratchVolume of req: nil when it is gone. The metadata and spec are the
// reconcile's own, to change (the finalizer); the status, which lists every target of a selector,
// stays the cache's, read only: a new one replaces it whole.
func (r *ScratchVolumeReconciler) load(ctx context.Context, req ctrl.Request) (*v1alpha1.ScratchVolume, error) {
	sv := &v1alpha1.ScratchVolume{}
	if err := r.Get(ctx, req.NamespacedName, sv, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.decisions.ForgetScratchVolume(req.NamespacedName)
		}
		return nil, client.IgnoreNotFound(err)
	}
	sv.ObjectMeta, sv.Spec = *sv.ObjectMeta.DeepCopy(), *sv.Spec.DeepCopy()
	return sv, nil
}

// syncAll syncs every target of sv within the rollout's pacing, reverts the StatefulSets sv no
// longer selects, and deletes the drop-in ConfigMaps no target needs. It returns the report of
// every target it synced, started from settings and what it found; revertsWaiting says some
// reverts wait for the targets in flight.
func (r *ScratchVolumeReconciler) syncAll(ctx context.Context, sv *v1alpha1.ScratchVolume, settings decide.ReportSettings) (report *decide.Report, revertsWaiting bool, err error) {
	targets, err := r.targets(ctx, sv)
	if invalid := (*invalidSelectorError)(nil); errors.As(err, &invalid) {
		// Nothing can be known to be selected, so nothing is injected or reverted; the status
		// says what to fix, and the next change of the spec brings the next reconcile.
		settings.InvalidSelector = invalid.Error()
		return decide.NewReport(sv, settings, decide.Synced{}), false, nil
	}
	if err != nil {
		return decide.NewReport(sv, settings, decide.Synced{}), false, err
	}
	pacing := decide.Pace(sv, append(targets, r.stillRolling(ctx, sv)...), r.written.Behind, r.rolloutDefaults(), time.Now())
	settings.Pacing = &pacing
	rollouts := newRolloutBudget(pacing)
	synced, err := r.syncTargets(ctx, sv, targets, rollouts)
	report = decide.NewReport(sv, settings, decide.Synced{Found: len(targets), Targets: synced})
	if err != nil {
		return report, false, err
	}
	if err := r.revertDropped(ctx, sv, targets, rollouts); errors.Is(err, errRevertsWaiting) {
		revertsWaiting = true
	} else if err != nil {
		return report, false, err
	}
	return report, revertsWaiting, r.pruneConfigMaps(ctx, sv, report.ConfigMaps())
}

// requeue is when to reconcile a ScratchVolume again without an event, decided in one place from
// how the reconcile ended: soon after a write that found its StatefulSet changed or the cache
// behind (neither is an error: controller-runtime would log it with a stack trace); with
// controller-runtime's backoff after an error; every revertRetry while reverts wait for the
// targets in flight; and otherwise when the verdict's next decision is due (nil: none is).
func (r *ScratchVolumeReconciler) requeue(ctx context.Context, verdict *decide.Verdict, revertsWaiting bool, err error) (ctrl.Result, error) {
	switch {
	case staleWrite(err):
		log.FromContext(ctx).V(1).Info("Retrying a ScratchVolume: a StatefulSet changed under a write, or the cache is behind the controller's last write", "reason", err.Error())
		if errors.Is(err, errCacheBehind) {
			return ctrl.Result{RequeueAfter: cacheBehindRetry}, nil
		}
		return ctrl.Result{RequeueAfter: staleWriteRetry}, nil
	case errors.Is(err, errRevertsWaiting):
		return ctrl.Result{RequeueAfter: revertRetry}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	var after time.Duration
	if verdict != nil {
		after = verdict.RequeueAfter(time.Now())
	}
	if revertsWaiting && (after == 0 || after > revertRetry) {
		after = revertRetry
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// SetupWithManager registers the controller: ScratchVolumes, the StatefulSets they select (mapped
// back through indexes, not owner references), and the ConfigMaps they own.
func (r *ScratchVolumeReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Informers == nil {
		return errors.New("the ScratchVolume controller has no Informers: make the manager's cache with CacheOptions and give the controller the same Informers")
	}
	if err := setupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := addIndexes(ctx, mgr.GetCache()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ScratchVolume{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
			deletionPredicate{}, approvalPredicate{}))).
		Watches(&appsv1.StatefulSet{}, forgetDeleted{
			EventHandler: handler.EnqueueRequestsFromMapFunc(r.scratchVolumesForStatefulSet),
			forget:       r.decisions.Forget,
		}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.LimitRange{}, handler.EnqueueRequestsFromMapFunc(r.scratchVolumesInNamespace)).
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(r.scratchVolumesForEvent)).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(r.scratchVolumesInNamespace),
			builder.WithPredicates(quotaChanged())).
		Watches(&v1alpha1.NodeIOProfile{}, handler.EnqueueRequestsFromMapFunc(r.scratchVolumesForProfile),
			builder.WithPredicates(scratchVolumesChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles)}).
		Named("scratchvolume").
		Complete(r)
}

// ParseMaintenanceWindow reads a maintenance window as the manager's --maintenance-window flag
// takes it: "[DAYS ]HH:MM+DURATION[ TIMEZONE]", such as "Sat,Sun 02:00+3h Europe/Berlin".
func ParseMaintenanceWindow(s string) (v1alpha1.MaintenanceWindow, error) {
	return decide.ParseWindow(s)
}
