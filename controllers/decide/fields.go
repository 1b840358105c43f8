package decide

// This file maps the controller's entries to the StatefulSet fields they cover, and reads from
// managedFields which other field managers own them: who set what a StatefulSet holds in place of
// an entry (for a write war's message), and whether an apply of the entries may force.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// contested is one of the controller's entries that a StatefulSet lacks, or holds with other values.
type contested struct {
	// what names the entry for people: "the volume dbtune-scratch-tmp".
	what string
	// path is the StatefulSet's field the entry is: a keyed item of a list or a map, or, for a
	// variable the StatefulSet sets with another value, that variable's value.
	path fieldpath.Path
	// present is true when the StatefulSet holds the entry, with other values: whoever owns a
	// field of it set them. An entry that is gone is owned by no one.
	present bool
	// variable is true for a variable the controller sets (the extra-flags variable of ExtraFlags
	// injection), the one kind of entry an owner of the StatefulSet may set too.
	variable bool
}

var (
	templateSpec = []any{"spec", "template", "spec"}
	annotations  = []any{"spec", "template", "metadata", "annotations"}
)

func fieldPath(prefix []any, parts ...any) fieldpath.Path {
	return fieldpath.MakePathOrDie(append(slices.Clone(prefix), parts...)...)
}

func inContainer(c string, parts ...any) fieldpath.Path {
	return fieldPath(templateSpec, append([]any{"containers", fieldpath.KeyByFields("name", c)}, parts...)...)
}

// contestedEntries lists the entries of want that have, the entries found on the pod template
// tmpl, lacks or holds with other values: volumes first, which say most, then mounts, variables,
// init containers and annotations, each sorted by what names them. A variable is looked up in tmpl
// itself: its owner may set it, where have holds only the variables a state annotation records.
func contestedEntries(want, have inject.Entries, tmpl *corev1.PodTemplateSpec) []contested {
	var volumes, mounts, vars, inits, annos []contested
	for _, v := range want.Volumes {
		if !containsEqual(have.Volumes, v) {
			volumes = append(volumes, contested{what: "the volume " + v.Name,
				path:    fieldPath(templateSpec, "volumes", fieldpath.KeyByFields("name", v.Name)),
				present: slices.ContainsFunc(have.Volumes, func(h corev1.Volume) bool { return h.Name == v.Name })})
		}
	}
	for c, ms := range want.Mounts {
		for _, m := range ms {
			if !containsEqual(have.Mounts[c], m) {
				mounts = append(mounts, contested{what: fmt.Sprintf("the mount %s in container %s", m.MountPath, c),
					path:    inContainer(c, "volumeMounts", fieldpath.KeyByFields("mountPath", m.MountPath)),
					present: slices.ContainsFunc(have.Mounts[c], func(h corev1.VolumeMount) bool { return h.MountPath == m.MountPath })})
			}
		}
	}
	for c, vs := range want.Env {
		var live []corev1.EnvVar
		if i := slices.IndexFunc(tmpl.Spec.Containers, func(x corev1.Container) bool { return x.Name == c }); i >= 0 {
			live = tmpl.Spec.Containers[i].Env
		}
		for _, v := range vs {
			vars = append(vars, contestedVariable(c, v, live)...)
		}
	}
	for _, ic := range want.InitContainers {
		if !containsEqual(have.InitContainers, ic) {
			inits = append(inits, contested{what: "the init container " + ic.Name,
				path:    fieldPath(templateSpec, "initContainers", fieldpath.KeyByFields("name", ic.Name)),
				present: slices.ContainsFunc(have.InitContainers, func(h corev1.Container) bool { return h.Name == ic.Name })})
		}
	}
	for k, v := range want.Annotations {
		if have.Annotations[k] != v {
			_, present := have.Annotations[k]
			annos = append(annos, contested{what: "the pod-template annotation " + k, path: fieldPath(annotations, k), present: present})
		}
	}
	var out []contested
	for _, group := range [][]contested{volumes, mounts, vars, inits, annos} {
		sort.Slice(group, func(i, j int) bool { return group[i].what < group[j].what })
		out = append(out, group...)
	}
	return out
}

// contestedVariable is v when the container's variables, have, do not hold it with its value.
func contestedVariable(c string, v corev1.EnvVar, have []corev1.EnvVar) []contested {
	i := slices.IndexFunc(have, func(h corev1.EnvVar) bool { return h.Name == v.Name })
	switch {
	case i < 0:
		return []contested{{what: fmt.Sprintf("the variable %s in container %s", v.Name, c),
			path: inContainer(c, "env", fieldpath.KeyByFields("name", v.Name)), variable: true}}
	case equality.Semantic.DeepEqual(have[i], v):
		return nil
	}
	return []contested{{what: fmt.Sprintf("the value of %s in container %s", v.Name, c),
		path: inContainer(c, "env", fieldpath.KeyByFields("name", v.Name), "value"), present: true, variable: true}}
}

