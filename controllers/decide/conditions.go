package decide

// This file decides the ScratchVolume's conditions from the report, and the sentences they say.

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// conditions turns the report into the ScratchVolume's conditions.
func (rep *Report) conditions() []metav1.Condition {
	gen := rep.sv.Generation
	c := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	var conflicts, blockers []finding
	for _, p := range rep.problems {
		if conflictReasons[p.reason] {
			conflicts = append(conflicts, p)
		} else {
			blockers = append(blockers, p)
		}
	}
	found := c(v1alpha1.ConditionTargetFound, rep.targetsFound > 0, v1alpha1.ReasonTargetFound,
		fmt.Sprintf("%d StatefulSet(s) selected", rep.targetsFound))
	if rep.targetsFound == 0 {
		found.Reason, found.Message = rep.notFound()
	}
	conflict := c(v1alpha1.ConditionConflict, len(conflicts) > 0, v1alpha1.ReasonNoConflict, "nothing in the way")
	if len(conflicts) > 0 {
		conflict.Reason, conflict.Message = conflicts[0].reason, summarize(conflicts)
	}
	memory := rep.memoryCondition(c)
	injected := rep.injectedCondition(c, append(append([]finding{}, blockers...), append(conflicts, rep.memoryBlocked()...)...))
	if injected.Status == metav1.ConditionTrue && len(rep.queued) > 0 {
		injected = c(v1alpha1.ConditionInjected, false, v1alpha1.ReasonWaitingForRolloutSlot, fmt.Sprintf(
			"%d of %d StatefulSet(s) carry the volume; the others wait for the targets in flight: %s", rep.targetsFound-len(rep.queued), rep.targetsFound, summarize(rep.queued)))
	}
	rollout := rep.rollout
	if rep.pacing != nil && rep.pacing.Stopped != "" {
		rollout = append([]finding{{rep.pacing.Stopped, v1alpha1.ReasonRolloutStopped, rep.pacing.stoppedMessage()}}, rollout...)
	}
	if rep.pacing != nil && rep.pacing.Refused != "" {
		rollout = append([]finding{{rep.pacing.Refused, v1alpha1.ReasonRolloutStopped, rep.pacing.refusedMessage()}}, rollout...)
	}
	rolled := c(v1alpha1.ConditionRolledOut, len(rollout) == 0 && injected.Status == metav1.ConditionTrue, v1alpha1.ReasonRolledOut,
		"every pod runs the injected template")
	if len(rollout) > 0 {
		rolled.Reason, rolled.Message = rollout[0].reason, summarize(rollout)
	} else if injected.Status != metav1.ConditionTrue {
		rolled.Reason, rolled.Message = injected.Reason, "nothing to roll out until the injection succeeds"
	}
	ready := c(v1alpha1.ConditionReady, true, v1alpha1.ReasonReady, "every target is injected and rolled out")
	if len(rep.placed) > 0 {
		ready.Message += "; " + summarizeFirst(len(rep.placed), func(i int) string {
			return rep.placed[i].target + ": " + DescribeLocations(rep.placed[i].locations)
		})
	}
	for _, cond := range []metav1.Condition{found, injected, rolled} {
		if cond.Status != metav1.ConditionTrue {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, cond.Reason, cond.Message
			break
		}
	}
	if rep.failure != nil && ready.Status == metav1.ConditionTrue {
		// Every target looks right, but a step after them failed: nothing says all is well.
		ready.Status, ready.Reason = metav1.ConditionUnknown, v1alpha1.ReasonReconcileFailed
		ready.Message = fmt.Sprintf("%v; the controller retries with a growing delay", rep.failure)
	}
	return []metav1.Condition{ready, found, memory, injected, rolled, conflict, rep.pendingCondition(c)}
}

// pendingCondition says which changes nobody wrote wait, and how to let them through.
func (rep *Report) pendingCondition(c func(string, bool, string, string) metav1.Condition) metav1.Condition {
	if len(rep.pending) == 0 {
		return c(v1alpha1.ConditionChangesPending, false, v1alpha1.ReasonNoPendingChanges, "every target carries what the manager renders for it")
	}
	reason := rep.pending[0].reason
	for _, p := range rep.pending {
		if p.reason == v1alpha1.ReasonAwaitingApproval {
			reason = p.reason
		}
	}
	how := fmt.Sprintf("approve one with kubectl annotate scratchvolume %s %s=<id> (several ids separated by commas), or declare spec.changes.maintenanceWindows",
		rep.sv.Name, v1alpha1.ApproveChangeAnnotation)
	if reason == v1alpha1.ReasonAwaitingWindow {
		how = fmt.Sprintf("they apply in the next maintenance window, or at once when approved with kubectl annotate scratchvolume %s %s=<id>",
			rep.sv.Name, v1alpha1.ApproveChangeAnnotation)
	}
	return c(v1alpha1.ConditionChangesPending, true, reason, fmt.Sprintf(
		"%d StatefulSet(s) keep their configuration while a change that would restart their pods waits (status.targets[].pendingChange says what it changes); %s; %s",
		len(rep.pending), how, summarize(rep.pending)))
}

