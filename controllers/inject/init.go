package inject

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// initScript creates each directory that does not exist yet, world-writable with the sticky bit like
// /tmp: the image may create it as root while mysqld runs as another user. Existing directories are
// left as they are. Arguments follow the script, so paths are never parsed by the shell.
const initScript = `for d in "$@"; do [ -d "$d" ] || { mkdir -p "$d" && chmod 1777 "$d"; } || exit 1; done`

// initContainer creates dirs on the data volume before the server starts: mariadbd refuses to start
// without its tmpdir and, worse, starts without its replica load directory and fails on the first
// replicated LOAD DATA. It runs the database's own image (which has a shell) as the same user.
func initContainer(sv *v1alpha1.ScratchVolume, db *corev1.Container, data *corev1.VolumeMount, dirs []string) *corev1.Container {
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
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
	}
}
