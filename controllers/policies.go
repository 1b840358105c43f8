package controllers

// This file reads a namespace's admission rules for pods (its LimitRanges and ResourceQuotas) for
// the planning, which makes what the controller adds pass them, and maps their changes to the
// ScratchVolumes of the namespace.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// +kubebuilder:rbac:groups="",resources=limitranges;resourcequotas,verbs=list;watch

// namespaceView is what a reconcile reads once of its namespace for every target in it: the
// ScratchVolumes that select by label, and the admission rules the new pods must pass, with the
// stamp that tells a remembered decision whether they changed.
type namespaceView struct {
	selectors
	rules inject.Namespace
	stamp string
}

func (r *ScratchVolumeReconciler) namespaceView(ctx context.Context, namespace string) (namespaceView, error) {
	sel, err := r.selectorsIn(namespace)
	if err != nil {
		return namespaceView{}, err
	}
	rules, err := r.admissionRules(ctx, namespace)
	if err != nil {
		return namespaceView{}, err
	}
	return namespaceView{selectors: sel, rules: rules, stamp: rules.Stamp()}, nil
}

// admissionRules lists the namespace's LimitRanges and ResourceQuotas from the cache.
func (r *ScratchVolumeReconciler) admissionRules(ctx context.Context, namespace string) (inject.Namespace, error) {
	var lrs corev1.LimitRangeList
	if err := r.List(ctx, &lrs, client.InNamespace(namespace)); err != nil {
		return inject.Namespace{}, fmt.Errorf("failed to list the LimitRanges of namespace %s: %w", namespace, err)
	}
	var quotas corev1.ResourceQuotaList
	if err := r.List(ctx, &quotas, client.InNamespace(namespace)); err != nil {
		return inject.Namespace{}, fmt.Errorf("failed to list the ResourceQuotas of namespace %s: %w", namespace, err)
	}
	return inject.Namespace{LimitRanges: lrs.Items, Quotas: quotas.Items}, nil
}

// scratchVolumesInNamespace maps a change of a namespace's rules to every ScratchVolume there.
func (r *ScratchVolumeReconciler) scratchVolumesInNamespace(_ context.Context, o client.Object) []reconcile.Request {
	svs, err := fleetcache.ByIndex[*v1alpha1.ScratchVolume](r.Informers, toolscache.NamespaceIndex, o.GetNamespace())
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(svs))
	for _, sv := range svs {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: sv.Namespace, Name: sv.Name}})
	}
	return reqs
}

// quotaChanged passes the changes of a ResourceQuota that planning reads: its limits and scopes,
// and the memory in use, which decides whether a reserve fits. The rest of its use moves with
// every pod of the namespace and decides nothing here.
func quotaChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*corev1.ResourceQuota)
		cur, ok2 := e.ObjectNew.(*corev1.ResourceQuota)
		if !ok1 || !ok2 {
			return true
		}
		if !equality.Semantic.DeepEqual(old.Spec, cur.Spec) || !equality.Semantic.DeepEqual(old.Status.Hard, cur.Status.Hard) {
			return true
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceRequestsMemory, corev1.ResourceMemory, corev1.ResourceLimitsMemory} {
			a, b := old.Status.Used[name], cur.Status.Used[name]
			if a.Cmp(b) != 0 {
				return true
			}
		}
		return false
	}}
}
