package controllers

import (
	"slices"
	"sort"
	"strings"
	"sync"

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

// plannedContainer is the container of sts named name, with only what checking a larger volume
// against its memory limit reads (limitsFor): a remembered decision keeps it instead of the pod
// template. Its resource lists are shared among the decisions that have equal ones
// (sharedResources): a fleet comes in a few sizes, and each list is a map of several hundred bytes.
func plannedContainer(sts *appsv1.StatefulSet, name string) *corev1.Container {
	for i := range sts.Spec.Template.Spec.Containers {
		if c := &sts.Spec.Template.Spec.Containers[i]; c.Name == name {
			return &corev1.Container{Name: c.Name, Command: slices.Clone(c.Command), Args: slices.Clone(c.Args), Resources: corev1.ResourceRequirements{
				Requests: sharedResources.intern(c.Resources.Requests), Limits: sharedResources.intern(c.Resources.Limits),
			}}
		}
	}
	return nil
}

// maxSharedResourceLists bounds the distinct resource lists kept for sharing. Past it the table
// starts again: lists already shared stay shared, new ones are shared from then on.
const maxSharedResourceLists = 4096

// sharedResources are the resource lists the remembered decisions share.
var sharedResources = resourceLists{lists: map[string]corev1.ResourceList{}}

// resourceLists hands out one copy of each distinct resource list. The copies are read only.
type resourceLists struct {
	mu    sync.Mutex
	lists map[string]corev1.ResourceList
}

// intern returns the shared list equal to l, a copy of l the first time. Two lists are equal when
// they name the same resources with quantities that print the same: nothing the controller reads
// of a quantity can tell them apart.
func (r *resourceLists) intern(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	key := resourceListKey(l)
	r.mu.Lock()
	defer r.mu.Unlock()
	if shared, ok := r.lists[key]; ok {
		return shared
	}
	if len(r.lists) >= maxSharedResourceLists {
		clear(r.lists)
	}
	r.lists[key] = l.DeepCopy()
	return r.lists[key]
}

func resourceListKey(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		q := l[corev1.ResourceName(name)]
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte(';')
	}
	return b.String()
}
