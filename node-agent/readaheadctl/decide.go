package readaheadctl

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

// input is what one pass gathers about the node. Nothing in it is read from a device: the
// decision of who owns what must not depend on values someone may be changing right now.
type input struct {
	nodeLabels   map[string]string
	policies     []*v1alpha1.ReadAheadPolicy
	inventory    *readahead.Inventory
	inventoryErr error
	saved        []readahead.Entry
	stateErr     error
}

// plan says which policy owns which device and which saved devices go back to their original.
type plan struct {
	// targets are the devices some policy owns, in natural name order.
	targets []target
	// restores are saved devices that no policy owns any more.
	restores []readahead.Entry
	// problems are what the policies asked for and could not get on this node.
	problems []problem
	// blocked, when set, forbids every change: the agent cannot know the originals (corrupt
	// state file) or the devices (unreadable sysfs), and never acts on a guess.
	blocked *problem
	// saved is the state file's content, for reporting when the devices cannot be read.
	saved []readahead.Entry
}

// target is a device and the policy that won it.
type target struct {
	device readahead.DeviceID
	policy *v1alpha1.ReadAheadPolicy
	// losers are the other policies that select the device, best first.
	losers []string
	// saved is the device's entry in the state file, if the agent has changed it before.
	saved *readahead.Entry
}

// problem is something a user must fix, phrased for a condition and an Event.
type problem struct {
	reason string
	// subject names what the problem is about: a device, "ReadAheadPolicy x" or the state file.
	subject string
	message string
	// policy is the ReadAheadPolicy concerned, if any, for the Event's related object.
	policy string
}

func (p problem) String() string { return p.subject + ": " + p.message }

// decide works out the plan for one node. Policies are taken in name order and devices in the
// inventory's order, so the same input always gives the same plan.
func decide(in input) plan {
	p := plan{saved: in.saved}
	if in.stateErr != nil {
		p.blocked = stateProblem(in.stateErr)
	}
	if in.inventoryErr != nil || in.inventory == nil {
		inv := problem{reason: v1alpha1.ReasonInventoryUnreadable, subject: "block devices", message: fmt.Sprintf(
			"the agent cannot list the node's block devices (%v), so it leaves every read-ahead as it is; "+
				"mount the host's /sys into the agent", in.inventoryErr)}
		if p.blocked == nil {
			p.blocked = &inv
		} else {
			p.problems = append(p.problems, inv)
		}
		return p
	}
	candidates := map[string][]*v1alpha1.ReadAheadPolicy{}
	for _, pol := range byName(in.policies) {
		if !pol.DeletionTimestamp.IsZero() {
			continue
		}
		ok, err := pol.SelectsNode(in.nodeLabels)
		if err != nil {
			p.problems = append(p.problems, problem{reason: v1alpha1.ReasonInvalidNodeSelector, subject: policySubject(pol.Name), policy: pol.Name,
				message: fmt.Sprintf("spec.nodeSelector is invalid (%v); fix it, the policy applies to no node until then", err)})
			continue
		}
		if !ok {
			continue
		}
		sel := in.inventory.Select(pol.Spec.Devices)
		for _, err := range sel.Problems {
			p.problems = append(p.problems, selectionProblem(pol.Name, err))
		}
		for _, d := range sel.Devices {
			candidates[d.Name] = append(candidates[d.Name], pol)
		}
	}
	p.targets = arbitrate(in.inventory, candidates, in.saved)
	if p.blocked == nil {
		p.restores = unowned(in.saved, p.targets)
	}
	return p
}

