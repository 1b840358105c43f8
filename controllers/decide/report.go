package decide

// This file decides what the status says of each target: the per-reconcile report, written as the
// targets are synced, and the status it becomes.

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// AdmissionRetryInterval is how often a change admission control refused is tried again when
// nothing else brings a reconcile: a policy or webhook can change without any event we watch.
const AdmissionRetryInterval = 5 * time.Minute

// conflictReasons are problems caused by something else already in the pod template.
var conflictReasons = map[string]bool{
	v1alpha1.ReasonMountPathInUse: true, v1alpha1.ReasonVolumeNameInUse: true, v1alpha1.ReasonOverriddenByArgs: true,
	v1alpha1.ReasonConfigDirUnusable: true, v1alpha1.ReasonArgsIgnored: true, v1alpha1.ReasonScratchVolumeConflict: true,
	v1alpha1.ReasonExtraFlagsNotMergeable: true, v1alpha1.ReasonControlledByOperator: true, v1alpha1.ReasonFightingAnotherWriter: true,
}

// Report gathers, during one reconcile, what happened to each target; it becomes the status.
type Report struct {
	sv           *v1alpha1.ScratchVolume
	rule         WriteWarRule
	targetsFound int
	// invalidSelector says why spec.target.selector cannot be parsed, when it cannot.
	invalidSelector string
	targets         []v1alpha1.ScratchTargetStatus
	cms             map[string]bool
	problems        []finding // blocked targets
	memory          []finding // memory notes and problems
	notes           []finding // other notes
	rollout         []finding // targets not rolled out yet
	pending         []finding // targets whose change waits (the reason is the condition's)
	// pacing is the reconcile's rollout pacing, nil when there is none.
	pacing *Pacing
	// queued counts the targets whose first injection waits for the targets in flight.
	queued []finding
	// version is the manager's, recorded with what is applied, and specHash the ScratchVolume's
	// (SpecHash), computed once.
	version, specHash string
	placed            []placedTarget // where each injected target's temporary data goes
	// denials counts the targets whose change admission control refused.
	denials int
	// wake is when a target's write-war guard needs the next reconcile; zero when none does.
	wake time.Time
	// failure and observed are the Ending's, set only on the copy a verdict is decided on.
	failure  error
	observed []v1alpha1.ScratchVolumeUsage
	// containers are the containers that got the volume, by target, for checking a recommended
	// size against their memory limits.
	containers map[string]*corev1.Container
	// lastIndex finds a target's entry in the last status by name; built on first use.
	lastIndex map[string]int
	// now and windows are the time decisions are made at and the manager's default maintenance
	// windows; knownSizing the status.sizing of the last resize, when the ScratchVolume as read is
	// older (ReportSettings).
	now         time.Time
	windows     []v1alpha1.MaintenanceWindow
	knownSizing *v1alpha1.SizingStatus
}

type finding struct{ target, reason, message string }

// placedTarget is where a target's temporary data goes, described only if the status shows it: the
// locations are its plan's, which targets planned alike share.
type placedTarget struct {
	target    string
	locations []v1alpha1.TempLocation
}

// ReportSettings are what a report reads besides the ScratchVolume and its targets.
type ReportSettings struct {
	// WriteWar is when the controller stops restoring entries another writer keeps removing.
	WriteWar WriteWarRule
	// Version is the manager's, recorded with what it applies.
	Version string
	// Now is the time decisions are made at; zero keeps the sizing status as it was.
	Now time.Time
	// Windows are the manager's default maintenance windows, which spec.sizing's decision needs.
	Windows []v1alpha1.MaintenanceWindow
	// KnownSizing is the status.sizing written with the last automatic resize, when the
	// ScratchVolume as read does not show it yet; the sizing decision starts from it instead.
	KnownSizing *v1alpha1.SizingStatus
	// Pacing is the reconcile's rollout pacing: which targets are in flight, and whether the
	// rollout stopped; nil when it has none.
	Pacing *Pacing
	// InvalidSelector says why spec.target.selector cannot be parsed, when it cannot: nothing is
	// selected then.
	InvalidSelector string
}

// Synced is what the sync of a ScratchVolume's targets left: how many StatefulSets it selects, and
// each one it synced, in order. A reconcile that ended early synced fewer than it found.
type Synced struct {
	Found   int
	Targets []Target
}

// Target is one selected StatefulSet as its sync left it.
type Target struct {
	StatefulSet *appsv1.StatefulSet
	// Outcome is the ScratchVolume's on it; nil when it was not planned.
	Outcome *Outcome
	// RecheckAt is when the controller must look at the target again at the latest, zero when
	// nothing asks for it: the StatefulSet misses pods, and the grace for them ends then.
	RecheckAt time.Time
}

