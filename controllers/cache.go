package controllers

// This file says what the manager's informer caches hold (the transforms are package
// fleetcache's), and forgets the remembered decision on a StatefulSet that is deleted.

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
)

// CacheOptions keep the manager's informer caches small at scale: managedFields are dropped (the
// controller compares the entries it owns, not field sets), StatefulSets keep only what every
// reconcile reads of them (fleetcache.TrimStatefulSet), and only the ConfigMaps the controller
// made are cached, not every ConfigMap in the cluster. An empty namespaces list watches all. The
// cache's informers are made through informers, which the ScratchVolume controller reads its
// indexes from (ScratchVolumeReconciler.Informers); without them, its reads fail and say why.
func CacheOptions(namespaces []string, informers *fleetcache.Informers) cache.Options {
	o := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {
				Label:     labels.SelectorFromSet(labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}),
				Transform: fleetcache.ShareConfigMapData,
			},
			&appsv1.StatefulSet{}:     {Transform: fleetcache.TrimStatefulSet},
			&v1alpha1.ScratchVolume{}: {Transform: fleetcache.ShareTargetStatuses},
			// Only the node agents' reports on the pods' RAM volumes, one profile per node.
			&v1alpha1.NodeIOProfile{}: {Transform: fleetcache.TrimProfile},
			// Only the StatefulSet controller's refused pod creations (refusedCreations).
			&corev1.Event{}: {Field: failedCreates()},
		},
	}
	if informers != nil {
		o.NewInformer = informers.NewInformer
	}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// forgetDeleted passes StatefulSet events on, and forgets the decision on a StatefulSet that is
// deleted: its successor of the same name has another UID and would never reuse it.
type forgetDeleted struct {
	handler.EventHandler
	forget func(types.NamespacedName)
}

func (h forgetDeleted) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.Object != nil {
		h.forget(client.ObjectKeyFromObject(e.Object))
	}
	h.EventHandler.Delete(ctx, e, q)
}
