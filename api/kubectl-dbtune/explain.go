package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// explanation is what `explain -o json|yaml` prints.
type explanation struct {
	Namespace   string `json:"namespace"`
	StatefulSet string `json:"statefulSet"`
	// Owned are the pod-template entries the operator's field manager owns on the StatefulSet.
	Owned          []string      `json:"owned"`
	ScratchVolumes []svOnTarget  `json:"scratchVolumes"`
	Unselected     []string      `json:"otherScratchVolumes,omitempty"`
	Template       templateFacts `json:"template"`
}

// templateFacts is what of the StatefulSet decides how a change reaches its pods.
type templateFacts struct {
	Replicas       int32  `json:"replicas"`
	UpdateStrategy string `json:"updateStrategy"`
}

// svOnTarget is one ScratchVolume that selects the StatefulSet, or injected it and no longer does.
type svOnTarget struct {
	Name string `json:"name"`
	// Selects says how: "by name", "by selector app=mariadb"; empty when it no longer selects the
	// StatefulSet but its entries are still there.
	Selects string `json:"selects,omitempty"`
	// Carried is the configuration hash the pod template carries; empty when it carries none.
	Carried string `json:"carried,omitempty"`
	// Added are the entries of the operator's that belong to this ScratchVolume.
	Added []string `json:"added,omitempty"`
	// State is its state annotation: flags and memory changed in fields apply cannot share.
	State *v1alpha1.InjectionState `json:"state,omitempty"`
	// Reported is the status the controller wrote for this target; nil when it wrote none.
	Reported *v1alpha1.ScratchTargetStatus `json:"reported,omitempty"`
	// Why says why the volume is not (or not fully) there, and what would change.
	Why []string `json:"why,omitempty"`
}

func (a *app) explainCommand() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "explain statefulset/NAME",
		Short: "Which ScratchVolumes select a StatefulSet, what each added to it, and why anything is missing",
		Long: `Explains what the operator did to one StatefulSet: the ScratchVolumes that select it (by name or by
label selector), the pod-template entries each one owns there (from the StatefulSet's managedFields
and the state annotation that records flags and memory), where each kind of temporary data goes,
and, for what is not there, what it would add and why it does not: a blocked injection, a change
that waits for approval, pods the API server refused, another writer in the way.`,
		Example: `  kubectl dbtune explain statefulset/mariadb
  kubectl dbtune explain sts/mysql -n shop -o yaml`,
		Args:              exactlyOne("the StatefulSet: kubectl dbtune explain statefulset/NAME"),
		ValidArgsFunction: a.completeStatefulSets,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := statefulSetName(args[0])
			if err != nil {
				return err
			}
			ctx, cancel := a.context(cmd)
			defer cancel()
			if err := a.requireAPI("explain", need{"ScratchVolume", "status.targets.message", "why a target is not injected"}); err != nil {
				return err
			}
			ex, err := a.explain(ctx, name)
			if err != nil {
				return err
			}
			if out.structured() {
				return out.print(a.streams.Out, ex)
			}
			writeExplanation(a.streams.Out, ex)
			return nil
		},
	}
	out.add(cmd)
	return cmd
}

// statefulSetName reads statefulset/NAME (or sts/, statefulsets/, statefulset.apps/, or a bare name).
func statefulSetName(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	switch strings.ToLower(kind) {
	case "statefulset", "statefulsets", "sts", "statefulset.apps", "statefulsets.apps":
		if name != "" {
			return name, nil
		}
	default:
		return "", fmt.Errorf("explain takes a StatefulSet (statefulset/NAME), not %q: a ScratchVolume injects StatefulSets only", kind)
	}
	return "", fmt.Errorf("%q names no StatefulSet: write statefulset/NAME", arg)
}

func (a *app) explain(ctx context.Context, name string) (*explanation, error) {
	c, ns, err := a.clientIn()
	if err != nil {
		return nil, err
	}
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sts); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("there is no StatefulSet %q in namespace %s (kubectl get statefulsets -n %s)", name, ns, ns)
		}
		what := readStatefulSets
		what.namespace = ns
		return nil, userError(err, what)
	}
	list := &v1alpha1.ScratchVolumeList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		what := readScratchVolumes
		what.namespace = ns
		return nil, userError(err, what)
	}
	return explainStatefulSet(sts, list.Items), nil
}

