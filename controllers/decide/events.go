package decide

// This file decides which Events a sync and a status change ask for, and what they say. Package
// controllers gathers and records them.

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/capacity"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// Event reasons and actions, predefined so that users can filter on them
// (`kubectl get events --field-selector reason=Injected`).
const (
	// EventInjected: the ScratchVolume's entries were added to a StatefulSet.
	EventInjected = "Injected"
	// EventUpdated: the injected entries of a StatefulSet changed (new size, image, layout…).
	EventUpdated = "Updated"
	// EventRestored: entries removed by another field manager or by hand were put back.
	EventRestored = "Restored"
	// EventReverted: the ScratchVolume's entries were removed from a StatefulSet.
	EventReverted = "Reverted"
	// EventBlocked: the StatefulSet was left untouched; the note says what the user must change.
	EventBlocked = "InjectionBlocked"
	// EventMemoryWarning: the injection goes ahead, but nothing bounds tmpfs plus the database.
	EventMemoryWarning = "MemoryNotBounded"
	// EventFightingAnotherWriter: another writer kept removing the entries from a StatefulSet, and
	// the controller stopped restoring them; recorded once per fight.
	EventFightingAnotherWriter = "FightingAnotherWriter"
	// EventScratchVolumeFull: a node agent found a pod's RAM volume full; recorded once per time
	// it filled up.
	EventScratchVolumeFull = "ScratchVolumeFull"
	// EventPodsRefused: the API server refused to create the pods of the revision that carried the
	// injection, and the controller put the StatefulSet back; recorded once per refusal.
	EventPodsRefused = "PodCreationRefused"

	// ActionInject, ActionRevert, ActionCheck and ActionHold are the Events' actions.
	ActionInject = "Inject"
	ActionRevert = "Revert"
	ActionCheck  = "Check"
	ActionHold   = "Hold"
)

// Change is what a sync did to one StatefulSet for one ScratchVolume, as its Event tells it.
type Change struct {
	SV             *v1alpha1.ScratchVolume
	Reason, Action string
	// Note tells the change of this StatefulSet alone.
	Note string
	// Many opens the note that tells it of several: "Injected a 256Mi RAM volume into".
	Many string
}

// Changes are the changes a write of desired over observed made to sts, one for each ScratchVolume
// whose entries changed; restored names what it put back that another writer had removed.
func Changes(sts *appsv1.StatefulSet, outcomes map[string]*Outcome, desired, observed inject.Entries, restored []string) []Change {
	var out []Change
	for _, o := range outcomes {
		s, ok := o.Injecting()
		if !ok {
			continue
		}
		key := o.SV.InjectionAnnotation()
		before, had := observed.Annotations[key]
		size := quantity.Exact(o.SV.Spec.Size)
		switch {
		case !had && wrote(o.SV, sts.Name, s.Hash):
			out = append(out, Change{o.SV, EventRestored, ActionInject,
				fmt.Sprintf("Restored the injection in StatefulSet %s, which another field manager or a hand edit removed (%s)", sts.Name, conditions.Names(restored, 4)),
				"Restored the injection, which another field manager or a hand edit removed, in"})
		case !had:
			out = append(out, Change{o.SV, EventInjected, ActionInject,
				fmt.Sprintf("Injected a %s RAM volume at %s into container %s of StatefulSet %s%s", size, s.Plan.Mount.MountPath, s.Plan.Container, sts.Name, placement(s.Plan)),
				fmt.Sprintf("Injected a %s RAM volume into", size)})
		case before != desired.Annotations[key] && s.Applying != "":
			out = append(out, Change{o.SV, EventUpdated, ActionInject,
				fmt.Sprintf("Updated the injection in StatefulSet %s (config hash %s -> %s), a change nobody wrote in the ScratchVolume or the StatefulSet, %s%s",
					sts.Name, before, desired.Annotations[key], s.Applying, placement(s.Plan)),
				fmt.Sprintf("Updated the injection, a change nobody wrote, %s, in", s.Applying)})
		case before != desired.Annotations[key]:
			out = append(out, Change{o.SV, EventUpdated, ActionInject,
				fmt.Sprintf("Updated the injection in StatefulSet %s (config hash %s -> %s)%s", sts.Name, before, desired.Annotations[key], placement(s.Plan)),
				"Updated the injection in"})
		default:
			out = append(out, Change{o.SV, EventRestored, ActionInject,
				fmt.Sprintf("Restored entries of StatefulSet %s that another field manager or a hand edit removed", sts.Name),
				"Restored entries that another field manager or a hand edit removed in"})
		}
	}
	return out
}