func byName(policies []*v1alpha1.ReadAheadPolicy) []*v1alpha1.ReadAheadPolicy {
	out := slices.Clone(policies)
	slices.SortFunc(out, func(a, b *v1alpha1.ReadAheadPolicy) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// arbitrate gives each selected device to one policy (readahead.Arbitrate: priority, then age,
// then name) and remembers the others for their Overridden condition.
func arbitrate(inv *readahead.Inventory, candidates map[string][]*v1alpha1.ReadAheadPolicy, saved []readahead.Entry) []target {
	var targets []target
	for i := range inv.Devices {
		d := &inv.Devices[i]
		policies := candidates[d.Name]
		if len(policies) == 0 {
			continue
		}
		a := readahead.Arbitrate(policies)
		t := target{device: d.ID(), policy: a.Winner}
		for _, l := range a.Losers {
			t.losers = append(t.losers, l.Name)
		}
		if j := slices.IndexFunc(saved, func(e readahead.Entry) bool { return e.DeviceID == t.device }); j >= 0 {
			t.saved = &saved[j]
		}
		targets = append(targets, t)
	}
	return targets
}

// unowned returns the saved devices that no target covers. A device whose name now belongs to
// another number is among them: Restore finds it gone and drops its entry.
func unowned(saved []readahead.Entry, targets []target) []readahead.Entry {
	var out []readahead.Entry
	for _, e := range saved {
		if !slices.ContainsFunc(targets, func(t target) bool { return t.device == e.DeviceID }) {
			out = append(out, e)
		}
	}
	return out
}

func policySubject(name string) string { return "ReadAheadPolicy " + name }

func selectionProblem(policy string, err error) problem {
	reason := v1alpha1.ReasonNoDeviceMatched
	var mp *readahead.MountPathError
	if errors.As(err, &mp) {
		reason = v1alpha1.ReasonMountPathUnresolved
	}
	return problem{reason: reason, subject: policySubject(policy), policy: policy,
		message: err.Error() + "; fix spec.devices, or narrow spec.nodeSelector to nodes that have the device"}
}

func stateProblem(err error) *problem {
	reason := v1alpha1.ReasonStateFileCorrupt
	if !errors.Is(err, readahead.ErrCorruptState) {
		reason = v1alpha1.ReasonStateFileUnreadable
	}
	return &problem{reason: reason, subject: "state file", message: err.Error()}
}

// reading is a device's read-ahead as the host reports it before anything is changed.
type reading struct {
	kib int64
	err error
}

// action is what a step does to a device, told apart for the Events.
type action int

const (
	// actionNone: the device already holds what the kernel would keep of the target.
	actionNone action = iota
	// actionApply: the first change; the original is saved before it.
	actionApply
	// actionUpdate: the device holds the agent's last value, but the target moved (the policy
	// changed, or another policy won the device).
	actionUpdate
	// actionRepair: the device holds neither the agent's last value nor the target: someone
	// changed it by hand.
	actionRepair
)

// step is a target with its current value and what to do about it.
type step struct {
	target
	// current is the device's read-ahead, nil when it could not be read.
	current *int64
	// desired is what the kernel keeps of the value the policy asks for (whole pages), so that
	// it compares with current.
	desired int64
	// decision is what readahead.Decide made of current; act applies it as it is.
	decision readahead.Decision
	action   action
	// err says why the device cannot be changed; nothing is tried then.
	err error
}

// assess decides what to do with one device: Decide gives the target for the policy's mode,
// and the saved entry tells a first change, a policy change and a hand change apart.
func assess(t target, r reading) step {
	want := t.policy.Spec.ReadAheadKiB
	s := step{target: t, desired: readahead.KernelKiB(want)}
	if r.err != nil {
		s.err = r.err
		return s
	}
	current := r.kib
	s.current = &current
	d, err := readahead.Decide(t.policy.Spec.Mode, current, want)
	if err != nil {
		s.err = err
		return s
	}
	s.decision = d
	s.desired = readahead.KernelKiB(d.TargetKiB)
	switch {
	case !d.Change:
		s.action = actionNone
	case t.saved == nil || t.saved.AppliedKiB == nil:
		s.action = actionApply
	case current != *t.saved.AppliedKiB:
		s.action = actionRepair
	default:
		s.action = actionUpdate
	}
	return s
}
