package fleetcache

// This file trims and shares what the manager's informer caches hold of each object, so that a
// fleet of thousands of StatefulSets fits in memory: the transforms CacheOptions installs.

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// stripManagedFields is controller-runtime's default transform, which a transform of its own
// replaces.
var stripManagedFields toolscache.TransformFunc = cache.TransformStripManagedFields()

// TrimStatefulSet keeps of a cached StatefulSet what the controller reads of every target on
// every reconcile: its metadata but managedFields and annotations (the labels select it, the
// generation and owner references key its remembered decision; the annotations, kubectl's
// last-applied copy of the manifest or a GitOps tool's and a package manager's, are no one's), its
// replicas and update strategy and its status but the conditions (how far a rollout got), and its
// pod template's annotations (which ScratchVolumes' entries it carries, with their hashes).
//
// The pod template's spec, the volumeClaimTemplates and the pod selector go: they are read only
// to plan a StatefulSet, which the controller does on the whole object read from the API server
// when no remembered decision covers the StatefulSet's generation, and never on this one. Kept,
// they were about two thirds of what the cache held per StatefulSet. Nothing is written back from
// the cached object: the controller writes with server-side apply and JSON patches made from the
// whole one.
func TrimStatefulSet(obj any) (any, error) {
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

// ShareConfigMapData holds each distinct file of the controller's ConfigMaps once in the cache:
// a ScratchVolume over a fleet of one kind of server puts the same drop-in file into the ConfigMap
// of every target, with the same labels and owner. The data stays equal to what the API server
// sent; only its copies go. The annotations (the target's name, for people) go too: the controller
// reads the file, the ScratchVolume label and the owner of a cached ConfigMap, and deletes it by
// name.
func ShareConfigMapData(obj any) (any, error) {
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

// ShareTargetStatuses holds once what the targets of a cached ScratchVolume's status have in
// common: a selector's status lists every StatefulSet it picks, and those of one kind of server
// report the same container, version, hash and temporary-data locations. Equal strings become one
// string and equal location lists one list; the target list itself is cut to its length (the
// decoder doubles it as it goes). What the status says does not change, only how many copies of it
// the cache holds: nothing changes a cached status in place, the controller replaces it whole.
func ShareTargetStatuses(obj any) (any, error) {
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

// TrimProfile keeps of a NodeIOProfile what the manager's controllers read: the reports on the
// pods' RAM volumes for the ScratchVolume controller, the read-ahead state and conditions in
// package readaheadstatus. The probe's figures of every node would otherwise sit in the manager's
// memory for nothing.
func TrimProfile(obj any) (any, error) {
	p, ok := obj.(*v1alpha1.NodeIOProfile)
	if !ok {
		return obj, nil
	}
	return &v1alpha1.NodeIOProfile{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion, Generation: p.Generation},
		Status: v1alpha1.NodeIOProfileStatus{
			Conditions: p.Status.Conditions, ReadAhead: p.Status.ReadAhead, ScratchVolumes: p.Status.ScratchVolumes,
		},
	}, nil
}
