package controllers

// This file writes the ScratchVolume's status, once per reconcile and only when it changed, with
// the Warning Events a new problem or a full volume asks for. What the status says is decided in
// package decide (Report.Verdict).

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// updateStatus writes the verdict's resize and then its status, only when it changed, and emits a
// Warning Event when a target becomes blocked or a pod's volume filled up.
func (r *ScratchVolumeReconciler) updateStatus(ctx context.Context, sv *v1alpha1.ScratchVolume, verdict decide.Verdict) error {
	status := verdict.Status
	targetsInjected.WithLabelValues(sv.Namespace, sv.Name).Set(float64(status.InjectedTargets))
	if rz := verdict.Resize; rz != nil {
		// The status records the resize only once spec.size holds it; until the cache shows that
		// status, also when writing it fails below, the next reconcile starts from it (knownSizing).
		if err := r.resize(ctx, sv, rz); err != nil {
			return err
		}
		r.resized.Store(client.ObjectKeyFromObject(sv), status.Sizing.DeepCopy())
	}
	changed, err := decide.StatusChanged(&sv.Status, &status)
	if err != nil {
		return fmt.Errorf("failed to encode the status of ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	if !changed {
		return nil
	}
	next, err := json.Marshal(&status)
	if err != nil {
		return fmt.Errorf("failed to encode the status of ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	for _, w := range decide.NewProblems(&sv.Status, &status) {
		r.warn(sv, nil, w)
	}
	// The status is replaced whole, never changed in place (it is the cache's, see Reconcile).
	sv.Status = status
	if err := r.Status().Patch(ctx, sv, replaceStatus(next)); err != nil {
		return fmt.Errorf("failed to update the status of ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	// The patch's response is the ScratchVolume as written: no decision is made from an older copy.
	r.statuses.Record(client.ObjectKeyFromObject(sv), sv.ResourceVersion)
	for _, w := range decide.FullVolumes(verdict.Episodes, status.RecommendedSize) {
		r.warn(sv, nil, w)
	}
	return nil
}

// knownSizing is the status.sizing written with sv's last automatic resize when the cached sv does
// not show it yet, nil otherwise.
func (r *ScratchVolumeReconciler) knownSizing(sv *v1alpha1.ScratchVolume) *v1alpha1.SizingStatus {
	key := client.ObjectKeyFromObject(sv)
	v, ok := r.resized.Load(key)
	if !ok {
		return nil
	}
	known := v.(*v1alpha1.SizingStatus)
	if decide.SizingSeen(sv.Status.Sizing, known) {
		r.resized.Delete(key)
		return nil
	}
	return known
}

// resize writes an automatic resize into spec.size under its own field manager, and fails when the
// ScratchVolume changed since it was read: the next reconcile decides again from what it says.
func (r *ScratchVolumeReconciler) resize(ctx context.Context, sv *v1alpha1.ScratchVolume, rz *decide.Resize) error {
	patched := sv.DeepCopy()
	patched.Spec.Size = rz.To
	patch := client.MergeFromWithOptions(sv, client.MergeFromWithOptimisticLock{})
	if err := r.Patch(ctx, patched, patch, client.FieldOwner(v1alpha1.SizingFieldManager)); err != nil {
		return fmt.Errorf("failed to resize ScratchVolume %s/%s to %s: %w", sv.Namespace, sv.Name, rz.To.String(), err)
	}
	r.Recorder.Eventf(sv, nil, corev1.EventTypeNormal, v1alpha1.ReasonResized, "Resize", "%s", rz.Event)
	return nil
}

// observe reads what the node agents report about the RAM volumes of sv's pods; nil, and the
// error, when it cannot, which leaves the usage part of the status as it was.
func (r *ScratchVolumeReconciler) observe(ctx context.Context, sv *v1alpha1.ScratchVolume) ([]v1alpha1.ScratchVolumeUsage, error) {
	var profiles v1alpha1.NodeIOProfileList
	if err := r.List(ctx, &profiles, client.MatchingFields{indexObservedScratchVolumes: observedKey(sv.Namespace, sv.Name)}); err != nil {
		return nil, fmt.Errorf("failed to list the NodeIOProfiles reporting on ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	return decide.UsageOf(sv, profiles.Items), nil
}