// notFound is why no target was found: the selector cannot be parsed, or nothing matches yet.
func (rep *Report) notFound() (reason, message string) {
	if rep.invalidSelector != "" {
		return v1alpha1.ReasonInvalidSelector, rep.invalidSelector
	}
	return v1alpha1.ReasonTargetNotFound, rep.noTargetMessage()
}

func (rep *Report) noTargetMessage() string {
	if n := rep.sv.Spec.Target.Name; n != "" {
		return fmt.Sprintf("no StatefulSet %q in namespace %s yet; it is injected as soon as it appears", n, rep.sv.Namespace)
	}
	return fmt.Sprintf("no StatefulSet in namespace %s matches the selector yet; matching ones are injected as they appear", rep.sv.Namespace)
}

func (rep *Report) memoryBlocked() []finding {
	var out []finding
	for _, m := range rep.memory {
		if m.reason == v1alpha1.ReasonMemoryBudget {
			out = append(out, m)
		}
	}
	return out
}

func (rep *Report) memoryCondition(c func(string, bool, string, string) metav1.Condition) metav1.Condition {
	if blocked := rep.memoryBlocked(); len(blocked) > 0 {
		return c(v1alpha1.ConditionMemoryBudget, false, blocked[0].reason, summarize(blocked))
	}
	for _, m := range rep.memory {
		if m.reason == v1alpha1.ReasonNoMemoryLimit {
			cond := c(v1alpha1.ConditionMemoryBudget, false, m.reason, summarize([]finding{m}))
			cond.Status = metav1.ConditionUnknown
			return cond
		}
	}
	if len(rep.memory) == 0 {
		cond := c(v1alpha1.ConditionMemoryBudget, false, v1alpha1.ReasonNotInjected, fmt.Sprintf(
			"no memory to account for: none of the %d StatefulSet(s) found is planned for injection; the Injected condition says why",
			rep.targetsFound))
		if rep.targetsFound == 0 {
			cond.Reason, _ = rep.notFound()
			cond.Message = "no target to account memory for"
		}
		cond.Status = metav1.ConditionUnknown
		return cond
	}
	return c(v1alpha1.ConditionMemoryBudget, true, rep.memory[0].reason, summarize(rep.memory))
}

func (rep *Report) injectedCondition(c func(string, bool, string, string) metav1.Condition, blocked []finding) metav1.Condition {
	switch {
	case rep.targetsFound == 0:
		reason, msg := rep.notFound()
		return c(v1alpha1.ConditionInjected, false, reason, msg)
	case len(blocked) > 0:
		return c(v1alpha1.ConditionInjected, false, blocked[0].reason, summarize(blocked)+"; the StatefulSet was left untouched")
	}
	if unreported := rep.targetsFound - len(rep.targets); unreported > 0 {
		// The reconcile ended before these targets were synced: nobody knows what they carry.
		cond := c(v1alpha1.ConditionInjected, false, v1alpha1.ReasonReconcileFailed,
			fmt.Sprintf("%d of %d StatefulSet(s) not synced yet", unreported, rep.targetsFound))
		if rep.failure != nil {
			cond.Message += fmt.Sprintf(": %v", rep.failure)
		}
		cond.Status = metav1.ConditionUnknown
		return cond
	}
	msg := fmt.Sprintf("%d StatefulSet(s) carry the volume", rep.targetsFound)
	if len(rep.notes) > 0 {
		msg += "; " + summarize(rep.notes)
	}
	return c(v1alpha1.ConditionInjected, true, v1alpha1.ReasonInjected, msg)
}

// DescribeLocations says in one sentence which temporary data moved to RAM and which stays on disk,
// as status.targets[].tempLocations has it in detail.
func DescribeLocations(locs []v1alpha1.TempLocation) string {
	var ram, disk []string
	for _, l := range locs {
		name := tempDataNames[l.Data]
		if name == "" {
			name = string(l.Data)
		}
		if l.Medium == v1alpha1.TempMediumMemory {
			ram = append(ram, name)
		} else {
			disk = append(disk, name)
		}
	}
	msg := "in RAM: " + strings.Join(ram, ", ")
	if len(disk) > 0 {
		msg += "; on disk: " + strings.Join(disk, ", ")
	}
	return msg
}

// tempDataNames are the kinds of temporary data as messages name them.
var tempDataNames = map[v1alpha1.TempData]string{
	v1alpha1.TempDataTmpdir:                 "tmpdir",
	v1alpha1.TempDataSessionTempTablespaces: "session temporary tablespaces",
	v1alpha1.TempDataGlobalTempTablespace:   "global temporary tablespace (ibtmp1)",
	v1alpha1.TempDataInnoDBTmpdir:           "innodb_tmpdir",
	v1alpha1.TempDataReplicaLoad:            "replica load directory",
	v1alpha1.TempDataSST:                    "Galera SST staging",
}

// summarize joins findings into one message, bounded so that a large fleet stays readable.
func summarize(fs []finding) string {
	return summarizeFirst(len(fs), func(i int) string { return fs[i].target + ": " + fs[i].message })
}

// summarizeFirst joins the first of n items, as item describes them, and counts the rest: a
// selector's reconcile has one item for each of hundreds of targets, and shows five.
func summarizeFirst(n int, item func(i int) string) string {
	const maxShown = 5
	shown := make([]string, min(n, maxShown))
	for i := range shown {
		shown[i] = item(i)
	}
	return conditions.ListFirst(shown, n)
}
