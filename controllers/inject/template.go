package inject

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Inject returns tmpl as it looks once the plans are applied: the template the API server produces
// from the controller's server-side apply (keyed entries appended after the user's), plus the flags of
// Args injection and the memory of Reserve accounting. The real-server harness and the demo run this
// exact template; the envtest suite checks that the API server agrees with it.
func Inject(tmpl corev1.PodTemplateSpec, plans []*Plan) corev1.PodTemplateSpec {
	out := Strip(tmpl)
	changes, states := Overrides(&out, &tmpl, plans, nil)
	e := Desired(plans).WithAnnotations(states)
	if len(e.Annotations) > 0 && out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for k, v := range e.Annotations {
		out.Annotations[k] = v
	}
	out.Spec.Volumes = append(out.Spec.Volumes, e.Volumes...)
	out.Spec.InitContainers = append(out.Spec.InitContainers, e.InitContainers...)
	for i := range out.Spec.Containers {
		c := &out.Spec.Containers[i]
		c.VolumeMounts = append(c.VolumeMounts, e.Mounts[c.Name]...)
	}
	for _, ch := range changes {
		c := containerNamed(&out.Spec, ch.Container)
		c.Args, c.Env = ch.Args, ch.Env
		setMemory(c.Resources.Requests, ch.Request)
		setMemory(c.Resources.Limits, ch.Limit)
		if out.Spec.Resources != nil {
			setMemory(out.Spec.Resources.Requests, ch.PodRequest)
			setMemory(out.Spec.Resources.Limits, ch.PodLimit)
		}
	}
	return out
}

func setMemory(list corev1.ResourceList, q *resource.Quantity) {
	if list != nil && q != nil {
		list[corev1.ResourceMemory] = *q
	}
}

func containerNamed(pod *corev1.PodSpec, name string) *corev1.Container {
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	return nil
}
