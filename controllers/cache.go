package controllers

import (
	"sort"
	"strings"
	"sync"

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
// names (which tell a persistent data directory), the status conditions, and the parts of the pod
// template no decision reads (trimPodSpec). The controller writes with server-side apply and JSON
// patches of its own entries, never the cached object, so nothing dropped here is written back;
// and a JSON patch addresses list items by index, so no list item is ever dropped, only fields.
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
	trimPodSpec(&sts.Spec.Template.Spec)
	return sts, nil
}

// trimPodSpec drops from a pod template's spec the fields planning never reads: where the pods
// run (affinity, tolerations, spread, node selector), how they are reached and pulled (DNS, host
// aliases, pull secrets, readiness and scheduling gates), and of every container its ports,
// probes, lifecycle hooks and resize policy. What planning reads stays: names, images, commands,
// arguments, environment, mounts, security contexts, volumes, resources. The containers' resource
// lists are shared among the cached StatefulSets that have the same ones (sharedResources): a
// fleet comes in a few sizes, and each list is a map of several hundred bytes.
func trimPodSpec(spec *corev1.PodSpec) {
	spec.Affinity, spec.Tolerations, spec.TopologySpreadConstraints, spec.NodeSelector = nil, nil, nil, nil
	spec.DNSConfig, spec.HostAliases, spec.ImagePullSecrets = nil, nil, nil
	spec.ReadinessGates, spec.SchedulingGates = nil, nil
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Ports, c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle, c.ResizePolicy = nil, nil, nil, nil, nil, nil
			c.Resources.Requests = sharedResources.intern(c.Resources.Requests)
			c.Resources.Limits = sharedResources.intern(c.Resources.Limits)
		}
	}
}

// maxSharedResourceLists bounds the distinct resource lists kept for sharing. Past it the table
// starts again: lists already shared stay shared, new ones are shared from then on.
const maxSharedResourceLists = 4096

// sharedResources are the resource lists the cached StatefulSets share.
var sharedResources = resourceLists{lists: map[string]corev1.ResourceList{}}

// resourceLists hands out one copy of each distinct resource list. The copies are read only, like
// everything in the cache: the controller copies a StatefulSet before it changes it.
type resourceLists struct {
	mu    sync.Mutex
	lists map[string]corev1.ResourceList
}

// intern returns the shared list equal to l, l itself the first time. Two lists are equal when
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
	r.lists[key] = l
	return l
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
