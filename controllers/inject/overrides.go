package inject

import (
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Args injection and Reserve accounting change fields that server-side apply cannot share: a
// container's args are one atomic list and its memory limit one scalar, both owned by whoever wrote
// the StatefulSet. The controller changes them with an ordinary patch instead, and records what it
// changed in a state annotation (one per ScratchVolume, itself an applied entry) so that it can later
// take back exactly its own flags and memory — and notice when someone else changed the values since.
// ExtraFlags injection records the extra-flags variable there too (the owner's value before, the
// value written), but sets the variable in the apply itself (Entries.Env): it is one item of env, a
// list keyed by name, so the injection is one write; the patch only gives the owner's value back on
// revert.

// override is the content of a state annotation: the API's InjectionState, which kubectl dbtune
// reads too.
type override = v1alpha1.InjectionState

// ContainerChange is the args, environment and memory a container must end up with.
type ContainerChange struct {
	Container string
	Args      []string
	Env       []corev1.EnvVar
	// Request and Limit are the memory request and limit; nil when the user set none.
	Request, Limit *resource.Quantity
	// PodRequest and PodLimit are the pod-level memory request and limit the pod must end up
	// with, the same in every change of a template; nil when the user set none.
	PodRequest, PodLimit *resource.Quantity
}

// readOverrides decodes the state annotations of a template, by ScratchVolume name.
func readOverrides(tmpl *corev1.PodTemplateSpec) map[string]override {
	out := map[string]override{}
	for k, v := range tmpl.Annotations {
		name, ok := strings.CutPrefix(k, v1alpha1.StateAnnotationPrefix)
		if !ok {
			continue
		}
		if o, ok := decodeOverride(v); ok {
			out[name] = o
		}
	}
	return out
}

// decodeOverride reads a state annotation's value; false when it is none.
func decodeOverride(raw string) (override, bool) {
	var o override
	if raw == "" || json.Unmarshal([]byte(raw), &o) != nil || o.Container == "" {
		return override{}, false
	}
	return o, true
}

// undoOverrides removes the recorded flags from the args and the recorded memory from request and
// limit, where those still hold the values recorded (a value someone changed since becomes theirs).
func undoOverrides(tmpl *corev1.PodTemplateSpec) {
	overrides := readOverrides(tmpl)
	for i := range tmpl.Spec.Containers {
		c := &tmpl.Spec.Containers[i]
		var mine []override
		for _, name := range sortedKeys(overrides) {
			if overrides[name].Container == c.Name {
				mine = append(mine, overrides[name])
			}
		}
		if len(mine) == 0 {
			continue
		}
		for j := len(mine) - 1; j >= 0; j-- {
			c.Args = removeFlags(c.Args, mine[j].Args)
			if mine[j].Env != "" {
				c.Env = undoEnv(c.Env, mine[j])
			}
		}
		undoMemory(c, mine)
	}
	undoPodMemory(&tmpl.Spec, overrides)
}

// undoPodMemory removes every recorded reserve from the pod-level memory request and limit, where
// those still hold the values recorded.
func undoPodMemory(pod *corev1.PodSpec, overrides map[string]override) {
	if pod.Resources == nil || len(overrides) == 0 {
		return
	}
	added := resource.Quantity{}
	var rec override
	for _, name := range sortedKeys(overrides) {
		o := overrides[name]
		if q, err := resource.ParseQuantity(o.Memory); err == nil {
			added.Add(q)
			rec = o
		}
	}
	if added.IsZero() {
		return
	}
	undo := func(list corev1.ResourceList, recorded string) {
		cur, ok := list[corev1.ResourceMemory]
		want, err := resource.ParseQuantity(recorded)
		if !ok || err != nil || cur.Cmp(want) != 0 {
			return
		}
		cur.Sub(added)
		list[corev1.ResourceMemory] = cur
	}
	undo(pod.Resources.Requests, rec.PodRequest)
	undo(pod.Resources.Limits, rec.PodLimit)
}

// removeFlags removes, for each flag from the last, its last occurrence: our flags were appended.
func removeFlags(args, flags []string) []string {
	out := append([]string(nil), args...)
	for i := len(flags) - 1; i >= 0; i-- {
		for j := len(out) - 1; j >= 0; j-- {
			if out[j] == flags[i] {
				out = append(out[:j], out[j+1:]...)
				break
			}
		}
	}
	if len(out) == 0 && args != nil && len(args) == len(flags) {
		return nil
	}
	return out
}

func undoMemory(c *corev1.Container, mine []override) {
	added := resource.Quantity{}
	for _, o := range mine {
		if q, err := resource.ParseQuantity(o.Memory); err == nil {
			added.Add(q)
		}
	}
	if added.IsZero() {
		return
	}
	undo := func(list corev1.ResourceList, recorded string) {
		cur, ok := list[corev1.ResourceMemory]
		rec, err := resource.ParseQuantity(recorded)
		if !ok || err != nil || cur.Cmp(rec) != 0 {
			return
		}
		cur.Sub(added)
		list[corev1.ResourceMemory] = cur
	}
	undo(c.Resources.Requests, mine[0].Request)
	undo(c.Resources.Limits, mine[0].Limit)
}

// Overrides computes, from the template as the user wrote it (see Strip), the args and memory each
// container must end up with, and the state annotations that record them. kept names ScratchVolumes
// that are blocked but stay injected: their recorded flags and memory, read from live, stay too.
func Overrides(user, live *corev1.PodTemplateSpec, plans []*Plan, kept []string) ([]ContainerChange, map[string]string) {
	byContainer := map[string][]contribution{}
	for _, p := range plans {
		if len(p.Args) > 0 || p.Reserve != nil || p.ExtraFlags != nil {
			byContainer[p.Container] = append(byContainer[p.Container], contribution{p.ScratchVolume, p.Args, p.ExtraFlags, p.Reserve})
		}
	}
	recorded := readOverrides(live)
	for _, name := range kept {
		if o, ok := recorded[name]; ok {
			byContainer[o.Container] = append(byContainer[o.Container], recordedContribution(o, name))
		}
	}
	var changes []ContainerChange
	states := map[string]string{}
	podRequest, podLimit := podMemory(&user.Spec, byContainer)
	for _, name := range sortedKeys(byContainer) {
		base := containerNamed(&user.Spec, name)
		if base == nil {
			continue
		}
		contribs := byContainer[name]
		sort.Slice(contribs, func(i, j int) bool { return contribs[i].sv < contribs[j].sv })
		ch := ContainerChange{Container: name, Args: append([]string(nil), base.Args...), Env: base.Env}
		added := resource.Quantity{}
		records := make([]override, len(contribs))
		for i, c := range contribs {
			ch.Args = append(ch.Args, c.args...)
			if c.memory != nil {
				added.Add(*c.memory)
			}
			if c.env != nil {
				records[i].Env, records[i].EnvFlags = c.env.Env, c.env.Flags
				ch.Env, records[i].EnvBefore, records[i].EnvAfter = mergeEnv(ch.Env, c.env.Env, c.env.Flags)
			}
		}
		ch.Request, ch.Limit = plus(base.Resources.Requests, added), plus(base.Resources.Limits, added)
		ch.PodRequest, ch.PodLimit = podRequest, podLimit
		for i, c := range contribs {
			o := records[i]
			o.Container, o.Args, o.Request, o.Limit = name, c.args, str(ch.Request), str(ch.Limit)
			o.PodRequest, o.PodLimit = str(podRequest), str(podLimit)
			if c.memory != nil {
				o.Memory = c.memory.String()
			}
			raw, _ := json.Marshal(o) // plain strings: cannot fail
			states[named(c.sv).StateAnnotation()] = string(raw)
		}
		changes = append(changes, ch)
	}
	return changes, states
}

// podMemory is the pod-level memory request and limit of the template its owner wrote (pod) with
// every contribution's memory added; nil where the pod sets none.
func podMemory(pod *corev1.PodSpec, byContainer map[string][]contribution) (request, limit *resource.Quantity) {
	if pod.Resources == nil {
		return nil, nil
	}
	added := resource.Quantity{}
	for _, contribs := range byContainer {
		for _, c := range contribs {
			if c.memory != nil {
				added.Add(*c.memory)
			}
		}
	}
	return plus(pod.Resources.Requests, added), plus(pod.Resources.Limits, added)
}

// contribution is what one ScratchVolume adds to one container.
type contribution struct {
	sv     string
	args   []string
	env    *EnvFlags
	memory *resource.Quantity
}

// recordedContribution is what a recorded override added, for a ScratchVolume that stays injected
// as it was.
func recordedContribution(o override, sv string) contribution {
	c := contribution{sv: sv, args: o.Args}
	if q, err := resource.ParseQuantity(o.Memory); err == nil {
		c.memory = &q
	}
	if o.Env != "" {
		c.env = &EnvFlags{Env: o.Env, Flags: o.EnvFlags}
	}
	return c
}

// Pending returns the changes whose container does not have those values yet.
func Pending(live *corev1.PodTemplateSpec, changes []ContainerChange, user *corev1.PodTemplateSpec) []ContainerChange {
	want := map[string]ContainerChange{}
	for _, ch := range changes {
		want[ch.Container] = ch
	}
	// A container we changed before but no plan touches now must go back to the user's values.
	for name := range readContainers(live) {
		if _, ok := want[name]; ok {
			continue
		}
		if u := containerNamed(&user.Spec, name); u != nil {
			want[name] = ContainerChange{Container: name, Args: u.Args, Env: u.Env,
				Request: quantityOf(u.Resources.Requests), Limit: quantityOf(u.Resources.Limits)}
			if user.Spec.Resources != nil {
				ch := want[name]
				ch.PodRequest, ch.PodLimit = quantityOf(user.Spec.Resources.Requests), quantityOf(user.Spec.Resources.Limits)
				want[name] = ch
			}
		}
	}
	var out []ContainerChange
	for _, name := range sortedKeys(want) {
		ch := want[name]
		c := containerNamed(&live.Spec, name)
		if c == nil {
			continue
		}
		if !equality.Semantic.DeepEqual(c.Args, ch.Args) || !equality.Semantic.DeepEqual(c.Env, ch.Env) ||
			!sameQuantity(quantityOf(c.Resources.Requests), ch.Request) ||
			!sameQuantity(quantityOf(c.Resources.Limits), ch.Limit) || !podMemoryIs(&live.Spec, ch) {
			out = append(out, ch)
		}
	}
	return out
}

// podMemoryIs reports whether pod's pod-level memory is what ch asks for.
func podMemoryIs(pod *corev1.PodSpec, ch ContainerChange) bool {
	var req, lim *resource.Quantity
	if pod.Resources != nil {
		req, lim = quantityOf(pod.Resources.Requests), quantityOf(pod.Resources.Limits)
	}
	return sameQuantity(req, ch.PodRequest) && sameQuantity(lim, ch.PodLimit)
}

// readContainers lists the containers named in the template's state annotations.
func readContainers(tmpl *corev1.PodTemplateSpec) map[string]bool {
	out := map[string]bool{}
	for _, o := range readOverrides(tmpl) {
		out[o.Container] = true
	}
	return out
}

func plus(list corev1.ResourceList, added resource.Quantity) *resource.Quantity {
	q := quantityOf(list)
	if q == nil {
		return nil
	}
	q.Add(added)
	return q
}

func quantityOf(list corev1.ResourceList) *resource.Quantity {
	q, ok := list[corev1.ResourceMemory]
	if !ok {
		return nil
	}
	return &q
}

func sameQuantity(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Cmp(*b) == 0
}

func str(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