// explainStatefulSet is the pure part of explain: what sts and the namespace's ScratchVolumes say.
func explainStatefulSet(sts *appsv1.StatefulSet, svs []v1alpha1.ScratchVolume) *explanation {
	ex := &explanation{Namespace: sts.Namespace, StatefulSet: sts.Name, Owned: ownedEntries(sts), ScratchVolumes: []svOnTarget{}}
	ex.Template = templateFacts{Replicas: 1, UpdateStrategy: string(sts.Spec.UpdateStrategy.Type)}
	if sts.Spec.Replicas != nil {
		ex.Template.Replicas = *sts.Spec.Replicas
	}
	if ex.Template.UpdateStrategy == "" {
		ex.Template.UpdateStrategy = string(appsv1.RollingUpdateStatefulSetStrategyType)
	}
	mounts := mountVolumes(sts)
	sort.Slice(svs, func(i, j int) bool { return svs[i].Name < svs[j].Name })
	for i := range svs {
		sv := &svs[i]
		selects := selection(sv, sts)
		carried, has := sts.Spec.Template.Annotations[sv.InjectionAnnotation()]
		if selects == "" && !has {
			ex.Unselected = append(ex.Unselected, sv.Name+" ("+describeTarget(sv)+")")
			continue
		}
		on := svOnTarget{Name: sv.Name, Selects: selects, Carried: carried, Added: entriesOf(sv, ex.Owned, mounts)}
		if raw, ok := sts.Spec.Template.Annotations[sv.StateAnnotation()]; ok {
			st := &v1alpha1.InjectionState{}
			if json.Unmarshal([]byte(raw), st) == nil && st.Container != "" {
				on.State = st
			}
		}
		for j := range sv.Status.Targets {
			if sv.Status.Targets[j].Name == sts.Name {
				on.Reported = &sv.Status.Targets[j]
			}
		}
		on.Why = reasons(sv, sts, &on)
		ex.ScratchVolumes = append(ex.ScratchVolumes, on)
	}
	return ex
}

// selection says how sv selects sts; empty when it does not.
func selection(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) string {
	if sv.DeletionTimestamp != nil {
		return ""
	}
	t := sv.Spec.Target
	if t.Name != "" {
		if t.Name == sts.Name {
			return "by name"
		}
		return ""
	}
	sel, err := t.Selector.AsSelector()
	if err != nil || !sel.Matches(labels.Set(sts.Labels)) {
		return ""
	}
	return "by selector " + sel.String()
}

func describeTarget(sv *v1alpha1.ScratchVolume) string {
	if sv.Spec.Target.Name != "" {
		return "selects StatefulSet " + sv.Spec.Target.Name
	}
	sel, err := sv.Spec.Target.Selector.AsSelector()
	if err != nil {
		return "its selector cannot be read: " + err.Error()
	}
	return "selects " + sel.String()
}

// reasons says what is missing for sv on sts, and why, from what the controller reported.
func reasons(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, on *svOnTarget) []string {
	var why []string
	t := on.Reported
	switch {
	case sv.DeletionTimestamp != nil:
		why = append(why, "the ScratchVolume is being deleted: the controller takes its entries out of the StatefulSet, paced like a rollout")
	case on.Selects == "":
		why = append(why, "the ScratchVolume no longer selects this StatefulSet: the controller takes its entries out")
	case t == nil && sv.Status.ObservedGeneration < sv.Generation:
		why = append(why, fmt.Sprintf("the controller has not reported on generation %d of the ScratchVolume yet (its status is of generation %d)", sv.Generation, sv.Status.ObservedGeneration))
	case t == nil:
		why = append(why, "the controller reports no target of this name: it selects the StatefulSet only since its last report, or the manager does not watch this namespace")
	}
	if t == nil {
		return why
	}
	if !t.Injected {
		msg := t.Message
		if msg == "" {
			msg = "not injected, and the controller gave no reason for this StatefulSet: read the ScratchVolume's Ready condition (kubectl dbtune status " + sv.Name + ")"
		}
		why = append(why, "not injected: "+msg)
	}
	if r := t.Refused; r != nil {
		why = append(why, fmt.Sprintf("the API server refused its injected pods at %s: %s. The StatefulSet was put back; the controller injects again when the ScratchVolume's spec, the pod template or the namespace's LimitRanges and ResourceQuotas change",
			r.Time.UTC().Format("2006-01-02 15:04:05Z"), r.Message))
	}
	if p := t.PendingChange; p != nil {
		w := fmt.Sprintf("a change waits (%s, id %s): %s", pendingReason(p), p.ID, p.Reason)
		if len(p.Changes) > 0 {
			w += "; it would " + strings.Join(p.Changes, "; ")
		}
		why = append(why, w)
	}
	if ww := t.WriteWar; ww != nil {
		why = append(why, fmt.Sprintf("another writer keeps removing the entries (%s): the controller holds off until %s",
			strings.Join(ww.Removed, ", "), ww.RetryAt.UTC().Format("2006-01-02 15:04:05Z")))
	}
	if t.Injected && on.Carried != "" && t.ConfigHash != "" && t.ConfigHash != on.Carried {
		why = append(why, fmt.Sprintf("the pod template carries configuration %s, the status records %s: the controller is writing", on.Carried, t.ConfigHash))
	}
	if t.Injected && (t.UpdatedReplicas < t.Replicas || t.ReadyReplicas < t.Replicas) {
		why = append(why, fmt.Sprintf("rolling out: %d of %d pods run the injected template, %d ready (updateStrategy %s)",
			t.UpdatedReplicas, t.Replicas, t.ReadyReplicas, strategy(sts)))
	}
	return why
}

