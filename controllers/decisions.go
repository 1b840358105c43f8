package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// maxDecisions bounds the remembered decisions: one per target StatefulSet, a few KiB each.
// Past it, an arbitrary one is forgotten and that target is planned again on its next sync.
const maxDecisions = 20000

// targetsPlanned counts the syncs that planned a target, as opposed to those that reused its last
// decision: in a steady state it stays still however often the targets' ScratchVolumes reconcile.
var targetsPlanned = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "dbtune_scratch_targets_planned_total",
	Help: "Syncs of a target StatefulSet that planned it, the first and each after it or a ScratchVolume selecting it changed, by namespace.",
}, []string{"namespace"})

func init() {
	metrics.Registry.MustRegister(targetsPlanned)
}

// decisionInputs are what a target's decision is made from: the StatefulSet's spec and controller
// and the live ScratchVolumes that select it, oldest first (the order settles conflicts). The
// generation covers every change of the spec, and the UID the StatefulSet's replacement by another
// of the same name; its controller is the one part of its metadata planning reads (an operator's
// StatefulSet is left alone), besides its name. Status and label changes, a GitOps tool's re-apply
// of the same manifest, and the StatefulSet controller's progress through a rollout leave all of
// them as they were, so they need no plan, nor the pod template a plan reads (which the cache does
// not keep, see trimStatefulSet). A ScratchVolume's generation covers its spec, the only part
// planning reads besides its name, so the status the controller writes on every reconcile changes
// nothing either.
type decisionInputs struct {
	uid        types.UID
	generation int64
	controller string
	svs        []svStamp
}

type svStamp struct {
	name       string
	uid        types.UID
	generation int64
}

func inputsOf(sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) decisionInputs {
	in := decisionInputs{uid: sts.UID, generation: sts.Generation, controller: controllerName(sts), svs: make([]svStamp, len(svs))}
	for i := range svs {
		in.svs[i] = svStamp{name: svs[i].Name, uid: svs[i].UID, generation: svs[i].Generation}
	}
	return in
}

// controllerName names the controlling owner of sts as the decision inputs hold it, "" for none.
func controllerName(sts *appsv1.StatefulSet) string {
	if ref := metav1.GetControllerOfNoCopy(sts); ref != nil {
		return ref.APIVersion + "/" + ref.Kind + "/" + ref.Name
	}
	return ""
}

func (in decisionInputs) equal(other decisionInputs) bool {
	if in.uid != other.uid || in.generation != other.generation || in.controller != other.controller || len(in.svs) != len(other.svs) {
		return false
	}
	for i := range in.svs {
		if in.svs[i] != other.svs[i] {
			return false
		}
	}
	return true
}

func (in decisionInputs) mentions(sv string) bool {
	for _, s := range in.svs {
		if s.name == sv {
			return true
		}
	}
	return false
}

// decision is a target's outcomes, without their ScratchVolumes (held by position in the
// inputs' order) and without the write-war guard, which moves with the clock.
type decision struct {
	inputs   decisionInputs
	outcomes []rememberedOutcome
}

// rememberedOutcome is what a decision keeps of an outcome. The plan is the part of it a sync that
// writes nothing reads (settledPlan) but its hash, and like the container it is shared by every
// target given an equal one (sharedPlans, sharedContainers): the targets of one ScratchVolume over
// a fleet of one kind of server are planned alike but for the hash, which covers the name of each
// one's drop-in ConfigMap.
type rememberedOutcome struct {
	hash      string
	plan      *inject.Plan
	container *corev1.Container
	problem   *inject.Problem
	kept      bool
}

// decisionStore remembers, per target StatefulSet, the last decision that left it as it is.
// Every reconcile of a selector syncs all its targets, and every write to one of them brings such
// a reconcile: at fleet scale, planning the unchanged targets again and again was most of what
// the controller allocated, and a plan now costs a read of the whole StatefulSet from the API
// server too. Only a decision that found nothing to write is kept: a write changes the
// StatefulSet, and so the inputs of the next one.
type decisionStore struct {
	mu        sync.Mutex
	decisions map[types.NamespacedName]decision
}