// NewReport is the report of one reconcile of sv: what its sync left on each target, and what
// the status reads besides.
func NewReport(sv *v1alpha1.ScratchVolume, s ReportSettings, synced Synced) *Report {
	rep := &Report{sv: sv, cms: map[string]bool{}, containers: map[string]*corev1.Container{}, rule: s.WriteWar.OrDefaults(),
		version: s.Version, now: s.Now, windows: s.Windows, knownSizing: s.KnownSizing, pacing: s.Pacing, invalidSelector: s.InvalidSelector,
		targetsFound: synced.Found, targets: make([]v1alpha1.ScratchTargetStatus, 0, len(synced.Targets))}
	for _, t := range synced.Targets {
		rep.add(t.StatefulSet, t.Outcome)
		if !t.RecheckAt.IsZero() {
			rep.wakeAt(t.RecheckAt)
		}
	}
	return rep
}

// add records the outcome for one target StatefulSet.
func (rep *Report) add(sts *appsv1.StatefulSet, o *Outcome) {
	ts := v1alpha1.ScratchTargetStatus{
		Name: sts.Name, ReadyReplicas: sts.Status.ReadyReplicas, UpdatedReplicas: sts.Status.UpdatedReplicas,
		Replicas: replicas(sts),
	}
	if o == nil {
		ts.Message = "not planned"
	} else {
		switch s := o.State.(type) {
		case Injected:
			rep.injected(sts, s, &ts)
		case Blocked:
			rep.blocked(sts, s.Problem, s.Kept, &ts)
		case Refused:
			rep.blocked(sts, s.Problem(), false, &ts)
			ts.Refused = s.Record
		case Held:
			rep.held(sts, s, &ts)
		case Waiting:
			rep.waiting(sts, s, &ts)
		case Queued:
			rep.waitingForSlot(sts, s, &ts)
		}
		rep.guarded(o.Guard, &ts)
	}
	ts.RestartsAtOnce = RestartsOf(sts).AtOnce
	if rep.pacing != nil {
		if since, ok := rep.pacing.Since[sts.Name]; ok {
			ts.InFlightSince = &metav1.Time{Time: since}
			rep.wakeAt(since.Add(rep.pacing.Deadline))
		}
	}
	rep.targets = append(rep.targets, ts)
}

// guarded copies a target's restore history into its status and notes when it needs a reconcile.
func (rep *Report) guarded(g Guard, ts *v1alpha1.ScratchTargetStatus) {
	ts.Restores, ts.WriteWar = g.Restores, g.War
	if at := rep.rule.Wake(g); !at.IsZero() {
		rep.wakeAt(at)
	}
}

// held records a target the controller holds off writing because another writer keeps removing
// its entries. The hash stays, so that the next write is known as a restore.
func (rep *Report) held(sts *appsv1.StatefulSet, s Held, ts *v1alpha1.ScratchTargetStatus) {
	msg := FightMessage(sts.Name, s.War, rep.rule)
	rep.problems = append(rep.problems, finding{sts.Name, v1alpha1.ReasonFightingAnotherWriter, msg})
	ts.Message, ts.ConfigHash, ts.Container = msg, s.Hash, s.Plan.Container
	ts.Injected = sts.Spec.Template.Annotations[rep.sv.InjectionAnnotation()] == s.Hash
	if s.Plan.ConfigVolume != nil {
		rep.cms[rep.sv.ConfigMapName(sts.Name)] = true
	}
}

// WriteFailed is the outcome for sv on sts when the write failed with err: not injected as
// planned, whatever the StatefulSet carried before, which stays.
func WriteFailed(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, err error) *Outcome {
	_, kept := sts.Spec.Template.Annotations[sv.InjectionAnnotation()]
	return &Outcome{SV: sv, State: Blocked{Kept: kept, Problem: &inject.Problem{
		Reason:  v1alpha1.ReasonWriteFailed,
		Message: fmt.Sprintf("%v; the controller retries with a growing delay", err),
	}}}
}

// Denied is the outcome for sv on sts when admission control refused the change with message. An
// injection the StatefulSet already carries stays in place, and so does its ConfigMap.
func Denied(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, message string) *Outcome {
	_, kept := sts.Spec.Template.Annotations[sv.InjectionAnnotation()]
	return &Outcome{SV: sv, State: Blocked{Kept: kept, Problem: &inject.Problem{
		Reason: v1alpha1.ReasonAdmissionDenied,
		Message: fmt.Sprintf("admission control refused the change: %s; the controller tries again when the StatefulSet changes, and every %d minutes",
			message, int(AdmissionRetryInterval.Minutes())),
	}}}
}

