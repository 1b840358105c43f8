package inject

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Entries are the parts of a pod template that belong to ScratchVolumes, reduced to the fields the
// controller sets (the API server's defaults are left out), so that what is desired and what is
// observed compare equal exactly when no write is needed.
type Entries struct {
	// Annotations are the pod-template annotations under the project's prefixes.
	Annotations map[string]string
	// Volumes are sorted by name.
	Volumes []corev1.Volume
	// InitContainers are sorted by name.
	InitContainers []corev1.Container
	// Mounts maps a container name to its mounts of our volumes, sorted by mount path.
	Mounts map[string][]corev1.VolumeMount
	// Env maps a container name to the variables the controller sets in it, sorted by name, with
	// the values they must hold: the image's extra-flags variable of ExtraFlags injection, its
	// owner's value followed by the flags, as the ScratchVolume's state annotation records it. Nil
	// when there are none. env is a list keyed by name, so an apply of one variable leaves the
	// others alone; when the owner sets it, the apply changes the owner's value (see
	// decide.TargetPlan.Force).
	Env map[string][]corev1.EnvVar
}

// Desired is what the controller's field manager should own on a StatefulSet: the union of the plans
// of every ScratchVolume that currently injects it. Applying it also removes whatever the manager
// owned before and no plan asks for any more.
func Desired(plans []*Plan) Entries {
	e := Entries{Annotations: map[string]string{}, Mounts: map[string][]corev1.VolumeMount{}}
	for _, p := range plans {
		sv := named(p.ScratchVolume)
		e.Annotations[sv.InjectionAnnotation()] = p.Hash
		e.Volumes = append(e.Volumes, reduceVolume(p.Volume))
		e.Mounts[p.Container] = append(e.Mounts[p.Container], reduceMount(p.Mount))
		if p.ConfigVolume != nil {
			e.Volumes = append(e.Volumes, reduceVolume(*p.ConfigVolume))
			e.Mounts[p.Container] = append(e.Mounts[p.Container], reduceMount(*p.ConfigMount))
		}
		if p.DiskVolume != nil {
			e.Volumes = append(e.Volumes, reduceVolume(*p.DiskVolume))
			e.Mounts[p.Container] = append(e.Mounts[p.Container], reduceMount(*p.DiskMount))
		}
		if p.Init != nil {
			e.InitContainers = append(e.InitContainers, reduceContainer(*p.Init))
		}
	}
	return e.sorted()
}

// Observed reads back the entries present on a live pod template. An entry counts as ours only when
// the template also carries the injection annotation of the ScratchVolume its name derives from, so a
// user's volume that happens to share the naming scheme is never mistaken for ours.
func Observed(tmpl *corev1.PodTemplateSpec) Entries {
	e := Entries{Annotations: map[string]string{}, Mounts: map[string][]corev1.VolumeMount{}}
	own := ownedNames(tmpl)
	for k, v := range tmpl.Annotations {
		if isOurAnnotation(k) {
			e.Annotations[k] = v
		}
	}
	for _, v := range tmpl.Spec.Volumes {
		if own.volumes[v.Name] {
			e.Volumes = append(e.Volumes, reduceVolume(v))
		}
	}
	for _, c := range tmpl.Spec.InitContainers {
		if own.inits[c.Name] {
			e.InitContainers = append(e.InitContainers, reduceContainer(c))
		}
	}
	for _, c := range tmpl.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if own.volumes[m.Name] {
				e.Mounts[c.Name] = append(e.Mounts[c.Name], reduceMount(m))
			}
		}
	}
	for _, o := range readOverrides(tmpl) {
		if c := containerNamed(&tmpl.Spec, o.Container); c != nil && o.Env != "" {
			if v := findEnv(c.Env, o.Env); v != nil && v.ValueFrom == nil {
				e = e.withEnv(o.Container, corev1.EnvVar{Name: v.Name, Value: v.Value})
			}
		}
	}
	return e.sorted()
}

// Equal reports whether two sets of entries are the same, quantities compared by value.
func (e Entries) Equal(o Entries) bool { return equality.Semantic.DeepEqual(e, o) }

// Empty reports whether there is nothing of ours.
func (e Entries) Empty() bool {
	return len(e.Annotations) == 0 && len(e.Volumes) == 0 && len(e.InitContainers) == 0 && len(e.Mounts) == 0 && len(e.Env) == 0
}

