package controllers

// This file keeps the drop-in ConfigMaps in step with the plans: each winning ConfigFile plan's
// ConfigMap exists with its file before a pod template refers to it, and those no injected
// StatefulSet needs are deleted.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// ensureConfigMaps applies the drop-in ConfigMap of every winning ConfigFile plan before the pod
// template refers to it, so new pods always find their file.
func (r *ScratchVolumeReconciler) ensureConfigMaps(ctx context.Context, sts *appsv1.StatefulSet, outcomes map[string]*decide.Outcome) error {
	for _, o := range outcomes {
		s, ok := o.Injecting()
		if !ok || s.Plan.ConfigVolume == nil {
			continue
		}
		if err := r.ensureConfigMap(ctx, o.SV, sts, s.Plan); err != nil {
			return err
		}
	}
	return nil
}

func (r *ScratchVolumeReconciler) ensureConfigMap(ctx context.Context, sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, plan *inject.Plan) error {
	name := sv.ConfigMapName(sts.Name)
	current := &corev1.ConfigMap{}
	// The cache's own object, to read only: every sync of every target with a drop-in reads it,
	// a decision reused or not.
	err := r.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: name}, current, client.UnsafeDisableDeepCopy)
	if err == nil && current.Data[plan.ConfigKey] == plan.ConfigData && len(current.Data) == 1 &&
		current.Labels[v1alpha1.ScratchVolumeLabel] == sv.Name {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to get ConfigMap %s/%s: %w", sts.Namespace, name, err)
	}
	return r.applyConfigMap(ctx, corev1ac.ConfigMap(name, sts.Namespace).
		WithLabels(map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ScratchVolumeLabel: sv.Name}).
		WithAnnotations(map[string]string{v1alpha1.TargetAnnotation: sts.Name}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(v1alpha1.GroupVersion.String()).WithKind("ScratchVolume").
			WithName(sv.Name).WithUID(sv.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithData(map[string]string{plan.ConfigKey: plan.ConfigData}))
}

// pruneConfigMaps deletes sv's ConfigMaps that no injected StatefulSet needs any more.
func (r *ScratchVolumeReconciler) pruneConfigMaps(ctx context.Context, sv *v1alpha1.ScratchVolume, keep map[string]bool) error {
	list := &corev1.ConfigMapList{}
	// The cache's own objects, as in targets: every reconcile lists all of them, and the few it
	// deletes are not changed by the deletion.
	if err := r.List(ctx, list, client.InNamespace(sv.Namespace), client.MatchingLabels{v1alpha1.ScratchVolumeLabel: sv.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("failed to list ConfigMaps of ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		if keep[cm.Name] {
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, cm)); err != nil {
			return fmt.Errorf("failed to delete ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	return nil
}
