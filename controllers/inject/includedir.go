package inject

// This file decides whether the drop-in file can be mounted into the include directory when a
// volume of the pod already holds that directory.

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// checkIncludeDirMount refuses an include directory held by a volume the drop-in cannot be
// mounted into. The drop-in is a single file mounted with subPath at dir/zz-dbtune-scratch.cnf;
// when dir lies in another volume mount, the container runtime mounts that volume first and
// creates the file's mount point in it:
//   - in a writable emptyDir (any medium, with or without subPath) that works, and the empty
//     mount point goes with the pod;
//   - in a configMap, secret, projected, downwardAPI or image volume, which kubelet always mounts
//     read-only, or in any volume mounted with readOnly, the mount point cannot be created and
//     the container fails to start;
//   - in any other volume (a claim, a host path, a CSI or network volume) it may work, but the
//     empty file would stay on that storage after the pod and the ScratchVolume are gone, where a
//     revert must leave nothing, so it is refused too.
//
// Only the deepest mount at or above dir counts: an emptyDir at /etc/mysql/conf.d inside a
// ConfigMap mounted at /etc/mysql is the directory the file goes into.
func checkIncludeDirMount(sts *appsv1.StatefulSet, c *corev1.Container, dir string) error {
	m := deepestMountOver(c, dir)
	if m == nil {
		return nil
	}
	kind, vol := volumeKind(sts, m.Name)
	advice := "add the drop-in to that volume yourself, set spec.mysql.configDir to another included directory, or set spec.mysql.injection: Args"
	switch {
	case m.ReadOnly:
		return problemf(v1alpha1.ReasonConfigDirUnusable,
			"container %s mounts volume %q read-only at %s, so the drop-in's mount point cannot be created in %s: %s",
			c.Name, m.Name, m.MountPath, dir, advice)
	case vol != nil && vol.EmptyDir != nil:
		return nil
	case readOnlyKinds[kind]:
		return problemf(v1alpha1.ReasonConfigDirUnusable,
			"container %s mounts volume %q at %s, a %s volume, which kubelet always mounts read-only, so the drop-in's mount point cannot be created in %s: %s",
			c.Name, m.Name, m.MountPath, kind, dir, advice)
	}
	what := fmt.Sprintf("a %s volume", kind)
	if kind == "" {
		what = "a volume the pod does not define"
	}
	return problemf(v1alpha1.ReasonConfigDirUnusable,
		"container %s mounts volume %q at %s, %s: the drop-in's mount point, an empty file, would be created on that storage and stay there after the pod and the ScratchVolume are gone (only an emptyDir is written into): %s",
		c.Name, m.Name, m.MountPath, what, advice)
}

// readOnlyKinds are the volume kinds kubelet mounts read-only whatever the mount says.
var readOnlyKinds = map[string]bool{"configMap": true, "secret": true, "projected": true, "downwardAPI": true, "image": true}

// deepestMountOver returns the container's mount at dir or closest above it, nil when none is.
func deepestMountOver(c *corev1.Container, dir string) *corev1.VolumeMount {
	var deepest *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		if paths.Within(dir, m.MountPath) && (deepest == nil || paths.Within(m.MountPath, deepest.MountPath)) {
			deepest = m
		}
	}
	return deepest
}

// volumeKind names the source of sts's volume name as the API spells its field ("emptyDir",
// "configMap", "persistentVolumeClaim", …, "volumeClaimTemplate" for a claim of sts's own), ""
// when there is no such volume.
func volumeKind(sts *appsv1.StatefulSet, name string) (string, *corev1.Volume) {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name == name {
			return "volumeClaimTemplate", nil
		}
	}
	pod := &sts.Spec.Template.Spec
	for i := range pod.Volumes {
		v := &pod.Volumes[i]
		if v.Name != name {
			continue
		}
		s := v.VolumeSource
		for _, k := range []struct {
			set  bool
			kind string
		}{
			{s.EmptyDir != nil, "emptyDir"}, {s.ConfigMap != nil, "configMap"}, {s.Secret != nil, "secret"},
			{s.Projected != nil, "projected"}, {s.DownwardAPI != nil, "downwardAPI"}, {s.Image != nil, "image"},
			{s.PersistentVolumeClaim != nil, "persistentVolumeClaim"}, {s.Ephemeral != nil, "ephemeral"},
			{s.HostPath != nil, "hostPath"}, {s.CSI != nil, "csi"}, {s.NFS != nil, "nfs"},
		} {
			if k.set {
				return k.kind, v
			}
		}
		return "other", v
	}
	return "", nil
}
