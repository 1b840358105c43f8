package scratchusage

import (
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// emptyDirPlugin is the directory under a pod's volumes/ where the kubelet keeps emptyDir volumes.
const emptyDirPlugin = "kubernetes.io~empty-dir"

// Volume is one injected RAM scratch volume of one pod.
type Volume struct {
	Namespace string
	Pod       string
	PodUID    types.UID
	// ScratchVolume is the name of the ScratchVolume that injected the volume, in Namespace.
	ScratchVolume string
	// Name is the volume's name in the pod spec.
	Name string
}

// Dir is where the kubelet whose root directory is kubeletRoot mounts the volume.
func (v Volume) Dir(kubeletRoot string) string {
	return filepath.Join(kubeletRoot, "pods", string(v.PodUID), "volumes", emptyDirPlugin, v.Name)
}

// key identifies a volume across samples. The pod UID is part of it: a StatefulSet pod recreated
// under the same name is a new pod with a new tmpfs, whose peaks start again.
type key struct {
	uid  types.UID
	name string
}

func (v Volume) key() key { return key{v.PodUID, v.Name} }

// Discover returns the injected RAM volumes of the running pods of node. A pod's volume counts when
// the pod carries a ScratchVolume's injection annotation and has a memory emptyDir of that
// ScratchVolume's volume name: the annotation alone could outlive the volume on a pod edited by
// hand, and a volume of that name without the annotation is not ours.
func Discover(pods []corev1.Pod, node string) []Volume {
	var out []Volume
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != node || p.Status.Phase != corev1.PodRunning || p.UID == "" {
			continue
		}
		for _, sv := range injectedBy(p) {
			name := (&v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Name: sv}}).VolumeName()
			if hasMemoryEmptyDir(p, name) {
				out = append(out, Volume{Namespace: p.Namespace, Pod: p.Name, PodUID: p.UID, ScratchVolume: sv, Name: name})
			}
		}
	}
	return out
}

// injectedBy returns the names of the ScratchVolumes whose injection annotation p carries, sorted.
func injectedBy(p *corev1.Pod) []string {
	var names []string
	for k := range p.Annotations {
		if sv, ok := strings.CutPrefix(k, v1alpha1.InjectionAnnotationPrefix); ok && sv != "" {
			names = append(names, sv)
		}
	}
	slices.Sort(names)
	return names
}

func hasMemoryEmptyDir(p *corev1.Pod, name string) bool {
	for _, v := range p.Spec.Volumes {
		if v.Name == name {
			return v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory
		}
	}
	return false
}

// RestrictCache adds to opts a Pod entry that holds only node's pods, trimmed to what Discover
// reads, and a ScratchVolume entry trimmed to what the agent reads of them (spec.largePages).
// Without it the agent of every node would watch every pod of the cluster.
func RestrictCache(opts cache.Options, node string) cache.Options {
	byObject := make(map[client.Object]cache.ByObject, len(opts.ByObject)+1)
	for obj, by := range opts.ByObject {
		byObject[obj] = by
	}
	byObject[&corev1.Pod{}] = cache.ByObject{
		Field:     fields.OneTermEqualSelector("spec.nodeName", node),
		Transform: trimPod,
	}
	byObject[&v1alpha1.ScratchVolume{}] = cache.ByObject{Transform: trimScratchVolume}
	opts.ByObject = byObject
	return opts
}

// trimPod keeps of a pod what Discover reads: a node running a hundred pods would otherwise hold
// their whole specs and statuses in the agent's memory.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Annotations: map[string]string{},
		},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
	for k, v := range p.Annotations {
		if strings.HasPrefix(k, v1alpha1.InjectionAnnotationPrefix) {
			out.Annotations[k] = v
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory && strings.HasPrefix(v.Name, v1alpha1.ObjectPrefix) {
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{EmptyDir: v.EmptyDir}})
		}
	}
	return out, nil
}

// trimScratchVolume keeps of a ScratchVolume its name and spec.largePages.
func trimScratchVolume(obj any) (any, error) {
	sv, ok := obj.(*v1alpha1.ScratchVolume)
	if !ok {
		return obj, nil
	}
	return &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: sv.Namespace, Name: sv.Name, UID: sv.UID, ResourceVersion: sv.ResourceVersion},
		Spec:       v1alpha1.ScratchVolumeSpec{LargePages: sv.Spec.LargePages},
	}, nil
}
