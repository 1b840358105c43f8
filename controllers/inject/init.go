package inject

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// initScript creates each directory that does not exist yet, world-writable with the sticky bit like
// /tmp: the image may create it as root while mysqld runs as another user. Existing directories are
// left as they are. Arguments follow the script, so paths are never parsed by the shell.
const initScript = `for d in "$@"; do [ -d "$d" ] || { mkdir -p "$d" && chmod 1777 "$d"; } || exit 1; done`

// initContainer creates dirs on the data volume before the server starts: mariadbd refuses to start
// without its tmpdir and, worse, starts without its replica load directory and fails on the first
// replicated LOAD DATA. It runs the database's own image (which has a shell) as the same user, with
// the resources res (Namespace.initResources).
func initContainer(sv *v1alpha1.ScratchVolume, db *corev1.Container, data *corev1.VolumeMount, dirs []string, res corev1.ResourceRequirements) *corev1.Container {
	if len(dirs) == 0 {
		return nil
	}
	return &corev1.Container{
		Name:    sv.InitContainerName(),
		Image:   db.Image,
		Command: []string{"sh", "-c", initScript, "dbtune-init"},
		Args:    append([]string{}, dirs...),
		VolumeMounts: []corev1.VolumeMount{{
			Name: data.Name, MountPath: data.MountPath, SubPath: data.SubPath, SubPathExpr: data.SubPathExpr,
		}},
		SecurityContext: db.SecurityContext.DeepCopy(),
		Resources:       res,
	}
}

// initContainerOf is sv's init container on sts's template, nil when there is none.
func initContainerOf(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) *corev1.Container {
	for i, c := range sts.Spec.Template.Spec.InitContainers {
		if c.Name == sv.InitContainerName() {
			return &sts.Spec.Template.Spec.InitContainers[i]
		}
	}
	return nil
}