// Reverted is the change of a StatefulSet sv no longer selects, whose entries a sync removed.
func Reverted(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) Change {
	return Change{sv, EventReverted, ActionRevert,
		"Removed the RAM volume and its settings from StatefulSet " + sts.Name,
		"Removed the RAM volume and its settings from"}
}

// placement is the Event's account of where the temporary data goes, for a MySQLTmpdir plan.
func placement(p *inject.Plan) string {
	if len(p.Locations) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s); %s", p.Injection, DescribeLocations(p.Locations))
}

// Warning is a Warning Event to record about a ScratchVolume.
type Warning struct{ Reason, Action, Note string }

// NewProblems are the Warnings a status change asks for: one per condition among Injected and
// MemoryBudget that turned to a problem the user must fix, or says another one now. A fight with
// another writer is left out: it was warned of once when it began.
func NewProblems(last, next *v1alpha1.ScratchVolumeStatus) []Warning {
	var out []Warning
	for _, t := range []string{v1alpha1.ConditionInjected, v1alpha1.ConditionMemoryBudget} {
		cur := meta.FindStatusCondition(next.Conditions, t)
		old := meta.FindStatusCondition(last.Conditions, t)
		if cur == nil || cur.Status == metav1.ConditionTrue || cur.Reason == v1alpha1.ReasonTargetNotFound ||
			(old != nil && old.Message == cur.Message) {
			continue
		}
		if cur.Reason == v1alpha1.ReasonFightingAnotherWriter {
			continue // warned once when the fight began
		}
		reason := EventBlocked
		if cur.Reason == v1alpha1.ReasonNoMemoryLimit {
			reason = EventMemoryWarning
		}
		out = append(out, Warning{reason, ActionCheck, cur.Message})
	}
	return out
}

// PodsRefused is the Warning of a refused pod creation, quoting the API server.
func PodsRefused(rec *v1alpha1.RolloutRefusal) Warning {
	return Warning{EventPodsRefused, ActionRevert, RefusalMessage(rec)}
}

// FightBegan is the Warning of a fight with another writer over sts, recorded once for each
// ScratchVolume whose plan it holds off.
func FightBegan(sts string, war *v1alpha1.WriteWar, rule WriteWarRule) Warning {
	return Warning{EventFightingAnotherWriter, ActionHold, FightMessage(sts, war, rule)}
}

// FullVolumes are the Warnings of the pods whose volume filled up since the last status, one per
// pod, saying what to do; rec is the recommended size, nil when there is none.
func FullVolumes(episodes []capacity.Episode, rec *resource.Quantity) []Warning {
	out := make([]Warning, 0, len(episodes))
	for _, e := range episodes {
		times := "was found full"
		if e.New > 1 {
			times = fmt.Sprintf("was found full %d times", e.New)
		}
		advice := "raise spec.size together with the container's memory"
		if rec != nil {
			advice = fmt.Sprintf("raise spec.size (status.recommendedSize says %s) together with the container's memory", quantity.Approx(rec.Value()))
		}
		out = append(out, Warning{EventScratchVolumeFull, ActionCheck, fmt.Sprintf(
			"the %s RAM volume of pod %s %s (%d time(s) since %s): writes of temporary data there fail with \"No space left on device\"; %s, or find the query that spills this much",
			quantity.Approx(e.SizeBytes), e.Pod, times, e.Total, e.SampledSince.UTC().Format("2006-01-02T15:04:05Z"), advice)})
	}
	return out
}
