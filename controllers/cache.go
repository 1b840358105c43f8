package controllers

import (
	"slices"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// controller compares the entries it owns, not field sets), StatefulSets keep only what every
// reconcile reads of them (trimStatefulSet), and only the ConfigMaps the controller made are
// cached, not every ConfigMap in the cluster. An empty namespaces list watches all.
func CacheOptions(namespaces []string) cache.Options {
	o := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {
				Label:     labels.SelectorFromSet(labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}),
				Transform: shareConfigMapData,
			},
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

// trimStatefulSet keeps of a cached StatefulSet what the controller reads of every target on
// every reconcile: its metadata but managedFields and kubectl's last-applied copy of the manifest
// (the labels select it, the generation and owner references key its remembered decision), its
// replicas and update strategy and its status but the conditions (how far a rollout got), and its
// pod template's annotations (which ScratchVolumes' entries it carries, with their hashes).
//
// The pod template's spec, the volumeClaimTemplates and the pod selector go: they are read only
// to plan a StatefulSet, which syncStatefulSet does on the whole object read from the API server
// when no remembered decision covers the StatefulSet's generation, and never on this one. Kept,
// they were about two thirds of what the cache held per StatefulSet. Nothing is written back from
// the cached object: the controller writes with server-side apply and JSON patches made from the
// whole one.
func trimStatefulSet(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	sts, ok := obj.(*appsv1.StatefulSet)
	if err != nil || !ok {
		return obj, err
	}
	// The object is fresh from the watch and not shared yet: it is the transform's to change.
	delete(sts.Annotations, lastAppliedAnnotation)
	sts.Spec.Selector, sts.Spec.VolumeClaimTemplates = nil, nil
	sts.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: sts.Spec.Template.Annotations}}
	sts.Status.Conditions = nil
	return sts, nil
}

// shareConfigMapData holds each distinct file of the controller's ConfigMaps once in the cache:
// a ScratchVolume over a fleet of one kind of server puts the same drop-in file into the ConfigMap
// of every target. The strings stay equal to what the API server sent; only their copies go.
func shareConfigMapData(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	cm, ok := obj.(*corev1.ConfigMap)
	if err != nil || !ok {
		return obj, err
	}
	for k, v := range cm.Data {
		cm.Data[k] = unique.Make(v).Value()
	}
	return cm, nil
}

// plannedContainer is a copy of the container of sts named name, with only what checking a larger
// volume against its memory limit reads (limitsFor): a remembered decision keeps it, shared with
// the other decisions that keep an equal one, instead of the pod template.
func plannedContainer(sts *appsv1.StatefulSet, name string) *corev1.Container {
	for i := range sts.Spec.Template.Spec.Containers {
		if c := &sts.Spec.Template.Spec.Containers[i]; c.Name == name {
			return &corev1.Container{Name: c.Name, Command: slices.Clone(c.Command), Args: slices.Clone(c.Args), Resources: *c.Resources.DeepCopy()}
		}
	}
	return nil
}
