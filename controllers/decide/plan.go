package decide

// This file decides what one StatefulSet carries: each selecting ScratchVolume's plan or problem,
// the claims that settle conflicts between them, the entries wanted against those found, and what
// a write of them would put back that another writer removed.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// TargetPlan is what a sync decides for one StatefulSet from the ScratchVolumes that select it:
// the outcome per ScratchVolume, the controller's entries wanted and found, and the container
// changes (flags, environment, memory) still to make.
type TargetPlan struct {
	Outcomes          map[string]*Outcome
	Desired, Observed inject.Entries
	Pending           []inject.ContainerChange
	// Force says the apply of Desired must force ownership: it sets an extra-flags variable the
	// StatefulSet holds with another value (see force), which no apply could change otherwise.
	Force bool

	// changes and user are what Pending is computed from, for PendingAfter.
	changes []inject.ContainerChange
	user    *corev1.PodTemplateSpec
}

// PlanTarget decides, reading nothing but its arguments: svs are the live ScratchVolumes that
// select sts, oldest first (SortOldestFirst), sts is the whole StatefulSet, ns the admission rules
// of its namespace, and g holds back the changes nobody wrote.
func PlanTarget(svs []*v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, ns inject.Namespace, g Gate) TargetPlan {
	outcomes := decideAll(svs, sts, ns)
	user := inject.Strip(sts.Spec.Template)
	th, stamp := userTemplateHash(&user), ns.Stamp() // what a refusal and the gate were decided under
	for _, o := range outcomes {
		o.State = refuse(o, sts.Name, th, stamp, g.Refused)
		if s, ok := o.Injecting(); ok {
			o.State = gate(o.SV, s, sts, &user, th, g)
		}
	}
	plans, kept := WinningPlans(outcomes), keptNames(outcomes)
	changes, states := inject.Overrides(&user, &sts.Spec.Template, plans, kept)
	desired := inject.Desired(plans)
	for _, name := range kept {
		desired = desired.Merge(inject.ObservedFor(&sts.Spec.Template, name))
	}
	tp := TargetPlan{
		Outcomes: outcomes,
		Desired:  desired.WithAnnotations(states),
		Observed: inject.Observed(&sts.Spec.Template),
		Pending:  inject.Pending(&sts.Spec.Template, changes, &user),
		changes:  changes, user: &user,
	}
	tp.Force = force(sts, tp.Desired, tp.Observed)
	return tp
}

// PendingAfter is what is still pending once the apply of Desired left the pod template tmpl:
// the args and memory an apply cannot share (Args injection, Reserve accounting). The
// extra-flags variables are entries of the apply, so an injection through ExtraFlags alone is
// that one write.
func (tp TargetPlan) PendingAfter(tmpl *corev1.PodTemplateSpec) []inject.ContainerChange {
	return inject.Pending(tmpl, tp.changes, tp.user)
}

// Settled reports whether the StatefulSet already carries everything planned.
func (tp TargetPlan) Settled() bool { return tp.Desired.Equal(tp.Observed) && len(tp.Pending) == 0 }

// Waiting reports whether a change waits for approval or a maintenance window: the decision
// depends on the clock and the approval then, and is made again on every sync.
func (tp TargetPlan) Waiting() bool {
	for _, o := range tp.Outcomes {
		if _, ok := o.State.(Waiting); ok {
			return true
		}
	}
	return false
}

// Rechecked reports whether an outcome's problem depends on what the namespace uses
// (inject.Problem.Rechecked): the decision is then made again on every sync.
func (tp TargetPlan) Rechecked() bool {
	for _, o := range tp.Outcomes {
		if s, ok := o.State.(Blocked); ok && s.Problem.Rechecked() {
			return true
		}
	}
	return false
}

// Refused reports whether an outcome's injection was refused (Refused): its record is the
// status's, not a remembered decision's.
func (tp TargetPlan) Refused() bool {
	for _, o := range tp.Outcomes {
		if _, ok := o.State.(Refused); ok {
			return true
		}
	}
	return false
}

// Remembered reports whether the decision may be remembered for the next syncs with the same
// inputs (fleetcache.Decisions): it writes nothing, and depends on nothing but its inputs.
func (tp TargetPlan) Remembered() bool {
	return tp.Settled() && !tp.Waiting() && !tp.Rechecked() && !tp.Refused()
}

