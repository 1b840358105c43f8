package fleetcache

// This file remembers, per target StatefulSet, the last decision that found nothing to write, and
// hands it back to the syncs that follow with the same inputs.

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// maxDecisions bounds the remembered decisions: one per target StatefulSet, a few KiB each.
// Past it, an arbitrary one is forgotten and that target is planned again on its next sync.
const maxDecisions = 20000

// Inputs are what a target's decision is made from: the StatefulSet's spec and controller
// and the live ScratchVolumes that select it, oldest first (the order settles conflicts). The
// generation covers every change of the spec, and the UID the StatefulSet's replacement by another
// of the same name; its controller is the one part of its metadata planning reads (an operator's
// StatefulSet is left alone), besides its name. Status and label changes, a GitOps tool's re-apply
// of the same manifest, and the StatefulSet controller's progress through a rollout leave all of
// them as they were, so they need no plan, nor the pod template a plan reads (which the cache does
// not keep, see TrimStatefulSet). A ScratchVolume's generation covers its spec, the only part
// planning reads besides its name, so the status the controller writes on every reconcile changes
// nothing either. The namespace's admission rules are in by a stamp of the parts planning reads
// (inject.Namespace): a LimitRange or a quota's limits changed, the decision is made again.
type Inputs struct {
	uid        types.UID
	generation int64
	controller string
	rules      string
	svs        []svStamp
}

type svStamp struct {
	name       string
	uid        types.UID
	generation int64
}

// InputsOf are the inputs of a decision on sts by svs, oldest first, under the namespace's rules
// stamped rules (inject.Namespace.Stamp).
func InputsOf(sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume, rules string) Inputs {
	in := Inputs{uid: sts.UID, generation: sts.Generation, controller: decide.ControllerName(sts), rules: rules, svs: make([]svStamp, len(svs))}
	for i := range svs {
		in.svs[i] = svStamp{name: svs[i].Name, uid: svs[i].UID, generation: svs[i].Generation}
	}
	return in
}

func (in Inputs) equal(other Inputs) bool {
	if in.uid != other.uid || in.generation != other.generation || in.controller != other.controller || in.rules != other.rules || len(in.svs) != len(other.svs) {
		return false
	}
	for i := range in.svs {
		if in.svs[i] != other.svs[i] {
			return false
		}
	}
	return true
}

func (in Inputs) mentions(sv string) bool {
	for _, s := range in.svs {
		if s.name == sv {
			return true
		}
	}
	return false
}

// decision is the states of a target's outcomes, without their ScratchVolumes (held by position
// in the inputs' order) and without the write-war guard, which moves with the clock. Each is
// Injected or Blocked, the states of a decision that writes nothing and depends on nothing but its
// inputs. An Injected plan is the part of it a sync that writes nothing reads (SettledPlan) but
// its hash, and like the container it is shared by every target given an equal one (sharedPlans,
// sharedContainers): the targets of one ScratchVolume over a fleet of one kind of server are
// planned alike but for the hash, which covers the name of each one's drop-in ConfigMap. States
// are values no one changes, so each reuse hands out the same ones.
type decision struct {
	inputs Inputs
	states []decide.State
}

// Decisions remembers, per target StatefulSet, the last decision that left it as it is.
// Every reconcile of a selector syncs all its targets, and every write to one of them brings such
// a reconcile: at fleet scale, planning the unchanged targets again and again was most of what
// the controller allocated, and a plan now costs a read of the whole StatefulSet from the API
// server too. Only a decision that found nothing to write is kept: a write changes the
// StatefulSet, and so the inputs of the next one.
type Decisions struct {
	mu        sync.Mutex
	decisions map[types.NamespacedName]decision
}

// Reuse returns the outcomes decided from the same inputs, with the ScratchVolumes of svs, or
// false when there are none. The outcomes are the caller's to change; their plans and containers
// are shared, to read only.
func (s *Decisions) Reuse(key types.NamespacedName, in Inputs, svs []*v1alpha1.ScratchVolume) (map[string]*decide.Outcome, bool) {
	s.mu.Lock()
	d, ok := s.decisions[key]
	s.mu.Unlock()
	if !ok || !d.inputs.equal(in) {
		return nil, false
	}
	out := make(map[string]*decide.Outcome, len(d.states))
	for i, s := range d.states {
		out[svs[i].Name] = &decide.Outcome{SV: svs[i], State: s}
	}
	return out, true
}