// waiting records a target whose change waits for approval or a maintenance window: it keeps the
// configuration it carries, reported as the last status had it, and the change is reported beside.
func (rep *Report) waiting(sts *appsv1.StatefulSet, w Waiting, ts *v1alpha1.ScratchTargetStatus) {
	carried := sts.Spec.Template.Annotations[rep.sv.InjectionAnnotation()]
	ts.Injected, ts.ConfigHash, ts.Container, ts.PendingChange, ts.Applied = true, carried, w.Plan.Container, w.Change, w.Applied
	if last := rep.last(sts.Name); last != nil {
		ts.Flavor, ts.Version, ts.Injection, ts.TempLocations, ts.TempSpace = last.Flavor, last.Version, last.Injection, last.TempLocations, last.TempSpace
	}
	// The drop-in the carried configuration mounts stays.
	rep.cms[rep.sv.ConfigMapName(sts.Name)] = true
	msg := fmt.Sprintf("change %s waits: %s; applied, it %s", w.Change.ID, w.Change.Reason, RestartsOf(sts))
	if w.Change.NextWindow != nil {
		rep.wakeAt(w.Change.NextWindow.Time)
	}
	rep.pending = append(rep.pending, finding{sts.Name, w.Reason, msg})
	if reason, msg, done := rollout(sts, carried, rep.rolledOutBefore(sts.Name, carried)); !done {
		rep.rollout = append(rep.rollout, finding{sts.Name, reason, msg})
	}
}

// waitingForSlot records a target whose change waits for the targets in flight: it keeps what it
// carries, reported as the last status had it.
func (rep *Report) waitingForSlot(sts *appsv1.StatefulSet, q Queued, ts *v1alpha1.ScratchTargetStatus) {
	ts.Message = q.Note + "; when its turn comes, the change " + RestartsOf(sts).String()
	if q.Kept {
		ts.Injected, ts.ConfigHash = true, sts.Spec.Template.Annotations[rep.sv.InjectionAnnotation()]
		rep.cms[rep.sv.ConfigMapName(sts.Name)] = true
		if last := rep.last(sts.Name); last != nil {
			ts.Container, ts.Flavor, ts.Version, ts.Injection, ts.TempLocations, ts.TempSpace, ts.Applied =
				last.Container, last.Flavor, last.Version, last.Injection, last.TempLocations, last.TempSpace, last.Applied
		}
	} else {
		rep.queued = append(rep.queued, finding{sts.Name, v1alpha1.ReasonWaitingForRolloutSlot, q.Note})
	}
	rep.rollout = append(rep.rollout, finding{sts.Name, v1alpha1.ReasonWaitingForRolloutSlot, q.Note})
}

// last is target's entry in the last status, nil when it had none.
func (rep *Report) last(target string) *v1alpha1.ScratchTargetStatus {
	if rep.lastIndex == nil {
		rep.lastIndex = make(map[string]int, len(rep.sv.Status.Targets))
		for i := range rep.sv.Status.Targets {
			if _, dup := rep.lastIndex[rep.sv.Status.Targets[i].Name]; !dup {
				rep.lastIndex[rep.sv.Status.Targets[i].Name] = i
			}
		}
	}
	if i, ok := rep.lastIndex[target]; ok {
		return &rep.sv.Status.Targets[i]
	}
	return nil
}

// wakeAt asks for a reconcile at t, unless an earlier one is asked for.
func (rep *Report) wakeAt(t time.Time) {
	if rep.wake.IsZero() || t.Before(rep.wake) {
		rep.wake = t
	}
}

// blocked records a target blocked by p; kept says the earlier injection stays in place.
func (rep *Report) blocked(sts *appsv1.StatefulSet, p *inject.Problem, kept bool, ts *v1alpha1.ScratchTargetStatus) {
	if p.Reason == v1alpha1.ReasonAdmissionDenied {
		rep.denials++
	}
	f := finding{sts.Name, p.Reason, p.Message}
	if p.Reason == v1alpha1.ReasonMemoryBudget {
		rep.memory = append(rep.memory, f)
	} else {
		rep.problems = append(rep.problems, f)
	}
	ts.Message = p.Message
	if kept {
		ts.Injected = true
		ts.ConfigHash = sts.Spec.Template.Annotations[rep.sv.InjectionAnnotation()]
		ts.Message += " (the earlier injection stays in place until this is fixed)"
		rep.cms[rep.sv.ConfigMapName(sts.Name)] = true
		if last := rep.last(sts.Name); last != nil {
			ts.Applied = last.Applied
		}
	}
}

