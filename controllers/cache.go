package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// lastAppliedAnnotation is where kubectl's client-side apply keeps a second copy of the whole
// manifest.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// CacheOptions keep the manager's informer caches small at scale: managedFields are dropped (the
// controller compares the entries it owns, not field sets), StatefulSets keep only what the
// controller reads (trimStatefulSet), and only the ConfigMaps the controller made are cached, not
// every ConfigMap in the cluster. An empty namespaces list watches all.
func CacheOptions(namespaces []string) cache.Options {
	o := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}:   {Label: labels.SelectorFromSet(labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue})},
			&appsv1.StatefulSet{}: {Transform: trimStatefulSet},
			// Only the node agents' reports on the pods' RAM volumes, one profile per node.
			&v1alpha1.NodeIOProfile{}: {Transform: trimProfile},
		},
	}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// stripManagedFields is controller-runtime's default transform, which a transform of its own
// replaces.
var stripManagedFields toolscache.TransformFunc = cache.TransformStripManagedFields()

// trimStatefulSet drops from a cached StatefulSet what the controller never reads, which a fleet
// would otherwise hold once per StatefulSet: managedFields, kubectl's last-applied copy of the
// manifest, the pod selector (the StatefulSet's own business), the volumeClaimTemplates but their
// names (which tell a persistent data directory), and the status conditions. The pod template
// stays whole: every decision reads it. The controller writes with server-side apply and JSON
// patches of its own entries, never the cached object, so nothing dropped here is written back.
func trimStatefulSet(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	sts, ok := obj.(*appsv1.StatefulSet)
	if err != nil || !ok {
		return obj, err
	}
	// The object is fresh from the watch and not shared yet: it is the transform's to change.
	delete(sts.Annotations, lastAppliedAnnotation)
	for i, t := range sts.Spec.VolumeClaimTemplates {
		sts.Spec.VolumeClaimTemplates[i] = corev1.PersistentVolumeClaim{}
		sts.Spec.VolumeClaimTemplates[i].Name = t.Name
	}
	sts.Spec.Selector = nil
	sts.Status.Conditions = nil
	return sts, nil
}
