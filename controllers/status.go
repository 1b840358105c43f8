package controllers

// This file writes the ScratchVolume's status, once per reconcile and only when it changed, with
// the Warning Events a new problem or a full volume asks for. What the status says is decided in
// package decide (Report.Status).

import (
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// updateStatus writes the status the report becomes, only when it changed, and emits a Warning
// Event when a target becomes blocked or a pod's volume filled up.
func (r *ScratchVolumeReconciler) updateStatus(ctx context.Context, sv *v1alpha1.ScratchVolume, rep *decide.Report) error {
	status, episodes := rep.Status()
	targetsInjected.WithLabelValues(sv.Namespace, sv.Name).Set(float64(status.InjectedTargets))
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
	for _, w := range decide.FullVolumes(episodes, status.RecommendedSize) {
		r.warn(sv, nil, w)
	}
	return nil
}

// observe reads what the node agents report about the RAM volumes of sv's pods into rep. A failed
// read leaves the usage part of the status as it was.
func (r *ScratchVolumeReconciler) observe(ctx context.Context, sv *v1alpha1.ScratchVolume, rep *decide.Report) error {
	var profiles v1alpha1.NodeIOProfileList
	if err := r.List(ctx, &profiles, client.MatchingFields{indexObservedScratchVolumes: observedKey(sv.Namespace, sv.Name)}); err != nil {
		return fmt.Errorf("failed to list the NodeIOProfiles reporting on ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	rep.Observe(decide.UsageOf(sv, profiles.Items))
	return nil
}
