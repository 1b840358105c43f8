package decide

// This file names what can become of one ScratchVolume on one StatefulSet. Each state is a type of
// its own that holds what is true in it and nothing else: a blocked target has a problem and no
// plan, a held one a plan and the write war that holds it, a refused one the API server's refusal.
// PlanTarget gives each outcome Injected or Blocked, then the refusals, the gate, the write-war
// rule and the rollout pacing replace that state with another, never changing one in place.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// Outcome is what became of one ScratchVolume on one StatefulSet.
type Outcome struct {
	SV    *v1alpha1.ScratchVolume
	State State
	// Guard is the StatefulSet's restore history, for the status.
	Guard Guard
}

// State is one of Injected, Blocked, Refused, Held, Waiting and Queued.
type State interface{ isState() }

// Injected is a plan the StatefulSet carries, or that the sync writes.
type Injected struct {
	Plan *inject.Plan
	// Hash is the plan's configuration hash, read here: a settled plan is shared by the targets
	// planned alike and has none (fleetcache.SettledPlan).
	Hash string
	// Container is the container that gets the volume (PlannedContainer).
	Container *corev1.Container
	// TemplateHash is the StatefulSet's pod template as its owner wrote it (TemplateHash): the
	// status records it with what was applied. Empty when the gate did not look at the template.
	TemplateHash string
	// Applying says why a change nobody wrote is written now; empty for a change the user made.
	Applying Applying
	// Urgent says the change keeps data safe: it is written at once, paced or not.
	Urgent bool
}

// Blocked is a ScratchVolume that gets no plan on the StatefulSet, for Problem.
type Blocked struct {
	Problem *inject.Problem
	// Kept says the earlier injection stays in place untouched until the problem is fixed.
	Kept bool
}

// Refused is an injection whose pods the API server refused to create: the injection is taken
// back at once, paced or not, and not made again until something it was decided from changes
// (refuse).
type Refused struct {
	Record *v1alpha1.RolloutRefusal
	// Fresh says this sync found the refusal (Gate.Refused), which the status did not record yet:
	// its Warning is recorded once the revert is written.
	Fresh bool
}

// Problem is what the status says of a refused injection.
func (s Refused) Problem() *inject.Problem {
	return &inject.Problem{Reason: v1alpha1.ReasonPodsRefused, Message: RefusalMessage(s.Record)}
}

// Held is a plan the controller holds off writing because another writer keeps removing it.
type Held struct {
	Plan *inject.Plan
	// Hash is the plan's: the status keeps it, so that the next write is known as a restore.
	Hash string
	War  *v1alpha1.WriteWar
}

// Waiting is a change nobody wrote, held back by the gate until it is approved or a maintenance
// window opens: the StatefulSet keeps the configuration it carries.
type Waiting struct {
	// Plan is the plan that would be written.
	Plan   *inject.Plan
	Change *v1alpha1.PendingChange
	// Applied is the record of what the configuration the target keeps was rendered from, as
	// complete as it can be: from now on, an edit of the spec or the template is told apart.
	Applied *v1alpha1.AppliedConfig
	// Reason is AwaitingApproval or AwaitingMaintenanceWindow.
	Reason string
}

// Queued is a change that waits for the targets in flight (Pacing) before it starts a rollout.
type Queued struct {
	// Note says why, for the status.
	Note string
	// Kept says the StatefulSet carries an earlier injection, which stays until the turn comes.
	Kept bool
}

func (Injected) isState() {}
func (Blocked) isState()  {}
func (Refused) isState()  {}
func (Held) isState()     {}
func (Waiting) isState()  {}
func (Queued) isState()   {}

// keeps reports whether the StatefulSet keeps the injection it carries for o untouched: the write
// leaves its entries as they are.
func (o *Outcome) keeps() bool {
	switch s := o.State.(type) {
	case Blocked:
		return s.Kept
	case Queued:
		return s.Kept
	case Waiting:
		return true
	}
	return false
}

// BlockedBy is the reason the target is left as it is, blocked or held off; "" when it is not.
func (o *Outcome) BlockedBy() string {
	switch s := o.State.(type) {
	case Blocked:
		return s.Problem.Reason
	case Refused:
		return v1alpha1.ReasonPodsRefused
	case Held:
		return v1alpha1.ReasonFightingAnotherWriter
	}
	return ""
}

// Injecting is o's state when it is Injected.
func (o *Outcome) Injecting() (Injected, bool) {
	s, ok := o.State.(Injected)
	return s, ok
}