// Removing reports whether a write of the plan takes a ScratchVolume's entries away: the JSON
// patch of the containers then goes before the apply, so that a failed apply never forgets flags
// still there; adding, the apply goes first, so a failed patch never leaves flags nobody recorded.
func (tp TargetPlan) Removing() bool {
	for k := range tp.Observed.Annotations {
		if _, ok := tp.Desired.Annotations[k]; !ok {
			return true
		}
	}
	return false
}

// decideAll plans every ScratchVolume (oldest first) for sts and settles conflicts between them:
// the first to claim a container and purpose, or a mount path in a container, wins.
func decideAll(svs []*v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, ns inject.Namespace) map[string]*Outcome {
	out := map[string]*Outcome{}
	claims := map[string]string{}
	injected := map[string]bool{}
	for _, n := range inject.ScratchVolumes(&sts.Spec.Template) {
		injected[n] = true
	}
	for _, sv := range svs {
		out[sv.Name] = &Outcome{SV: sv, State: decideOne(sv, sts, ns, claims, injected[sv.Name])}
	}
	return out
}

// decideOne plans sv for sts: Injected, or Blocked with the earlier injection kept when the
// StatefulSet carries one (injected), unless another ScratchVolume claimed what sv asks for.
func decideOne(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, ns inject.Namespace, claims map[string]string, injected bool) State {
	if p := controlledElsewhere(sv, sts); p != nil {
		return Blocked{Problem: p, Kept: injected}
	}
	plan, err := inject.NewPlan(sv, sts, ns)
	if err != nil {
		var p *inject.Problem
		if !errors.As(err, &p) {
			p = &inject.Problem{Reason: v1alpha1.ReasonInvalidLayout, Message: err.Error()}
		}
		return Blocked{Problem: p, Kept: injected}
	}
	if p := claim(claims, sv, plan); p != nil {
		return Blocked{Problem: p}
	}
	return Injected{Plan: plan, Hash: plan.Hash, Container: PlannedContainer(sts, plan.Container)}
}

// claim records the container+purpose and container+mountPath that plan takes, or returns the
// conflict with the ScratchVolume that took them first.
func claim(claims map[string]string, sv *v1alpha1.ScratchVolume, plan *inject.Plan) *inject.Problem {
	keys := []struct{ key, what string }{
		{plan.Container + "\x00purpose\x00" + string(sv.Spec.Purpose), fmt.Sprintf("a %s volume in container %s", sv.Spec.Purpose, plan.Container)},
		{plan.Container + "\x00path\x00" + plan.Mount.MountPath, fmt.Sprintf("the mount path %s in container %s", plan.Mount.MountPath, plan.Container)},
	}
	for _, k := range keys {
		if owner, taken := claims[k.key]; taken {
			return &inject.Problem{Reason: v1alpha1.ReasonScratchVolumeConflict, Message: fmt.Sprintf(
				"ScratchVolume %s, which is older, already provides %s: delete one of the two, or point this one at another container or mount path",
				owner, k.what)}
		}
	}
	for _, k := range keys {
		claims[k.key] = sv.Name
	}
	return nil
}

func keptNames(outcomes map[string]*Outcome) []string {
	var names []string
	for name, o := range outcomes {
		if o.keeps() {
			names = append(names, name)
		}
	}
	return names
}

// WinningPlans are the plans of the Injected outcomes.
func WinningPlans(outcomes map[string]*Outcome) []*inject.Plan {
	var plans []*inject.Plan
	for _, o := range outcomes {
		if s, ok := o.Injecting(); ok {
			plans = append(plans, s.Plan)
		}
	}
	return plans
}

// PlannedContainer is a copy of the container of sts named name, with only what checking a larger
// volume against its memory limit reads (limitsFor): a remembered decision keeps it, shared with
// the other decisions that keep an equal one, instead of the pod template. Its memory limit is
// the room the limits leave it (inject.MemoryRoom): with pod-level resources, the pod's limit less
// the other running containers' may bind first.
func PlannedContainer(sts *appsv1.StatefulSet, name string) *corev1.Container {
	pod := &sts.Spec.Template.Spec
	for i := range pod.Containers {
		if c := &pod.Containers[i]; c.Name == name {
			out := &corev1.Container{Name: c.Name, Command: slices.Clone(c.Command), Args: slices.Clone(c.Args), Resources: *c.Resources.DeepCopy()}
			if room, ok := inject.MemoryRoom(pod, c); ok {
				if out.Resources.Limits == nil {
					out.Resources.Limits = corev1.ResourceList{}
				}
				out.Resources.Limits[corev1.ResourceMemory] = room
			}
			return out
		}
	}
	return nil
}

