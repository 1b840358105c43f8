package decide

// This file decides whether a change of what a target carries may be written now: a change the
// user made (an edit of the ScratchVolume or of the StatefulSet) is, and so is a fresh injection,
// but a change nobody wrote (a new release of the manager renders the configuration differently,
// a default changed) restarts the database pods by surprise, and waits for approval or a
// maintenance window.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// Gate is what the decision on a change nobody wrote reads besides the objects.
type Gate struct {
	// Now is the time the decision is made at.
	Now time.Time
	// Version is the manager's version, recorded with what it writes.
	Version string
	// Windows are the manager's default maintenance windows, for a ScratchVolume without its own.
	Windows []v1alpha1.MaintenanceWindow
	// DropIns are the data of the drop-in ConfigMaps the ScratchVolumes have for the StatefulSet,
	// by ScratchVolume name, as read before the decision: what a pending change would do to them
	// is part of its description. A ScratchVolume without one is absent.
	DropIns map[string]map[string]string
	// Refused are the refusals of pod creation found on the StatefulSet now, by ScratchVolume.
	Refused map[string]Refusal
}

// Applying explains why a change nobody wrote is written now, for its Event; empty for a change
// the user made.
type Applying string

// TemplateHash is a short hash of sts's pod template as its owner wrote it, without the
// controller's entries: a change of it is an edit of the StatefulSet, which rolls the pods anyway.
func TemplateHash(sts *appsv1.StatefulSet) string {
	user := inject.Strip(sts.Spec.Template)
	return userTemplateHash(&user)
}

// userTemplateHash is TemplateHash of the template its owner wrote, already stripped.
func userTemplateHash(user *corev1.PodTemplateSpec) string {
	raw, _ := json.Marshal(user) // a pod template always marshals
	return shortHash(raw)
}

func shortHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// applied is the record of what sv's configuration on target was rendered from, read from the
// status. A status written by a release that kept no record stands for the generation it had
// observed, when its hash is the one on the StatefulSet. Nil when nothing is known.
func applied(sv *v1alpha1.ScratchVolume, target, carried string) *v1alpha1.AppliedConfig {
	for _, t := range sv.Status.Targets {
		if t.Name != target {
			continue
		}
		if t.Applied != nil {
			return t.Applied
		}
		if t.ConfigHash == carried && sv.Status.ObservedGeneration > 0 {
			return &v1alpha1.AppliedConfig{Generation: sv.Status.ObservedGeneration}
		}
	}
	return nil
}

// gate decides whether the plan s of sv, which may change the configuration sts carries, is
// written now. A change that waits becomes Waiting, and sts keeps what it carries; one written
// says why, when nobody asked for it. user is sts's template as its owner wrote it, and th its
// hash (userTemplateHash), which every outcome on sts shares.
func gate(sv *v1alpha1.ScratchVolume, s Injected, sts *appsv1.StatefulSet, user *corev1.PodTemplateSpec, th string, g Gate) State {
	windows, own := g.Windows, false
	if sv.Spec.Changes != nil && len(sv.Spec.Changes.MaintenanceWindows) > 0 {
		windows, own = sv.Spec.Changes.MaintenanceWindows, true
	}
	st, err := Windows(windows, g.Now)
	carried, had := sts.Spec.Template.Annotations[sv.InjectionAnnotation()]
	if err != nil && own {
		// Admission checks all but the time zone's name, which only the time zone database knows.
		return Blocked{Problem: &inject.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: "spec.changes: " + err.Error()}, Kept: had}
	}
	s.TemplateHash = th
	if !had || carried == s.Hash {
		return s // a fresh injection, or nothing to change
	}
	rec := applied(sv, sts.Name, carried)
	if rec != nil && userEdited(rec, sv, th) {
		return s // the user edited the ScratchVolume or the StatefulSet since
	}
	change := describe(sv, s, sts, user, rec, g)
	switch why := urgent(sv, s.Plan, sts.Name); {
	case why != "":
		s.Applying, s.Urgent = Applying(why), true
		return s
	case approved(sv, change.ID):
		s.Applying = Applying(fmt.Sprintf("approved with %s=%s", v1alpha1.ApproveChangeAnnotation, change.ID))
		return s
	case st.Open:
		s.Applying = Applying("in the maintenance window " + DescribeWindows(windows))
		return s
	}
	reason := v1alpha1.ReasonAwaitingApproval
	if !st.Next.IsZero() {
		reason = v1alpha1.ReasonAwaitingWindow
		change.NextWindow = &metav1.Time{Time: st.Next}
	}
	return Waiting{Plan: s.Plan, Change: change, Reason: reason, Applied: completed(rec, sv, th)}
}