// reuse returns the outcomes decided from the same inputs, with the ScratchVolumes of svs, or
// false when there are none. The outcomes are the caller's to change; their plans and containers
// are shared, to read only.
func (s *decisionStore) reuse(key types.NamespacedName, in decisionInputs, svs []*v1alpha1.ScratchVolume) (map[string]*outcome, bool) {
	s.mu.Lock()
	d, ok := s.decisions[key]
	s.mu.Unlock()
	if !ok || !d.inputs.equal(in) {
		return nil, false
	}
	out := make(map[string]*outcome, len(d.outcomes))
	for i := range d.outcomes {
		m := &d.outcomes[i]
		out[svs[i].Name] = &outcome{sv: svs[i], plan: m.plan, hash: m.hash, container: m.container, problem: m.problem, kept: m.kept}
	}
	return out, true
}

// remember keeps the outcomes decided from in. The problems are kept as they are, the plans in
// part and shared, the containers shared (no one changes any once made); the ScratchVolumes are
// not, so that a decision never holds an old copy of a ScratchVolume, whose status lists every
// target, in memory.
func (s *decisionStore) remember(key types.NamespacedName, in decisionInputs, outcomes map[string]*outcome) {
	d := decision{inputs: in, outcomes: make([]rememberedOutcome, len(in.svs))}
	for i, stamp := range in.svs {
		o, ok := outcomes[stamp.name]
		if !ok {
			return
		}
		m := rememberedOutcome{container: sharedContainers.intern(o.container), problem: o.problem, kept: o.kept}
		if o.plan != nil {
			m.hash, m.plan = o.hash, sharedPlans.intern(settledPlan(o.plan))
		}
		d.outcomes[i] = m
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

// settledPlan is the part of p that the sync of a StatefulSet already carrying it reads, but its
// hash: what the status reports and the drop-in ConfigMap's content. The entries to write
// (volumes, mounts, the init container, flags, memory) are left out, and the drop-in volume, whose
// name differs from target to target, is kept only as whether there is one (configVolumeMarker):
// all that its readers ask.
func settledPlan(p *inject.Plan) *inject.Plan {
	out := &inject.Plan{
		ScratchVolume: p.ScratchVolume, Container: p.Container, Notes: p.Notes,
		ConfigKey: p.ConfigKey, ConfigData: p.ConfigData,
		Injection: p.Injection, Locations: p.Locations, Profile: p.Profile,
	}
	if p.ConfigVolume != nil {
		out.ConfigVolume = configVolumeMarker
	}
	return out
}

// settledOutcomes trims the plans of outcomes to what the status reads of them, their settled
// part, shared (the outcome keeps the hash): a selector's reconcile holds the outcomes of all its
// targets until it writes its status, and a whole plan carries every entry it wrote. Reused
// outcomes are settled already.
func settledOutcomes(outcomes map[string]*outcome) map[string]*outcome {
	for _, o := range outcomes {
		if o.plan != nil {
			o.plan = sharedPlans.intern(settledPlan(o.plan))
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

// sharedValues hands out one copy of each distinct value, values told apart by their JSON (all
// that the remembered decisions keep is exported, and a quantity's JSON is its canonical form).
// The copies are read only, as everything the decisions keep.
type sharedValues[T any] struct {
	// values are keyed by the SHA-256 of their JSON, which a plan's drop-in file makes a few KiB.
	values sharedTable[*T]
}

// intern returns the shared value equal to *v, v itself the first time (and nil for nil).
func (s *sharedValues[T]) intern(v *T) *T {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	key := sha256.Sum256(raw)
	return s.values.get(string(key[:]), func() *T { return v })
}

// forget drops the decision on a StatefulSet that is gone, or whose last one is out of date.
func (s *decisionStore) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.decisions, key)
}

// forgetScratchVolume drops every decision a ScratchVolume that is going took part in.
func (s *decisionStore) forgetScratchVolume(sv types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, d := range s.decisions {
		if key.Namespace == sv.Namespace && d.inputs.mentions(sv.Name) {
			delete(s.decisions, key)
		}
	}
}

func (s *decisionStore) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.decisions)
}

// forgetDeleted passes StatefulSet events on, and forgets the decision on a StatefulSet that is
// deleted: its successor of the same name has another UID and would never reuse it.
type forgetDeleted struct {
	handler.EventHandler
	forget func(types.NamespacedName)
}

func (h forgetDeleted) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.Object != nil {
		h.forget(client.ObjectKeyFromObject(e.Object))
	}
	h.EventHandler.Delete(ctx, e, q)
}