func (rep *Report) injected(sts *appsv1.StatefulSet, o Injected, ts *v1alpha1.ScratchTargetStatus) {
	plan := o.Plan
	ts.Injected, ts.Container, ts.ConfigHash = true, plan.Container, o.Hash
	if rep.specHash == "" {
		rep.specHash = SpecHash(rep.sv)
	}
	ts.Applied = &v1alpha1.AppliedConfig{Generation: rep.sv.Generation, SpecHash: rep.specHash, TemplateHash: o.TemplateHash, Version: rep.version}
	if o.TemplateHash == "" {
		if last := rep.last(sts.Name); last != nil && last.Applied != nil {
			ts.Applied.TemplateHash = last.Applied.TemplateHash
		}
	}
	if o.Container != nil {
		rep.containers[sts.Name] = o.Container
	}
	if plan.Profile != nil {
		ts.Flavor, ts.Version = plan.Profile.Flavor, plan.Profile.Version.String()
		ts.Injection, ts.TempLocations, ts.TempSpace = plan.Injection, plan.Locations, plan.TempSpace
		rep.placed = append(rep.placed, placedTarget{sts.Name, plan.Locations})
	}
	if plan.ConfigVolume != nil {
		rep.cms[rep.sv.ConfigMapName(sts.Name)] = true
	}
	for _, n := range plan.Notes {
		f := finding{sts.Name, n.Reason, n.Message}
		switch n.Reason {
		case v1alpha1.ReasonNoMemoryLimit, v1alpha1.ReasonMemoryBudgetCovered, v1alpha1.ReasonMemoryReserved, v1alpha1.ReasonMemoryNotAccounted:
			rep.memory = append(rep.memory, f)
		default:
			rep.notes = append(rep.notes, f)
		}
	}
	if reason, msg, done := rollout(sts, o.Hash, rep.rolledOutBefore(sts.Name, o.Hash)); !done {
		rep.rollout = append(rep.rollout, finding{sts.Name, reason, msg})
	}
}

// ConfigMaps are the names of the drop-in ConfigMaps the reported targets need.
func (rep *Report) ConfigMaps() map[string]bool { return rep.cms }

func replicas(sts *appsv1.StatefulSet) int32 {
	if sts.Spec.Replicas == nil {
		return 1
	}
	return *sts.Spec.Replicas
}

// rollout tells whether every pod of sts runs the template carrying hash, honoring the
// StatefulSet's own update strategy. settled says the last status had sts rolled out with hash.
func rollout(sts *appsv1.StatefulSet, hash string, settled bool) (reason, message string, done bool) {
	want := replicas(sts)
	switch {
	case !hasHash(sts, hash):
		return v1alpha1.ReasonRollingOut, "the pod template was just updated; the StatefulSet controller has not picked it up yet", false
	case settled && sts.Status.CurrentRevision == sts.Status.UpdateRevision:
		// No rollout began since: a scale or a label bumps the generation, and new pods come
		// from the revision every pod already runs, so neither makes the injection roll out again.
		return v1alpha1.ReasonRolledOut, "", true
	case sts.Status.ObservedGeneration < sts.Generation:
		return v1alpha1.ReasonWaitingForController, fmt.Sprintf("the StatefulSet controller has not observed generation %d yet", sts.Generation), false
	case sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType && sts.Status.UpdatedReplicas < want:
		return v1alpha1.ReasonOnDelete, fmt.Sprintf("updateStrategy is OnDelete: %d of %d pods run the injected template; delete the others to finish",
			sts.Status.UpdatedReplicas, want), false
	case partition(sts) > 0 && sts.Status.UpdatedReplicas < want:
		return v1alpha1.ReasonPartitioned, fmt.Sprintf("rollingUpdate.partition %d keeps pods 0..%d on the old template; %d of %d pods run the injected one",
			partition(sts), partition(sts)-1, sts.Status.UpdatedReplicas, want), false
	case sts.Status.UpdatedReplicas < want || sts.Status.CurrentRevision != sts.Status.UpdateRevision:
		return v1alpha1.ReasonRollingOut, fmt.Sprintf("%d of %d pods run the injected template", sts.Status.UpdatedReplicas, want), false
	}
	return v1alpha1.ReasonRolledOut, "", true
}

func hasHash(sts *appsv1.StatefulSet, hash string) bool {
	for k, v := range sts.Spec.Template.Annotations {
		if strings.HasPrefix(k, v1alpha1.InjectionAnnotationPrefix) && v == hash {
			return true
		}
	}
	return false
}

func partition(sts *appsv1.StatefulSet) int32 {
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

// rolledOutBefore reports whether the ScratchVolume's last status had target rolled out with the
// configuration hash: the ScratchVolume was RolledOut, and the target carried hash then.
func (rep *Report) rolledOutBefore(target, hash string) bool {
	if !meta.IsStatusConditionTrue(rep.sv.Status.Conditions, v1alpha1.ConditionRolledOut) {
		return false
	}
	for _, t := range rep.sv.Status.Targets {
		if t.Name == target {
			return t.Injected && t.ConfigHash == hash
		}
	}
	return false
}