// Remember keeps the outcomes decided from in. The problems are kept as they are, the plans in
// part and shared, the containers shared (no one changes any once made); the ScratchVolumes are
// not, so that a decision never holds an old copy of a ScratchVolume, whose status lists every
// target, in memory.
func (s *Decisions) Remember(key types.NamespacedName, in Inputs, outcomes map[string]*decide.Outcome) {
	d := decision{inputs: in, states: make([]decide.State, len(in.svs))}
	for i, stamp := range in.svs {
		o, ok := outcomes[stamp.name]
		if !ok {
			return
		}
		switch s := o.State.(type) {
		case decide.Injected:
			s.Plan, s.Container = sharedPlans.intern(SettledPlan(s.Plan)), sharedContainers.intern(s.Container)
			d.states[i] = s
		case decide.Blocked:
			d.states[i] = s
		default:
			return // made again on every sync: it depends on the clock, an approval or a refusal
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decisions == nil {
		s.decisions = map[types.NamespacedName]decision{}
	}
	if _, ok := s.decisions[key]; !ok && len(s.decisions) >= maxDecisions {
		for k := range s.decisions {
			delete(s.decisions, k)
			break
		}
	}
	s.decisions[key] = d
}

// SettledPlan is the part of p that the sync of a StatefulSet already carrying it reads, but its
// hash: what the status reports and the drop-in ConfigMap's content. The entries to write
// (volumes, mounts, the init container, flags, memory) are left out, and the drop-in volume, whose
// name differs from target to target, is kept only as whether there is one (configVolumeMarker):
// all that its readers ask.
func SettledPlan(p *inject.Plan) *inject.Plan {
	out := &inject.Plan{
		ScratchVolume: p.ScratchVolume, Container: p.Container, Notes: p.Notes,
		ConfigKey: p.ConfigKey, ConfigData: p.ConfigData,
		Injection: p.Injection, Locations: p.Locations, TempSpace: p.TempSpace, Profile: p.Profile,
	}
	if p.ConfigVolume != nil {
		out.ConfigVolume = configVolumeMarker
	}
	return out
}

// SettledOutcomes trims the plans of outcomes to what the status reads of them, their settled
// part, shared (the outcome keeps the hash), and shares their planned containers: a selector's
// reconcile holds the outcomes of all its targets until it writes its status, a whole plan carries
// every entry it wrote, and the targets of one kind of server are given equal containers. Reused
// outcomes are settled already.
func SettledOutcomes(outcomes map[string]*decide.Outcome) map[string]*decide.Outcome {
	for _, o := range outcomes {
		switch s := o.State.(type) {
		case decide.Injected:
			s.Plan, s.Container = sharedPlans.intern(SettledPlan(s.Plan)), sharedContainers.intern(s.Container)
			o.State = s
		case decide.Held:
			s.Plan = sharedPlans.intern(SettledPlan(s.Plan))
			o.State = s
		}
	}
	return outcomes
}

// configVolumeMarker stands for a settled plan's drop-in volume.
var configVolumeMarker = &corev1.Volume{Name: "drop-in"}

// sharedPlans and sharedContainers hold each distinct settled plan and planned container the
// remembered decisions keep once.
var (
	sharedPlans      sharedValues[inject.Plan]
	sharedContainers sharedValues[corev1.Container]
)

// Forget drops the decision on a StatefulSet that is gone, or whose last one is out of date.
func (s *Decisions) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.decisions, key)
}

// ForgetScratchVolume drops every decision a ScratchVolume that is going took part in.
func (s *Decisions) ForgetScratchVolume(sv types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, d := range s.decisions {
		if key.Namespace == sv.Namespace && d.inputs.mentions(sv.Name) {
			delete(s.decisions, key)
		}
	}
}

// Len is how many decisions are remembered.
func (s *Decisions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.decisions)
}
