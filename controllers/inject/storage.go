package inject

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// dataVolume describes where a container keeps its data directory.
type dataVolume struct {
	// Mount is the container's mount that holds the data directory; nil when the directory is on the
	// container's own filesystem.
	Mount *corev1.VolumeMount
	// Persistent is true when the volume outlives the pod (a volumeClaimTemplate or a PVC).
	Persistent bool
	// Memory is true when the volume is itself RAM-backed.
	Memory bool
	// Kind names the volume source for messages ("volumeClaimTemplate", "emptyDir", …).
	Kind string
}

// findDataVolume finds the mount holding dataDir: the deepest mount path that is dataDir or a parent.
func findDataVolume(sts *appsv1.StatefulSet, c *corev1.Container, dataDir string) dataVolume {
	var best *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		if !paths.Within(dataDir, m.MountPath) {
			continue
		}
		if best == nil || len(m.MountPath) > len(best.MountPath) {
			best = m
		}
	}
	if best == nil {
		return dataVolume{Kind: "container filesystem"}
	}
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name == best.Name {
			return dataVolume{Mount: best, Persistent: true, Kind: "volumeClaimTemplate"}
		}
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name != best.Name {
			continue
		}
		switch {
		case v.PersistentVolumeClaim != nil:
			return dataVolume{Mount: best, Persistent: true, Kind: "persistentVolumeClaim"}
		case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
			return dataVolume{Mount: best, Memory: true, Kind: "memory emptyDir"}
		case v.EmptyDir != nil:
			return dataVolume{Mount: best, Kind: "emptyDir"}
		case v.HostPath != nil:
			return dataVolume{Mount: best, Persistent: true, Kind: "hostPath"}
		case v.Ephemeral != nil:
			return dataVolume{Mount: best, Kind: "ephemeral volume"}
		default:
			return dataVolume{Mount: best, Kind: "volume"}
		}
	}
	return dataVolume{Mount: best, Kind: "volume"}
}

// note explains a data directory that is not on a persistent volume, or returns nil.
func (d dataVolume) note(container, dataDir string) *Note {
	switch {
	case d.Persistent:
		return nil
	case d.Mount == nil:
		return &Note{Reason: v1alpha1.ReasonNoPersistentVolume, Message: fmt.Sprintf(
			"the data directory %s of container %s is on no volume: the replica load directory is kept off the RAM volume on a "+
				"disk-backed emptyDir at %s, which lives as long as the pod (the data does not even survive a container restart); "+
				"mount a volumeClaimTemplate at %s",
			dataDir, container, v1alpha1.DiskFallbackMountPath, dataDir)}
	case d.Memory:
		return &Note{Reason: v1alpha1.ReasonNoPersistentVolume, Message: fmt.Sprintf(
			"the data directory %s of container %s is on the memory volume %q: the replica load directory is kept off RAM on a "+
				"disk-backed emptyDir at %s; mount a volumeClaimTemplate at %s to keep the data",
			dataDir, container, d.Mount.Name, v1alpha1.DiskFallbackMountPath, dataDir)}
	default:
		return &Note{Reason: v1alpha1.ReasonNoPersistentVolume, Message: fmt.Sprintf(
			"the data directory %s of container %s is on volume %q (%s), not on a volumeClaimTemplate: "+
				"the replica load directory is kept there, off the RAM volume, but does not outlive the pod",
			dataDir, container, d.Mount.Name, d.Kind)}
	}
}