// ScratchVolumes lists the ScratchVolumes whose injection annotation is on the template, sorted.
func ScratchVolumes(tmpl *corev1.PodTemplateSpec) []string {
	var names []string
	for k := range tmpl.Annotations {
		if name, ok := strings.CutPrefix(k, v1alpha1.InjectionAnnotationPrefix); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Strip returns the template without any of our entries: the template as its owner wrote it.
func Strip(tmpl corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := *tmpl.DeepCopy()
	undoOverrides(&out)
	own := ownedNames(&out)
	for k := range out.Annotations {
		if isOurAnnotation(k) {
			delete(out.Annotations, k)
		}
	}
	out.Spec.Volumes = filter(out.Spec.Volumes, func(v corev1.Volume) bool { return !own.volumes[v.Name] })
	out.Spec.InitContainers = filter(out.Spec.InitContainers, func(c corev1.Container) bool { return !own.inits[c.Name] })
	for i := range out.Spec.Containers {
		c := &out.Spec.Containers[i]
		c.VolumeMounts = filter(c.VolumeMounts, func(m corev1.VolumeMount) bool { return !own.volumes[m.Name] })
	}
	return out
}

type owned struct{ volumes, inits map[string]bool }

func ownedNames(tmpl *corev1.PodTemplateSpec) owned {
	o := owned{volumes: map[string]bool{}, inits: map[string]bool{}}
	for _, name := range ScratchVolumes(tmpl) {
		sv := named(name)
		o.volumes[sv.VolumeName()] = true
		o.volumes[sv.ConfigVolumeName()] = true
		o.volumes[sv.DiskVolumeName()] = true
		o.inits[sv.InitContainerName()] = true
	}
	return o
}

func isOurAnnotation(key string) bool {
	return strings.HasPrefix(key, v1alpha1.InjectionAnnotationPrefix) ||
		strings.HasPrefix(key, v1alpha1.StateAnnotationPrefix)
}

func named(name string) *v1alpha1.ScratchVolume {
	return &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func filter[T any](in []T, keep func(T) bool) []T {
	if in == nil {
		return nil
	}
	out := make([]T, 0, len(in))
	for _, x := range in {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

func (e Entries) sorted() Entries {
	sort.Slice(e.Volumes, func(i, j int) bool { return e.Volumes[i].Name < e.Volumes[j].Name })
	sort.Slice(e.InitContainers, func(i, j int) bool { return e.InitContainers[i].Name < e.InitContainers[j].Name })
	for _, ms := range e.Mounts {
		sort.Slice(ms, func(i, j int) bool { return ms[i].MountPath < ms[j].MountPath })
	}
	for _, vs := range e.Env {
		sort.Slice(vs, func(i, j int) bool { return vs[i].Name < vs[j].Name })
	}
	return e
}

// withEnv sets v in container c, in place of a variable of the same name.
func (e Entries) withEnv(c string, v corev1.EnvVar) Entries {
	if e.Env == nil {
		e.Env = map[string][]corev1.EnvVar{}
	}
	vs := slices.DeleteFunc(slices.Clone(e.Env[c]), func(x corev1.EnvVar) bool { return x.Name == v.Name })
	e.Env[c] = append(vs, v)
	return e
}

// reduceVolume keeps the fields the controller sets on its volumes.
func reduceVolume(v corev1.Volume) corev1.Volume {
	out := corev1.Volume{Name: v.Name}
	if ed := v.EmptyDir; ed != nil {
		out.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: ed.Medium, SizeLimit: ed.SizeLimit}
	}
	if cm := v.ConfigMap; cm != nil {
		out.ConfigMap = &corev1.ConfigMapVolumeSource{
			LocalObjectReference: cm.LocalObjectReference, Items: cm.Items, DefaultMode: cm.DefaultMode, Optional: cm.Optional,
		}
	}
	return out
}

func reduceMount(m corev1.VolumeMount) corev1.VolumeMount {
	return corev1.VolumeMount{
		Name: m.Name, MountPath: m.MountPath, SubPath: m.SubPath, SubPathExpr: m.SubPathExpr, ReadOnly: m.ReadOnly,
	}
}

func reduceContainer(c corev1.Container) corev1.Container {
	out := corev1.Container{
		Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args,
		SecurityContext: c.SecurityContext, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests, Limits: c.Resources.Limits},
	}
	for _, m := range c.VolumeMounts {
		out.VolumeMounts = append(out.VolumeMounts, reduceMount(m))
	}
	return out
}

// ObservedFor is the part of Observed that belongs to one ScratchVolume.
func ObservedFor(tmpl *corev1.PodTemplateSpec, scratchVolume string) Entries {
	return Observed(tmpl).For(scratchVolume)
}

// For is the part of e that belongs to one ScratchVolume.
func (e Entries) For(scratchVolume string) Entries {
	sv := named(scratchVolume)
	out := Entries{Annotations: map[string]string{}, Mounts: map[string][]corev1.VolumeMount{}}
	for _, k := range []string{sv.InjectionAnnotation(), sv.StateAnnotation()} {
		if v, ok := e.Annotations[k]; ok {
			out.Annotations[k] = v
		}
	}
	mine := map[string]bool{sv.VolumeName(): true, sv.ConfigVolumeName(): true, sv.DiskVolumeName(): true}
	out.Volumes = filter(e.Volumes, func(v corev1.Volume) bool { return mine[v.Name] })
	out.InitContainers = filter(e.InitContainers, func(c corev1.Container) bool { return c.Name == sv.InitContainerName() })
	for c, ms := range e.Mounts {
		if kept := filter(ms, func(m corev1.VolumeMount) bool { return mine[m.Name] }); len(kept) > 0 {
			out.Mounts[c] = kept
		}
	}
	if o, ok := decodeOverride(e.Annotations[sv.StateAnnotation()]); ok && o.Env != "" {
		for _, v := range e.Env[o.Container] {
			if v.Name == o.Env {
				out = out.withEnv(o.Container, v)
			}
		}
	}
	return out
}

// WithAnnotations adds annotations (the state annotations of Overrides) to e, and the variables
// those record: each extra-flags variable with the value written.
func (e Entries) WithAnnotations(a map[string]string) Entries {
	for k, v := range a {
		e.Annotations[k] = v
		if !strings.HasPrefix(k, v1alpha1.StateAnnotationPrefix) {
			continue
		}
		if o, ok := decodeOverride(v); ok && o.Env != "" {
			e = e.withEnv(o.Container, corev1.EnvVar{Name: o.Env, Value: o.EnvAfter})
		}
	}
	return e.sorted()
}

// Merge adds o's entries to e.
func (e Entries) Merge(o Entries) Entries {
	for k, v := range o.Annotations {
		e.Annotations[k] = v
	}
	e.Volumes = append(e.Volumes, o.Volumes...)
	e.InitContainers = append(e.InitContainers, o.InitContainers...)
	for c, ms := range o.Mounts {
		e.Mounts[c] = append(e.Mounts[c], ms...)
	}
	for c, vs := range o.Env {
		for _, v := range vs {
			e = e.withEnv(c, v)
		}
	}
	return e.sorted()
}