// userEdited reports whether the user changed what sv's configuration on a target is rendered
// from since rec was recorded: the ScratchVolume's spec, but spec.changes, or the StatefulSet's own
// pod template (th). The spec counts as edited when its generation moved and, where rec has its
// hash, the hash moved too: a default the API server fills in moves the hash alone, an edit of
// spec.changes the generation alone.
func userEdited(rec *v1alpha1.AppliedConfig, sv *v1alpha1.ScratchVolume, th string) bool {
	if rec.TemplateHash != "" && rec.TemplateHash != th {
		return true
	}
	return rec.Generation != sv.Generation && (rec.SpecHash == "" || rec.SpecHash != SpecHash(sv))
}

// SpecHash is a short hash of sv's spec but spec.changes, spec.sizing and spec.largePages: an
// edit of one of them alone lets no pending change through.
func SpecHash(sv *v1alpha1.ScratchVolume) string {
	spec := sv.Spec
	// None says what a target's template gets: who may set spec.size, when a change may be
	// applied, and the pages the node agents give the volumes in place.
	spec.Changes, spec.Sizing, spec.LargePages = nil, nil, ""
	raw, _ := json.Marshal(spec) // a spec always marshals
	return shortHash(raw)
}

// completed is rec with what a record an earlier release wrote lacks, or one record, when there is
// none: the change waits, so nobody edited the spec since rec (the generation is the same) nor the
// template, as far as is known; their hashes now are those the kept configuration stands for.
func completed(rec *v1alpha1.AppliedConfig, sv *v1alpha1.ScratchVolume, th string) *v1alpha1.AppliedConfig {
	out := &v1alpha1.AppliedConfig{Generation: sv.Generation}
	if rec != nil {
		out = rec.DeepCopy()
	}
	if out.SpecHash == "" {
		out.SpecHash = SpecHash(sv)
	}
	if out.TemplateHash == "" {
		out.TemplateHash = th
	}
	return out
}

// approved reports whether sv's approval annotation names id.
func approved(sv *v1alpha1.ScratchVolume, id string) bool {
	for _, a := range strings.Split(sv.Annotations[v1alpha1.ApproveChangeAnnotation], ",") {
		if strings.TrimSpace(a) == id {
			return true
		}
	}
	return false
}

// urgent says why sv's change to plan must be written at once although nobody asked for it: it moves a
// kind of data that must survive a restart from the RAM volume to disk, where the configuration
// carried now (as the status recorded it) puts it on the RAM volume. Empty when it does not.
func urgent(sv *v1alpha1.ScratchVolume, plan *inject.Plan, target string) string {
	var was []v1alpha1.TempLocation
	for _, t := range sv.Status.Targets {
		if t.Name == target {
			was = t.TempLocations
		}
	}
	var moved []string
	for _, l := range plan.Locations {
		if l.Medium != v1alpha1.TempMediumDisk {
			continue
		}
		for _, w := range was {
			if w.Data == l.Data && w.Medium == v1alpha1.TempMediumMemory {
				moved = append(moved, string(l.Data))
			}
		}
	}
	if len(moved) == 0 {
		return ""
	}
	return fmt.Sprintf("written without waiting for approval: it moves %s from the RAM volume to disk, where a restart cannot lose it",
		strings.Join(moved, ", "))
}

// describe is the pending change sv's plan s makes to sts, whose owner wrote the template user: what
// it changes, why, and its ID.
func describe(sv *v1alpha1.ScratchVolume, s Injected, sts *appsv1.StatefulSet, user *corev1.PodTemplateSpec, rec *v1alpha1.AppliedConfig, g Gate) *v1alpha1.PendingChange {
	before := inject.Observed(&sts.Spec.Template).For(sv.Name)
	after := withoutHash(inject.Desired([]*inject.Plan{s.Plan}).WithAnnotations(statesFor(sv, s.Plan, sts, user)), sv)
	changes := entryChanges(withoutHash(before, sv), after)
	if s.Plan.ConfigVolume != nil {
		data := g.DropIns[sv.Name]
		changes = append(changes, lineChanges("drop-in "+s.Plan.ConfigKey, data[s.Plan.ConfigKey], s.Plan.ConfigData)...)
	}
	if len(changes) > 32 {
		changes = append(changes[:31], fmt.Sprintf("… and %d more", len(changes)-31))
	}
	c := &v1alpha1.PendingChange{ConfigHash: s.Hash, WantedBy: g.Version, Changes: changes, Since: metav1.Time{Time: g.Now}}
	switch {
	case rec == nil:
		c.Reason = "the status keeps no record of what the configuration on the StatefulSet was rendered from"
	case rec.Version == "":
		c.Reason = fmt.Sprintf("manager %s renders the configuration differently from the earlier release that wrote it", g.Version)
	case rec.Version != g.Version:
		c.Reason = fmt.Sprintf("manager %s renders the configuration differently from manager %s, which wrote it", g.Version, rec.Version)
	default:
		c.Reason = fmt.Sprintf("manager %s renders the configuration differently than when it wrote it: a default or a flag of the manager changed", g.Version)
	}
	c.ID = shortHash([]byte(g.Version + "\n" + strings.Join(changes, "\n")))[:10]
	for _, t := range sv.Status.Targets {
		if t.Name == sts.Name && t.PendingChange != nil && t.PendingChange.ID == c.ID {
			c.Since = t.PendingChange.Since
		}
	}
	return c
}