func strategy(sts *appsv1.StatefulSet) string {
	if sts.Spec.UpdateStrategy.Type == "" {
		return string(appsv1.RollingUpdateStatefulSetStrategyType)
	}
	return string(sts.Spec.UpdateStrategy.Type)
}

// ownedEntries lists the pod-template entries the operator's field manager owns on sts, from its
// managedFields: annotations by key, volumes, init containers, mounts and variables by name.
func ownedEntries(sts *appsv1.StatefulSet) []string {
	var out []string
	for _, mf := range sts.ManagedFields {
		if mf.Manager != v1alpha1.FieldManager || mf.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &tree) != nil {
			continue
		}
		spec, _ := tree["f:spec"].(map[string]any)
		tmpl, _ := spec["f:template"].(map[string]any)
		walkFields(tmpl, "", &out)
	}
	sort.Strings(out)
	return dedupe(out)
}

// entryLists are the lists whose items walkFields names as a whole: what the operator adds is an
// item, and its fields are the item's business.
var entryLists = map[string]bool{"volumes": true, "initContainers": true, "volumeMounts": true, "env": true}

// walkFields writes the leaves of a managedFields tree as paths below the pod template:
// metadata.annotations[scratch.dbtune.io/x], spec.containers[name=mariadb].volumeMounts[mountPath=/tmp].
func walkFields(tree map[string]any, path string, out *[]string) {
	for key, sub := range tree {
		if key == "." {
			continue
		}
		child, _ := sub.(map[string]any)
		switch {
		case strings.HasPrefix(key, "f:"):
			field := strings.TrimPrefix(key, "f:")
			if strings.HasSuffix(path, ".annotations") || strings.HasSuffix(path, ".labels") {
				*out = append(*out, path+"["+field+"]")
				continue
			}
			if len(child) == 0 || child["."] != nil && len(child) == 1 {
				*out = append(*out, join(path, field))
				continue
			}
			walkFields(child, join(path, field), out)
		case strings.HasPrefix(key, "k:"):
			item := path + "[" + itemKey(strings.TrimPrefix(key, "k:")) + "]"
			if entryLists[lastField(path)] || len(child) == 0 {
				*out = append(*out, item)
				continue
			}
			walkFields(withoutKeyFields(child, strings.TrimPrefix(key, "k:")), item, out)
		case strings.HasPrefix(key, "v:"):
			*out = append(*out, path+"["+strings.TrimPrefix(key, "v:")+"]")
		}
	}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// lastField is the last field name of a path, past any list items' keys.
func lastField(path string) string {
	var b strings.Builder
	depth := 0
	for _, r := range path {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	fields := b.String()
	return fields[strings.LastIndex(fields, ".")+1:]
}

// withoutKeyFields drops from a list item's fields those of its key: owning an item means owning
// its key, which says nothing more.
func withoutKeyFields(item map[string]any, rawKey string) map[string]any {
	var key map[string]any
	if json.Unmarshal([]byte(rawKey), &key) != nil {
		return item
	}
	out := make(map[string]any, len(item))
	for k, v := range item {
		if _, isKey := key[strings.TrimPrefix(k, "f:")]; !isKey {
			out[k] = v
		}
	}
	return out
}

// itemKey writes a list item's key, {"name":"x"}, as name=x.
func itemKey(raw string) string {
	var key map[string]any
	if json.Unmarshal([]byte(raw), &key) != nil {
		return raw
	}
	var parts []string
	for k, v := range key {
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func dedupe(sorted []string) []string {
	var out []string
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// mountVolumes names, for each volume mount of the pod template's containers as an owned entry
// spells it, the volume it mounts: a mount is keyed by its path, and belongs to whoever's volume it
// mounts.
func mountVolumes(sts *appsv1.StatefulSet) map[string]string {
	out := map[string]string{}
	spec := &sts.Spec.Template.Spec
	for _, list := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for _, c := range list.containers {
			for _, m := range c.VolumeMounts {
				out[fmt.Sprintf("spec.%s[name=%s].volumeMounts[mountPath=%s]", list.field, c.Name, m.MountPath)] = m.Name
			}
		}
	}
	return out
}

// entriesOf picks the owned entries that belong to sv: those that carry its names, the mounts of
// its volumes, and the mounts at its mount path.
func entriesOf(sv *v1alpha1.ScratchVolume, owned []string, mounts map[string]string) []string {
	volumes := map[string]bool{sv.VolumeName(): true, sv.ConfigVolumeName(): true, sv.DiskVolumeName(): true}
	marks := []string{
		"[" + sv.InjectionAnnotation() + "]", "[" + sv.StateAnnotation() + "]",
		"name=" + sv.VolumeName() + "]", "name=" + sv.ConfigVolumeName() + "]", "name=" + sv.DiskVolumeName() + "]",
		"name=" + sv.InitContainerName() + "]", "mountPath=" + sv.EffectiveMountPath() + "]",
	}
	var out []string
	for _, e := range owned {
		if volumes[mounts[e]] {
			out = append(out, e)
			continue
		}
		for _, m := range marks {
			if strings.Contains(e, m) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

func writeExplanation(w io.Writer, ex *explanation) {
	fmt.Fprintf(w, "StatefulSet %s/%s: %d %s, updateStrategy %s\n", ex.Namespace, ex.StatefulSet, ex.Template.Replicas,
		conditions.Plural(int(ex.Template.Replicas), "replica", "replicas"), ex.Template.UpdateStrategy)
	if len(ex.ScratchVolumes) == 0 {
		fmt.Fprintf(w, "  no ScratchVolume in namespace %s selects it", ex.Namespace)
		if len(ex.Unselected) > 0 {
			fmt.Fprintf(w, "; those there: %s", strings.Join(ex.Unselected, "; "))
		}
		fmt.Fprintln(w)
	}
	for _, on := range ex.ScratchVolumes {
		fmt.Fprintln(w)
		how := on.Selects
		if how == "" {
			how = "no longer selects it"
		}
		fmt.Fprintf(w, "ScratchVolume %s (%s)\n", on.Name, how)
		if on.Carried != "" {
			fmt.Fprintf(w, "  carried: configuration %s\n", on.Carried)
		} else {
			fmt.Fprintln(w, "  carried: nothing: the pod template has none of its entries")
		}
		if len(on.Added) > 0 {
			fmt.Fprintln(w, "  added (owned by field manager "+v1alpha1.FieldManager+"):")
			for _, e := range on.Added {
				fmt.Fprintf(w, "    %s\n", e)
			}
		}
		if st := on.State; st != nil {
			for _, line := range describeState(st) {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
		if t := on.Reported; t != nil && len(t.TempLocations) > 0 {
			fmt.Fprintln(w, "  temporary data:")
			for _, l := range t.TempLocations {
				where := l.Path
				if where == "" {
					where = "the server's default"
				}
				opt := ""
				if l.Option != "" {
					opt = " (" + l.Option + ")"
				}
				fmt.Fprintf(w, "    %-24s %-6s %s%s\n", l.Data, l.Medium, where, opt)
			}
		}
		if len(on.Why) == 0 {
			fmt.Fprintln(w, "  nothing missing: injected and rolled out")
		}
		for _, line := range on.Why {
			fmt.Fprintf(w, "  ! %s\n", line)
		}
	}
	var mine []string
	for _, on := range ex.ScratchVolumes {
		mine = append(mine, on.Added...)
	}
	if others := without(ex.Owned, mine); len(others) > 0 {
		fmt.Fprintln(w, "\nentries of "+v1alpha1.FieldManager+" that belong to no ScratchVolume above:")
		for _, e := range others {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// describeState writes a state annotation as what it changed.
func describeState(st *v1alpha1.InjectionState) []string {
	var out []string
	if len(st.Args) > 0 {
		out = append(out, fmt.Sprintf("args appended to container %s: %s", st.Container, strings.Join(st.Args, " ")))
	}
	if st.Env != "" {
		before := "unset before"
		if st.EnvBefore != nil {
			before = fmt.Sprintf("%q before", *st.EnvBefore)
		}
		out = append(out, fmt.Sprintf("flags added to %s of container %s: %s (%s)", st.Env, st.Container, strings.Join(st.EnvFlags, " "), before))
	}
	if st.Memory != "" {
		line := fmt.Sprintf("memory added to container %s: %s (request %s, limit %s)", st.Container, st.Memory, orNone(st.Request), orNone(st.Limit))
		if st.PodRequest != "" || st.PodLimit != "" {
			line += fmt.Sprintf("; pod-level request %s, limit %s", orNone(st.PodRequest), orNone(st.PodLimit))
		}
		out = append(out, line)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func without(all, drop []string) []string {
	skip := map[string]bool{}
	for _, d := range drop {
		skip[d] = true
	}
	var out []string
	for _, a := range all {
		if !skip[a] {
			out = append(out, a)
		}
	}
	return out
}
