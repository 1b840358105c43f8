package inject

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
)

// selectContainer finds the container that gets the volume: spec.container when set; otherwise, for
// MySQLTmpdir, the one container running a MySQL-compatible image, and for Generic the only container.
func selectContainer(sv *v1alpha1.ScratchVolume, pod *corev1.PodSpec) (*corev1.Container, error) {
	if name := sv.Spec.Container; name != "" {
		for i := range pod.Containers {
			if pod.Containers[i].Name == name {
				return &pod.Containers[i], nil
			}
		}
		return nil, problemf(v1alpha1.ReasonContainerNotFound,
			"the pod template has no container %q (it has %s): fix spec.container",
			name, containerNames(pod.Containers))
	}
	if sv.Spec.Purpose == v1alpha1.PurposeGeneric {
		if len(pod.Containers) == 1 {
			return &pod.Containers[0], nil
		}
		return nil, problemf(v1alpha1.ReasonContainerAmbiguous,
			"the pod template has %d containers (%s): set spec.container to the one that gets the volume",
			len(pod.Containers), containerNames(pod.Containers))
	}
	var found []*corev1.Container
	for i := range pod.Containers {
		if mysql.IsDatabaseImage(pod.Containers[i].Image) {
			found = append(found, &pod.Containers[i])
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, problemf(v1alpha1.ReasonContainerNotFound,
			"no container runs a MySQL-compatible image (containers: %s): set spec.container, and spec.mysql.flavor and version for a custom image",
			containerImages(pod.Containers))
	default:
		dbs := make([]corev1.Container, 0, len(found))
		for _, c := range found {
			dbs = append(dbs, *c)
		}
		return nil, problemf(v1alpha1.ReasonContainerAmbiguous,
			"several containers run a MySQL-compatible image (%s): set spec.container", containerImages(dbs))
	}
}

func containerNames(cs []corev1.Container) string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

func containerImages(cs []corev1.Container) string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name+"="+c.Image)
	}
	return strings.Join(out, ", ")
}