// statesFor is the state annotation sv's plan would leave on sts, whose owner wrote the template
// user, when it changes a container.
func statesFor(sv *v1alpha1.ScratchVolume, plan *inject.Plan, sts *appsv1.StatefulSet, user *corev1.PodTemplateSpec) map[string]string {
	_, states := inject.Overrides(user, &sts.Spec.Template, []*inject.Plan{plan}, nil)
	out := map[string]string{}
	if v, ok := states[sv.StateAnnotation()]; ok {
		out[sv.StateAnnotation()] = v
	}
	return out
}

func withoutHash(e inject.Entries, sv *v1alpha1.ScratchVolume) inject.Entries {
	out := e
	out.Annotations = map[string]string{}
	for k, v := range e.Annotations {
		if k != sv.InjectionAnnotation() {
			out.Annotations[k] = v
		}
	}
	return out
}

// entryChanges lists how the entries after differ from before, field by field.
func entryChanges(before, after inject.Entries) []string {
	var out []string
	keyed := func(kind string, b, a map[string]any) {
		for _, k := range sortedUnion(b, a) {
			out = append(out, fieldChanges(kind+" "+k, b[k], a[k])...)
		}
	}
	vols := func(e inject.Entries) map[string]any {
		m := map[string]any{}
		for _, v := range e.Volumes {
			m[v.Name] = v
		}
		return m
	}
	inits := func(e inject.Entries) map[string]any {
		m := map[string]any{}
		for _, c := range e.InitContainers {
			m[c.Name] = c
		}
		return m
	}
	mounts := func(e inject.Entries) map[string]any {
		m := map[string]any{}
		for c, ms := range e.Mounts {
			for _, mt := range ms {
				m[mt.MountPath+" in container "+c] = mt
			}
		}
		return m
	}
	annotations := func(e inject.Entries) map[string]any {
		m := map[string]any{}
		for k, v := range e.Annotations {
			var parsed any
			if json.Unmarshal([]byte(v), &parsed) == nil {
				m[k] = parsed
			} else {
				m[k] = v
			}
		}
		return m
	}
	keyed("volume", vols(before), vols(after))
	keyed("init container", inits(before), inits(after))
	keyed("mount", mounts(before), mounts(after))
	keyed("annotation", annotations(before), annotations(after))
	return out
}

// fieldChanges lists the leaves of two JSON values that differ, as "what field: old → new".
func fieldChanges(what string, before, after any) []string {
	b, a := flatten(before), flatten(after)
	switch {
	case before == nil && after == nil:
		return nil
	case before == nil:
		return []string{what + ": added"}
	case after == nil:
		return []string{what + ": removed"}
	}
	var out []string
	for _, k := range sortedUnion(b, a) {
		if b[k] == a[k] {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s %s → %s", what, k, orNone(b[k]), orNone(a[k])))
	}
	return out
}

func orNone(s any) string {
	if s == nil {
		return "(none)"
	}
	return fmt.Sprint(s)
}

// flatten maps each leaf of v's JSON form to its dotted path.
func flatten(v any) map[string]any {
	raw, _ := json.Marshal(v) // entries always marshal
	var tree any
	_ = json.Unmarshal(raw, &tree)
	out := map[string]any{}
	var walk func(prefix string, n any)
	walk = func(prefix string, n any) {
		switch n := n.(type) {
		case map[string]any:
			for k, c := range n {
				walk(strings.TrimPrefix(prefix+"."+k, "."), c)
			}
		case []any:
			for i, c := range n {
				walk(fmt.Sprintf("%s[%d]", prefix, i), c)
			}
		default:
			out[prefix] = fmt.Sprint(n)
		}
	}
	walk("", tree)
	return out
}

// lineChanges lists the lines of an option file that a change removes and adds, in order, each
// named with its [section]: the same line may stand in several sections.
func lineChanges(what, before, after string) []string {
	b, a := sectioned(before), sectioned(after)
	// The longest common subsequence of two files of a few dozen lines.
	lcs := make([][]int, len(b)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(a)+1)
	}
	for i := len(b) - 1; i >= 0; i-- {
		for j := len(a) - 1; j >= 0; j-- {
			if b[i] == a[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(b) || j < len(a) {
		switch {
		case i < len(b) && j < len(a) && b[i] == a[j]:
			i, j = i+1, j+1
		case j < len(a) && (i == len(b) || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, fmt.Sprintf("%s: + %s", what, a[j]))
			j++
		default:
			out = append(out, fmt.Sprintf("%s: - %s", what, b[i]))
			i++
		}
	}
	return out
}

// sectioned are the option lines of a file, comments and blank lines left out, each prefixed with
// the [section] it is in.
func sectioned(file string) []string {
	var out []string
	section := ""
	for _, l := range strings.Split(file, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "["):
			section = l + " "
		default:
			out = append(out, section+l)
		}
	}
	return out
}

func sortedUnion[V any](a, b map[string]V) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