// contestedSettings lists the args and memory of a container that the pod template tmpl holds
// with other values than ch, the change pending: settings of Args injection and Reserve
// accounting that another writer changed. Each is a field of its own, which its writer owns.
func contestedSettings(tmpl *corev1.PodTemplateSpec, ch inject.ContainerChange) []contested {
	i := slices.IndexFunc(tmpl.Spec.Containers, func(c corev1.Container) bool { return c.Name == ch.Container })
	if i < 0 {
		return nil
	}
	live, c := &tmpl.Spec.Containers[i], ch.Container
	var out []contested
	if !equality.Semantic.DeepEqual(live.Args, ch.Args) {
		out = append(out, contested{what: "the args of container " + c, path: inContainer(c, "args"), present: len(live.Args) > 0})
	}
	if !equality.Semantic.DeepEqual(live.Env, ch.Env) {
		out = append(out, contested{what: "the environment of container " + c, path: inContainer(c, "env"), present: len(live.Env) > 0})
	}
	for _, m := range []struct {
		kind string
		list corev1.ResourceList
		want *resource.Quantity
	}{{"requests", live.Resources.Requests, ch.Request}, {"limits", live.Resources.Limits, ch.Limit}} {
		q, ok := m.list[corev1.ResourceMemory]
		if (ok && m.want != nil && q.Cmp(*m.want) == 0) || (!ok && m.want == nil) {
			continue
		}
		out = append(out, contested{what: fmt.Sprintf("the memory %s of container %s", strings.TrimSuffix(m.kind, "s"), c),
			path: inContainer(c, "resources", m.kind, string(corev1.ResourceMemory)), present: ok})
	}
	out = append(out, contestedPodMemory(&tmpl.Spec, ch)...)
	if len(out) == 0 {
		out = append(out, contested{what: "the settings the controller made in container " + c})
	}
	return out
}

// contestedPodMemory lists the pod-level memory request and limit that pod holds with other
// values than ch, which Reserve raised with the container's.
func contestedPodMemory(pod *corev1.PodSpec, ch inject.ContainerChange) []contested {
	var out []contested
	for _, m := range []struct {
		kind string
		want *resource.Quantity
	}{{"requests", ch.PodRequest}, {"limits", ch.PodLimit}} {
		var q resource.Quantity
		ok := false
		if pod.Resources != nil {
			list := pod.Resources.Requests
			if m.kind == "limits" {
				list = pod.Resources.Limits
			}
			q, ok = list[corev1.ResourceMemory]
		}
		if (ok && m.want != nil && q.Cmp(*m.want) == 0) || (!ok && m.want == nil) {
			continue
		}
		out = append(out, contested{what: "the pod's memory " + strings.TrimSuffix(m.kind, "s"),
			path: fieldPath(templateSpec, "resources", m.kind, string(corev1.ResourceMemory)), present: ok})
	}
	return out
}

// ownedFields is one field manager's entry of managedFields, read.
type ownedFields struct {
	entry metav1.ManagedFieldsEntry
	set   *fieldpath.Set
}

// othersFields reads the managedFields entries of sts that belong to other field managers than
// the controller's, on the object itself (not the status): those whose fields an apply of the
// entries would conflict with. An entry that cannot be read is left out.
func othersFields(sts *appsv1.StatefulSet) []ownedFields {
	var out []ownedFields
	for _, mf := range sts.ManagedFields {
		if ownManager(mf.Manager) || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			continue
		}
		out = append(out, ownedFields{mf, set})
	}
	return out
}

// ownManager reports whether a field manager is one of the controller's, applying or patching.
func ownManager(name string) bool {
	return name == v1alpha1.FieldManager || name == v1alpha1.SizingFieldManager
}

// ownsAt reports whether s holds p or a field under it.
func ownsAt(s *fieldpath.Set, p fieldpath.Path) bool {
	if len(p) == 0 {
		return false
	}
	for _, pe := range p[:len(p)-1] {
		child, ok := s.Children.Get(pe)
		if !ok {
			return false
		}
		s = child
	}
	last := p[len(p)-1]
	if s.Members.Has(last) {
		return true
	}
	child, ok := s.Children.Get(last)
	return ok && !child.Empty()
}

// owners lists which of cs each other field manager owns: of the entries sts holds with other
// values, those whose fields that manager set, so that it set what the StatefulSet holds.
func owners(sts *appsv1.StatefulSet, cs []contested) []v1alpha1.WriteCandidate {
	var out []v1alpha1.WriteCandidate
	for _, f := range othersFields(sts) {
		var owns []string
		for _, c := range cs {
			if c.present && ownsAt(f.set, c.path) {
				owns = append(owns, c.what)
			}
		}
		if len(owns) == 0 {
			continue
		}
		wc := v1alpha1.WriteCandidate{FieldManager: f.entry.Manager, Operation: f.entry.Operation, Owns: owns}
		if f.entry.Time != nil {
			wc.LastUpdate = *f.entry.Time
		}
		out = append(out, wc)
	}
	return out
}

// force reports whether an apply of want over have must force ownership: it sets a variable that
// the StatefulSet holds with another value, whose owner (the StatefulSet's owner, who sets the
// extra-flags variable, or the controller's own patch of an older release) the API server would
// otherwise report as a conflict. It never forces when another manager owns a field of any other
// entry the apply changes: that conflict is reported, and nothing of that manager's is taken. So a
// forced apply takes from others nothing but the value of that variable, the owner's value followed by
// the ScratchVolume's flags, which the ScratchVolume's state annotation records to give it back.
func force(sts *appsv1.StatefulSet, want, have inject.Entries) bool {
	cs := contestedEntries(want, have, &sts.Spec.Template)
	if !slices.ContainsFunc(cs, func(c contested) bool { return c.variable && c.present }) {
		return false
	}
	for _, f := range othersFields(sts) {
		for _, c := range cs {
			if !c.variable && c.present && ownsAt(f.set, c.path) {
				return false
			}
		}
	}
	return true
}