// SortOldestFirst puts svs in the order that settles conflicts between them: the oldest first, and
// by name among those created in the same second.
func SortOldestFirst(svs []*v1alpha1.ScratchVolume) {
	sort.Slice(svs, func(i, j int) bool { return older(svs[i], svs[j]) })
}

func older(a, b *v1alpha1.ScratchVolume) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// Restore is what a write puts back on a StatefulSet that another writer removed or changed.
type Restore struct {
	entries []contested
}

// Empty reports whether the write puts nothing back: it injects or updates.
func (r Restore) Empty() bool { return len(r.entries) == 0 }

// Names names what the write puts back, for the status and Events.
func (r Restore) Names() []string { return names(r.entries) }

// RestoredBy is what a write of tp puts back on sts: entries of a configuration the controller
// had already written there (the status says so) that are gone or hold other values now, or else
// the args and memory it had set in a container. Nothing when the write only injects or updates.
func RestoredBy(tp TargetPlan, sts *appsv1.StatefulSet) Restore {
	var r Restore
	settings := false
	for _, name := range slices.Sorted(maps.Keys(tp.Outcomes)) {
		o := tp.Outcomes[name]
		s, ok := o.Injecting()
		if !ok || !wrote(o.SV, sts.Name, s.Hash) {
			continue
		}
		mine := tp.Desired.For(o.SV.Name)
		delete(mine.Annotations, o.SV.StateAnnotation())
		cs := contestedEntries(mine, inject.ObservedFor(&sts.Spec.Template, o.SV.Name), &sts.Spec.Template)
		r.entries = append(r.entries, cs...)
		settings = settings || len(cs) == 0
	}
	if settings {
		for _, ch := range tp.Pending {
			r.entries = append(r.entries, contestedSettings(&sts.Spec.Template, ch)...)
		}
	}
	r.entries = slices.CompactFunc(r.entries, func(a, b contested) bool { return a.what == b.what })
	return r
}

// wrote reports whether sv's last status had the configuration hash on target: injected, or held
// off by a write war.
func wrote(sv *v1alpha1.ScratchVolume, target, hash string) bool {
	for _, t := range sv.Status.Targets {
		if t.Name == target {
			return t.ConfigHash == hash && (t.Injected || t.WriteWar != nil)
		}
	}
	return false
}

// WithGuard hands the StatefulSet's restore history to every outcome, for the status.
func WithGuard(outcomes map[string]*Outcome, g Guard) map[string]*Outcome {
	for _, o := range outcomes {
		o.Guard = g
	}
	return outcomes
}

// Queue makes the Injected outcomes, whose plan sts does not carry yet, wait for the targets in
// flight, with note: what sts carries stays, as for a blocked one.
func Queue(outcomes map[string]*Outcome, sts *appsv1.StatefulSet, note string) {
	for _, o := range outcomes {
		if _, ok := o.Injecting(); ok {
			_, injected := sts.Spec.Template.Annotations[o.SV.InjectionAnnotation()]
			o.State = Queued{Note: note, Kept: injected}
		}
	}
}

// Urgent reports whether a write of the outcomes keeps data safe or takes back an injection whose
// pods were refused, and so goes ahead of any pacing.
func Urgent(outcomes map[string]*Outcome) bool {
	for _, o := range outcomes {
		switch s := o.State.(type) {
		case Injected:
			if s.Urgent {
				return true
			}
		case Refused:
			return true
		}
	}
	return false
}

// Hold makes the Injected outcomes held off by the write war.
func Hold(outcomes map[string]*Outcome, war *v1alpha1.WriteWar) {
	for _, o := range outcomes {
		if s, ok := o.Injecting(); ok {
			o.State = Held{Plan: s.Plan, Hash: s.Hash, War: war}
		}
	}
}
