package inject

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// ApplyConfiguration is the server-side apply request that makes the controller's field manager own
// exactly e on the StatefulSet: keyed entries only (annotations by key, volumes and init containers by
// name, mounts by mount path, environment variables by name), never a whole list. With empty entries
// it releases everything the manager owned, which is how a ScratchVolume is reverted.
func (e Entries) ApplyConfiguration(name, namespace string) (*appsv1ac.StatefulSetApplyConfiguration, error) {
	sts := appsv1ac.StatefulSet(name, namespace)
	if e.Empty() {
		return sts, nil
	}
	pod := corev1ac.PodSpec()
	for _, v := range e.Volumes {
		ac := &corev1ac.VolumeApplyConfiguration{}
		if err := convert(v, ac); err != nil {
			return nil, err
		}
		pod.WithVolumes(ac)
	}
	for _, c := range e.InitContainers {
		ac := &corev1ac.ContainerApplyConfiguration{}
		if err := convert(c, ac); err != nil {
			return nil, err
		}
		pod.WithInitContainers(ac)
	}
	containers := make([]string, 0, len(e.Mounts)+len(e.Env))
	for c := range e.Mounts {
		containers = append(containers, c)
	}
	for c := range e.Env {
		containers = append(containers, c)
	}
	sort.Strings(containers)
	for _, c := range slices.Compact(containers) {
		ac := corev1ac.Container().WithName(c)
		for _, m := range e.Mounts[c] {
			ac.WithVolumeMounts(mountApplyConfiguration(m))
		}
		for _, v := range e.Env[c] {
			ac.WithEnv(corev1ac.EnvVar().WithName(v.Name).WithValue(v.Value))
		}
		pod.WithContainers(ac)
	}
	tmpl := corev1ac.PodTemplateSpec().WithSpec(pod)
	if len(e.Annotations) > 0 {
		tmpl.WithAnnotations(e.Annotations)
	}
	return sts.WithSpec(appsv1ac.StatefulSetSpec().WithTemplate(tmpl)), nil
}

func mountApplyConfiguration(m corev1.VolumeMount) *corev1ac.VolumeMountApplyConfiguration {
	ac := corev1ac.VolumeMount().WithName(m.Name).WithMountPath(m.MountPath)
	if m.SubPath != "" {
		ac.WithSubPath(m.SubPath)
	}
	if m.SubPathExpr != "" {
		ac.WithSubPathExpr(m.SubPathExpr)
	}
	if m.ReadOnly {
		ac.WithReadOnly(true)
	}
	return ac
}

// convert copies a reduced API object into its apply configuration. Both share one JSON shape, and
// the reduced objects carry only fields the controller sets, so nothing else is claimed.
func convert(in, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("failed to encode %T: %w", in, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("failed to decode %T: %w", out, err)
	}
	return nil
}
