package controllers

// This file adds the ScratchVolume's finalizer, and on deletion reverts every StatefulSet that
// carries it before the finalizer goes; the finalizer is written with merge patches.

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// finalize removes the ScratchVolume from every StatefulSet that carries it, paced like any
// rollout, then lets it go; errRevertsWaiting says some StatefulSets still wait for their turn.
func (r *ScratchVolumeReconciler) finalize(ctx context.Context, sv *v1alpha1.ScratchVolume) error {
	if !controllerutil.ContainsFinalizer(sv, v1alpha1.ScratchVolumeFinalizer) {
		return nil
	}
	injected, err := r.injectedBy(sv)
	if err != nil {
		return err
	}
	pacing := decide.Pace(sv, append(injected, r.stillRolling(ctx, sv)...), r.written.Behind, r.rolloutDefaults(), time.Now())
	if err := r.revertDropped(ctx, sv, nil, newRolloutBudget(pacing)); err != nil {
		return err
	}
	r.forgetReverted(client.ObjectKeyFromObject(sv))
	if err := r.pruneConfigMaps(ctx, sv, nil); err != nil {
		return err
	}
	targetsInjected.DeleteLabelValues(sv.Namespace, sv.Name)
	r.decisions.ForgetScratchVolume(client.ObjectKeyFromObject(sv))
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
