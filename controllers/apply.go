package controllers

// This file is the one place the controller writes with server-side apply: its entries on a
// StatefulSet, and the drop-in ConfigMaps.

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// apply server-side applies tp's entries under the controller's field manager. It forces only
// when tp.Force says so: to set an extra-flags variable whose value another manager owns, when
// that value is all the apply takes from anyone (see decide.TargetPlan.Force). Any other field
// another manager owns with another value is a conflict to report, never something to take.
func (r *ScratchVolumeReconciler) apply(ctx context.Context, sts *appsv1.StatefulSet, tp decide.TargetPlan) error {
	desired, observed := tp.Desired, tp.Observed
	ac, err := desired.ApplyConfiguration(sts.Name, sts.Namespace)
	if err != nil {
		return err
	}
	// Sent as a raw apply patch rather than with the client's Apply, which decodes the response
	// into the apply configuration, over what it held: list items the response has in other places
	// keep fields of ours. Decoded into an empty StatefulSet, the response is the whole object as
	// the apply left it, with the generation the cache must reach before the next decision.
	raw, err := json.Marshal(ac)
	if err != nil {
		return fmt.Errorf("failed to encode the entries for StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	applied := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: sts.Name}}
	opts := []client.PatchOption{client.FieldOwner(v1alpha1.FieldManager)}
	if tp.Force {
		opts = append(opts, client.ForceOwnership)
	}
	if err := r.Patch(ctx, applied, client.RawPatch(types.ApplyPatchType, raw), opts...); err != nil {
		return fmt.Errorf("failed to apply to StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	*sts = *applied
	statefulSetWrites.WithLabelValues(changeKind(desired, observed)).Inc()
	log.FromContext(ctx).Info("Applied StatefulSet entries", "statefulset", client.ObjectKeyFromObject(sts),
		"change", changeKind(desired, observed), "scratchVolumes", len(desired.Annotations))
	return nil
}

func changeKind(desired, observed inject.Entries) string {
	switch {
	case desired.Empty():
		return "revert"
	case observed.Empty():
		return "inject"
	default:
		return "update"
	}
}

// applyConfigMap server-side applies a drop-in ConfigMap, forcing: the ConfigMap is the
// controller's alone, named after its ScratchVolume and target.
func (r *ScratchVolumeReconciler) applyConfigMap(ctx context.Context, ac *corev1ac.ConfigMapApplyConfiguration) error {
	if err := r.Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply ConfigMap %s/%s: %w", *ac.Namespace, *ac.Name, err)
	}
	return nil
}
