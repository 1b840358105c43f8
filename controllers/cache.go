package controllers

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
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
			&appsv1.StatefulSet{}:     {Transform: trimStatefulSet},
			&v1alpha1.ScratchVolume{}: {Transform: shareTargetStatuses},
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
// every reconcile: its metadata but managedFields and annotations (the labels select it, the
// generation and owner references key its remembered decision; the annotations, kubectl's
// last-applied copy of the manifest or a GitOps tool's and a package manager's, are no one's), its
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
	sts.Annotations = nil
	sts.Spec.Selector, sts.Spec.VolumeClaimTemplates = nil, nil
	sts.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: sts.Spec.Template.Annotations}}
	sts.Status.Conditions = nil
	shareMetadata(&sts.ObjectMeta)
	shareMetadata(&sts.Spec.Template.ObjectMeta)
	return sts, nil
}

// shareConfigMapData holds each distinct file of the controller's ConfigMaps once in the cache:
// a ScratchVolume over a fleet of one kind of server puts the same drop-in file into the ConfigMap
// of every target, with the same labels and owner. The data stays equal to what the API server
// sent; only its copies go. The annotations (the target's name, for people) go too: the controller
// reads the file, the ScratchVolume label and the owner of a cached ConfigMap, and deletes it by
// name.
func shareConfigMapData(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	cm, ok := obj.(*corev1.ConfigMap)
	if err != nil || !ok {
		return obj, err
	}
	cm.Data = shareMap(cm.Data)
	cm.Annotations = nil
	shareMetadata(&cm.ObjectMeta)
	return cm, nil
}

// shareMetadata holds once what the metadata of cached objects of a fleet has in common: the
// namespace, equal label and annotation maps (and their strings), and equal owner lists. Names and
// UIDs are each object's own and stay as they are. Nothing changes a cached object in place: a
// shared map or list is read only, like the rest of the cache.
func shareMetadata(m *metav1.ObjectMeta) {
	m.Namespace = share(m.Namespace)
	m.Labels, m.Annotations = shareMap(m.Labels), shareMap(m.Annotations)
	m.OwnerReferences = shareOwners(m.OwnerReferences)
}

// shareTargetStatuses holds once what the targets of a cached ScratchVolume's status have in
// common: a selector's status lists every StatefulSet it picks, and those of one kind of server
// report the same container, version, hash and temporary-data locations. Equal strings become one
// string and equal location lists one list; the target list itself is cut to its length (the
// decoder doubles it as it goes). What the status says does not change, only how many copies of it
// the cache holds: nothing changes a cached status in place, the controller replaces it whole.
func shareTargetStatuses(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	sv, ok := obj.(*v1alpha1.ScratchVolume)
	if err != nil || !ok {
		return obj, err
	}
	shareMetadata(&sv.ObjectMeta)
	targets := sv.Status.Targets
	if len(targets) == 0 {
		return sv, nil
	}
	targets = slices.Clip(slices.Clone(targets))
	locations := map[string][]v1alpha1.TempLocation{}
	for i := range targets {
		t := &targets[i]
		t.Container, t.Version, t.ConfigHash, t.Message = share(t.Container), share(t.Version), share(t.ConfigHash), share(t.Message)
		t.Flavor, t.Injection = share(t.Flavor), share(t.Injection)
		if len(t.TempLocations) == 0 {
			continue
		}
		key := locationsKey(t.TempLocations)
		if l, ok := locations[key]; ok {
			t.TempLocations = l
			continue
		}
		l := slices.Clip(slices.Clone(t.TempLocations))
		for j := range l {
			l[j] = v1alpha1.TempLocation{Data: share(l[j].Data), Medium: share(l[j].Medium), Option: share(l[j].Option), Path: share(l[j].Path)}
		}
		locations[key], t.TempLocations = l, l
	}
	sv.Status.Targets = targets
	return sv, nil
}

// maxSharedValues bounds the distinct values a sharedTable keeps for sharing. Past it the table
// starts again: values already shared stay shared, new ones are shared from then on.
const maxSharedValues = 4096

// sharedTable hands out one value per key: the first made for it. It keeps at most
// maxSharedValues.
type sharedTable[T any] struct {
	mu     sync.Mutex
	values map[string]T
}

// get returns the value kept for key, or keeps and returns build's.
func (t *sharedTable[T]) get(key string, build func() T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.values[key]; ok {
		return v
	}
	if t.values == nil || len(t.values) >= maxSharedValues {
		t.values = map[string]T{}
	}
	v := build()
	t.values[key] = v
	return v
}

// sharedMaps and sharedOwners hold the maps and owner lists that cached objects share.
var (
	sharedMaps   sharedTable[map[string]string]
	sharedOwners sharedTable[[]metav1.OwnerReference]
)

// shareMap returns a map equal to kv that every cached object with an equal one holds, its keys and
// values shared too.
func shareMap(kv map[string]string) map[string]string {
	if kv == nil {
		return nil
	}
	keys := slices.Sorted(maps.Keys(kv))
	var key strings.Builder
	for _, k := range keys {
		writeField(&key, k)
		writeField(&key, kv[k])
	}
	return sharedMaps.get(key.String(), func() map[string]string {
		out := make(map[string]string, len(kv))
		for k, v := range kv {
			out[share(k)] = share(v)
		}
		return out
	})
}

// shareOwners returns an owner list equal to refs that every cached object with an equal one
// holds: the drop-in ConfigMaps of one ScratchVolume are all owned by it.
func shareOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if refs == nil {
		return nil
	}
	var key strings.Builder
	for _, o := range refs {
		for _, f := range []string{o.APIVersion, o.Kind, o.Name, string(o.UID), flag(o.Controller), flag(o.BlockOwnerDeletion)} {
			writeField(&key, f)
		}
	}
	return sharedOwners.get(key.String(), func() []metav1.OwnerReference {
		out := slices.Clip(slices.Clone(refs))
		for i := range out {
			o := &out[i]
			o.APIVersion, o.Kind, o.Name, o.UID = share(o.APIVersion), share(o.Kind), share(o.Name), share(o.UID)
		}
		return out
	})
}

// flag tells an unset, false and true optional flag apart in a key.
func flag(b *bool) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatBool(*b)
}

// writeField appends s to a key of several strings so that no other strings make the same key.
func writeField(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

// share returns the one copy of s the process holds (unique drops it when nothing holds it any
// more).
func share[S ~string](s S) S {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// locationsKey tells location lists apart: equal lists, equal keys.
func locationsKey(l []v1alpha1.TempLocation) string {
	var b strings.Builder
	for _, loc := range l {
		for _, f := range []string{string(loc.Data), string(loc.Medium), loc.Option, loc.Path} {
			writeField(&b, f)
		}
	}
	return b.String()
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
