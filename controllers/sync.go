package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// admissionRetryInterval is how often a change admission control refused is tried again when
// nothing else brings a reconcile: a policy or webhook can change without any event we watch.
const admissionRetryInterval = 5 * time.Minute

// admissionDenial returns the API server's message when err is admission control refusing a
// write, and "" for any other error. The status code does not tell: a ValidatingAdmissionPolicy
// picks its own (Invalid unless it says otherwise), a webhook too, and Forbidden also comes from
// RBAC, a fault of the installation that stays an error. What does tell are the messages the API
// server composes for the two: "ValidatingAdmissionPolicy 'p' [with binding 'b'] denied request:
// …" and "admission webhook \"w\" denied the request: …".
func admissionDenial(err error) string {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return ""
	}
	msg := status.Status().Message
	byPolicy := strings.Contains(msg, "ValidatingAdmissionPolicy '") && strings.Contains(msg, "' denied request: ")
	byWebhook := strings.Contains(msg, "admission webhook \"") && strings.Contains(msg, "\" denied the request")
	if byPolicy || byWebhook {
		return msg
	}
	return ""
}

// staleWrite reports whether err says the StatefulSet changed between the read the decision was
// made on and the write: a conflict, or a JSON patch whose tests (resourceVersion, container
// names) failed. Such a write is retried at once, not reported as a failure.
func staleWrite(err error) bool {
	if errors.Is(err, errCacheBehind) {
		return true
	}
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Reason == metav1.StatusReasonConflict {
		return true
	}
	if s.Code != http.StatusUnprocessableEntity {
		return false
	}
	// A JSON patch that does not apply (our only ones that can fail are the tests) comes back with
	// the generic text of a 422, the patch library's "testing value … failed" dropped.
	return strings.Contains(s.Message, "testing value") ||
		strings.HasPrefix(s.Message, "the server rejected our request due to an error in our request")
}

// outcome is what became of one ScratchVolume on one StatefulSet.
type outcome struct {
	sv   *v1alpha1.ScratchVolume
	plan *inject.Plan // nil when blocked
	// hash is the plan's configuration hash, read here: a settled plan is shared by the targets
	// planned alike and has none (settledPlan).
	hash    string
	problem *inject.Problem // why it is blocked
	// kept is true when a blocked ScratchVolume's earlier injection stays in place untouched.
	kept bool
	// war is set, with plan, when the controller holds off writing the plan because another
	// writer keeps removing it.
	war *v1alpha1.WriteWar
	// guard is the StatefulSet's restore history, for the status.
	guard writeGuard
	// container is the container that gets the volume (plannedContainer), nil when blocked.
	container *corev1.Container
}

// syncStatefulSet makes the controller's entries on sts the union of the plans of every live
// ScratchVolume that selects it, writing only when they differ from what is there. It returns the
// outcome per ScratchVolume name, each plan trimmed to what the status reads (settledOutcomes).
// sel are the ScratchVolumes of sts's namespace that select by label (selectorsIn). sts is the
// cache's trimmed object (trimStatefulSet): a decision remembered for its generation is reused as
// it is, and anything else is planned on the whole StatefulSet, read from the API server
// (readWhole). The changes written are added to events.
func (r *ScratchVolumeReconciler) syncStatefulSet(ctx context.Context, sts *appsv1.StatefulSet, sel selectors, events *changeEvents) (map[string]*outcome, error) {
	if r.written.behind(sts) {
		return nil, fmt.Errorf("StatefulSet %s/%s at generation %d: %w", sts.Namespace, sts.Name, sts.Generation, errCacheBehind)
	}
	svs, err := r.scratchVolumesFor(ctx, sts, sel)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(sts)
	if outcomes, ok := r.decisions.reuse(key, inputsOf(sts, svs), svs); ok {
		return r.settle(ctx, sts, svs, outcomes)
	}
	// The whole object is this sync's own: the write below works on it and updates it from the
	// responses, and it is dropped with the sync.
	live := &appsv1.StatefulSet{}
	if err := r.readWhole(ctx, sts, live); apierrors.IsNotFound(err) {
		// Deleted since the cache saw it: nothing to plan, and its deletion brings the next
		// reconcile, which no longer finds it.
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("failed to get StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	targetsPlanned.WithLabelValues(sts.Namespace).Inc()
	tp := planTarget(svs, live)
	outcomes, desired, observed, pending := tp.outcomes, tp.desired, tp.observed, tp.pending
	if tp.settled() {
		r.decisions.remember(key, inputsOf(live, svs), outcomes)
		return r.settle(ctx, live, svs, settledOutcomes(outcomes))
	}
	r.decisions.forget(key)
	rule, now := r.WriteWar.orDefaults(), time.Now()
	restored := restoredBy(outcomes, live, pending)
	if len(restored) > 0 {
		if r.holdOff(ctx, live, svs, outcomes, configKey(desired), restored) {
			return settledOutcomes(outcomes), nil
		}
	}
	if err := r.ensureConfigMaps(ctx, live, outcomes); err != nil {
		return nil, err
	}
	if err := r.write(ctx, live, desired, observed, pending); err != nil {
		return nil, err
	}
	// write leaves live as the last write's response has it: the generation the cache must reach
	// before the next decision, and the object that decision is made from, so that the syncs
	// the write brings (its own watch event, the StatefulSet controller's status) need no read.
	r.written.record(key, live.Generation)
	if after := planTarget(svs, live); after.settled() {
		r.decisions.remember(key, inputsOf(live, svs), after.outcomes)
	}
	g := r.guards.update(key, svs, func(g writeGuard) writeGuard { return rule.afterWrite(g, now, len(restored) > 0) })
	if len(restored) > 0 {
		restoresTotal.WithLabelValues(sts.Namespace).Inc()
	}
	recordChange(events, sts, outcomes, desired, observed, restored)
	return withGuard(settledOutcomes(outcomes), g), nil
}

// readWhole reads into live the whole StatefulSet that sts, the cache's trimmed copy, stands for.
// It asks the API server for any version it has (resourceVersion "0"), which it answers from its
// watch cache instead of a quorum read of etcd, and takes the answer when it is the object the
// cache holds or a later one (asNewAs): with one API server it always is, since the informer is fed
// from that same watch cache. An older answer, from an API server behind the one the informer
// watches, or none, is read again from etcd. Either read may be overtaken by a change before the
// apply; that change's event plans again.
func (r *ScratchVolumeReconciler) readWhole(ctx context.Context, sts, live *appsv1.StatefulSet) error {
	key := client.ObjectKeyFromObject(sts)
	err := r.APIReader.Get(ctx, key, live, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	switch {
	case err == nil && asNewAs(live, sts):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	*live = appsv1.StatefulSet{}
	return r.APIReader.Get(ctx, key, live)
}

// asNewAs reports whether live is the StatefulSet cached stands for, at its version of what a
// decision depends on or a later one: the same object, at a generation as high, and with the same
// controller if no higher (a change of owner does not move the generation).
func asNewAs(live, cached *appsv1.StatefulSet) bool {
	if live.UID != cached.UID || live.Generation < cached.Generation {
		return false
	}
	return live.Generation > cached.Generation || controllerName(live) == controllerName(cached)
}

// targetPlan is what a sync decides for one StatefulSet from the ScratchVolumes that select it:
// the outcome per ScratchVolume, the controller's entries wanted and found, and the container
// changes (flags, environment, memory) still to make.
type targetPlan struct {
	outcomes          map[string]*outcome
	desired, observed inject.Entries
	pending           []inject.ContainerChange
}

// planTarget decides, reading nothing but its arguments.
func planTarget(svs []*v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) targetPlan {
	outcomes := decide(svs, sts)
	plans, kept := winningPlans(outcomes), keptNames(outcomes)
	user := inject.Strip(sts.Spec.Template)
	changes, states := inject.Overrides(&user, &sts.Spec.Template, plans, kept)
	desired := inject.Desired(plans)
	for _, name := range kept {
		desired = desired.Merge(inject.ObservedFor(&sts.Spec.Template, name))
	}
	return targetPlan{
		outcomes: outcomes,
		desired:  desired.WithAnnotations(states),
		observed: inject.Observed(&sts.Spec.Template),
		pending:  inject.Pending(&sts.Spec.Template, changes, &user),
	}
}

// settled reports whether the StatefulSet already carries everything planned.
func (tp targetPlan) settled() bool { return tp.desired.Equal(tp.observed) && len(tp.pending) == 0 }

// settle finishes the sync of a StatefulSet that already carries what the outcomes ask for: a try
// after a write-war hold may have lasted long enough to end the fight, and a drop-in ConfigMap
// someone deleted is put back. Both run on every sync, reused decision or not: the first depends
// on the clock, the second on an object the decision does not cover.
func (r *ScratchVolumeReconciler) settle(ctx context.Context, sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume,
	outcomes map[string]*outcome) (map[string]*outcome, error) {
	rule, now := r.WriteWar.orDefaults(), time.Now()
	g := r.guards.update(client.ObjectKeyFromObject(sts), svs, func(g writeGuard) writeGuard { return rule.settled(g, now) })
	return withGuard(outcomes, g), r.ensureConfigMaps(ctx, sts, outcomes)
}

// holdOff applies the write-war rule before a write that restores entries someone removed from
// sts, the whole object read from the API server. When the controller must hold off, it marks the
// outcomes held; when a hold begins, it names the other writers (from sts's managedFields, which
// the cache drops), and when a fight begins, it counts it and warns once.
func (r *ScratchVolumeReconciler) holdOff(ctx context.Context, sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume,
	outcomes map[string]*outcome, key string, removed []string) bool {
	rule, now, name := r.WriteWar.orDefaults(), time.Now(), client.ObjectKeyFromObject(sts)
	var hold, fresh bool
	g := r.guards.update(name, svs, func(g writeGuard) writeGuard {
		g, hold, fresh = rule.beforeRestore(g, now, key)
		return g
	})
	if fresh {
		g = r.guards.update(name, svs, func(g writeGuard) writeGuard {
			g.war = g.war.DeepCopy()
			g.war.FieldManagers, g.war.Removed = templateWriters(sts), removed
			return g
		})
	}
	withGuard(outcomes, g)
	if !hold {
		return false
	}
	for _, o := range outcomes {
		if o.plan != nil {
			o.war = g.war
		}
	}
	if fresh && g.war.Holds == 1 {
		writeWarsTotal.WithLabelValues(sts.Namespace).Inc()
		log.FromContext(ctx).Info("Stopped restoring a StatefulSet that another writer keeps changing",
			"statefulset", name, "fieldManagers", g.war.FieldManagers, "retryAt", g.war.RetryAt)
		for _, o := range outcomes {
			if o.plan != nil {
				r.Recorder.Eventf(o.sv, sts, corev1.EventTypeWarning, EventFightingAnotherWriter, actionHold, "%s",
					fightMessage(sts.Name, g.war, rule))
			}
		}
	}
	return true
}

// restoredBy names what a write of the outcomes' plans puts back on sts: entries of a
// configuration the controller had already written there (the status says so) that are gone now.
// Nothing when the write only injects or updates.
func restoredBy(outcomes map[string]*outcome, sts *appsv1.StatefulSet, pending []inject.ContainerChange) []string {
	var out []string
	for _, o := range outcomes {
		if o.plan == nil || !wrote(o.sv, sts.Name, o.hash) {
			continue
		}
		out = append(out, removedEntries(inject.Desired([]*inject.Plan{o.plan}), inject.ObservedFor(&sts.Spec.Template, o.sv.Name))...)
		if len(pending) > 0 && len(out) == 0 {
			for _, ch := range pending {
				out = append(out, "the settings the controller made in container "+ch.Container)
			}
		}
	}
	return slices.Compact(out)
}

// withGuard hands the StatefulSet's restore history to every outcome, for the status.
func withGuard(outcomes map[string]*outcome, g writeGuard) map[string]*outcome {
	for _, o := range outcomes {
		o.guard = g
	}
	return outcomes
}

// decide plans every ScratchVolume (oldest first) for sts and settles conflicts between them: the
// first to claim a container and purpose, or a mount path in a container, wins.
func decide(svs []*v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) map[string]*outcome {
	out := map[string]*outcome{}
	claims := map[string]string{}
	injected := map[string]bool{}
	for _, n := range inject.ScratchVolumes(&sts.Spec.Template) {
		injected[n] = true
	}
	for i := range svs {
		sv := svs[i]
		o := &outcome{sv: sv}
		out[sv.Name] = o
		if p := controlledElsewhere(sv, sts); p != nil {
			o.problem, o.kept = p, injected[sv.Name]
			continue
		}
		plan, err := inject.NewPlan(sv, sts)
		if err != nil {
			var p *inject.Problem
			if !errors.As(err, &p) {
				p = &inject.Problem{Reason: v1alpha1.ReasonInvalidLayout, Message: err.Error()}
			}
			o.problem, o.kept = p, injected[sv.Name]
			continue
		}
		if p := claim(claims, sv, plan); p != nil {
			o.problem, o.kept = p, false
			continue
		}
		o.plan, o.hash, o.container = plan, plan.Hash, plannedContainer(sts, plan.Container)
	}
	return out
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

// write applies the entries and patches the containers. Adding, the state annotations go first, so a
// failed patch never leaves flags nobody recorded; removing, the patch goes first, so a failed apply
// never forgets flags still there. sts ends as the last write's response has it.
func (r *ScratchVolumeReconciler) write(ctx context.Context, sts *appsv1.StatefulSet, desired, observed inject.Entries, pending []inject.ContainerChange) error {
	removing := false
	for k := range observed.Annotations {
		if _, ok := desired.Annotations[k]; !ok {
			removing = true
		}
	}
	if removing {
		if err := r.patchContainers(ctx, sts, pending); err != nil {
			return err
		}
	}
	if !desired.Equal(observed) {
		if err := r.apply(ctx, sts, desired, observed); err != nil {
			return err
		}
	}
	if !removing && len(pending) > 0 {
		// The apply moved the resourceVersion on: read the object the patch will test against.
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			return fmt.Errorf("failed to get StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
		}
		return r.patchContainers(ctx, sts, pending)
	}
	return nil
}

func keptNames(outcomes map[string]*outcome) []string {
	var names []string
	for name, o := range outcomes {
		if o.kept {
			names = append(names, name)
		}
	}
	return names
}

func winningPlans(outcomes map[string]*outcome) []*inject.Plan {
	var plans []*inject.Plan
	for _, o := range outcomes {
		if o.plan != nil {
			plans = append(plans, o.plan)
		}
	}
	return plans
}

// apply server-side applies desired under the controller's field manager, without force: a field
// another manager owns with another value is a conflict to report, never something to take.
func (r *ScratchVolumeReconciler) apply(ctx context.Context, sts *appsv1.StatefulSet, desired, observed inject.Entries) error {
	ac, err := desired.ApplyConfiguration(sts.Name, sts.Namespace)
	if err != nil {
		return err
	}
	// Sent as a raw apply patch rather than with the client's Apply, which decodes the response
	// into the apply configuration, over what it held: list items the response has in other places
	// keep fields of ours. Decoded into an empty StatefulSet, the response is the whole object as
	// the apply left it, with the generation the cache must reach before the next decision.
	raw, err := json.Marshal(ac)
	if err != nil {
		return fmt.Errorf("failed to encode the entries for StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	applied := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: sts.Name}}
	if err := r.Patch(ctx, applied, client.RawPatch(types.ApplyPatchType, raw), client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("failed to apply to StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	*sts = *applied
	statefulSetWrites.WithLabelValues(changeKind(desired, observed)).Inc()
	log.FromContext(ctx).Info("Applied StatefulSet entries", "statefulset", client.ObjectKeyFromObject(sts),
		"change", changeKind(desired, observed), "scratchVolumes", len(desired.Annotations))
	return nil
}

func changeKind(desired, observed inject.Entries) string {
	switch {
	case desired.Empty():
		return "revert"
	case observed.Empty():
		return "inject"
	default:
		return "update"
	}
}

// recordChange adds, for each ScratchVolume whose entries changed on sts, the change to events.
func recordChange(events *changeEvents, sts *appsv1.StatefulSet, outcomes map[string]*outcome, desired, observed inject.Entries, restored []string) {
	for _, o := range outcomes {
		if o.plan == nil {
			continue
		}
		key := o.sv.InjectionAnnotation()
		before, had := observed.Annotations[key]
		switch {
		case !had && wrote(o.sv, sts.Name, o.hash):
			events.add(o.sv, sts, change{EventRestored, actionInject,
				fmt.Sprintf("Restored the injection in StatefulSet %s, which another field manager or a hand edit removed (%s)", sts.Name, conditions.Names(restored, 4)),
				"Restored the injection, which another field manager or a hand edit removed, in"})
		case !had:
			events.add(o.sv, sts, change{EventInjected, actionInject,
				fmt.Sprintf("Injected a %s RAM volume at %s into container %s of StatefulSet %s%s", o.sv.Spec.Size.String(), o.plan.Mount.MountPath, o.plan.Container, sts.Name, placement(o.plan)),
				fmt.Sprintf("Injected a %s RAM volume into", o.sv.Spec.Size.String())})
		case before != desired.Annotations[key]:
			events.add(o.sv, sts, change{EventUpdated, actionInject,
				fmt.Sprintf("Updated the injection in StatefulSet %s (config hash %s -> %s)%s", sts.Name, before, desired.Annotations[key], placement(o.plan)),
				"Updated the injection in"})
		default:
			events.add(o.sv, sts, change{EventRestored, actionInject,
				fmt.Sprintf("Restored entries of StatefulSet %s that another field manager or a hand edit removed", sts.Name),
				"Restored entries that another field manager or a hand edit removed in"})
		}
	}
}

// placement is the Event's account of where the temporary data goes, for a MySQLTmpdir plan.
func placement(p *inject.Plan) string {
	if len(p.Locations) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s); %s", p.Injection, DescribeLocations(p.Locations))
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

// ensureConfigMaps applies the drop-in ConfigMap of every winning ConfigFile plan before the pod
// template refers to it, so new pods always find their file.
func (r *ScratchVolumeReconciler) ensureConfigMaps(ctx context.Context, sts *appsv1.StatefulSet, outcomes map[string]*outcome) error {
	for _, o := range outcomes {
		if o.plan == nil || o.plan.ConfigVolume == nil {
			continue
		}
		if err := r.ensureConfigMap(ctx, o.sv, sts, o.plan); err != nil {
			return err
		}
	}
	return nil
}

func (r *ScratchVolumeReconciler) ensureConfigMap(ctx context.Context, sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, plan *inject.Plan) error {
	name := sv.ConfigMapName(sts.Name)
	current := &corev1.ConfigMap{}
	// The cache's own object, to read only: every sync of every target with a drop-in reads it,
	// a decision reused or not.
	err := r.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: name}, current, client.UnsafeDisableDeepCopy)
	if err == nil && current.Data[plan.ConfigKey] == plan.ConfigData && len(current.Data) == 1 &&
		current.Labels[v1alpha1.ScratchVolumeLabel] == sv.Name {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to get ConfigMap %s/%s: %w", sts.Namespace, name, err)
	}
	ac := corev1ac.ConfigMap(name, sts.Namespace).
		WithLabels(map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ScratchVolumeLabel: sv.Name}).
		WithAnnotations(map[string]string{v1alpha1.TargetAnnotation: sts.Name}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(v1alpha1.GroupVersion.String()).WithKind("ScratchVolume").
			WithName(sv.Name).WithUID(sv.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithData(map[string]string{plan.ConfigKey: plan.ConfigData})
	if err := r.Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply ConfigMap %s/%s: %w", sts.Namespace, name, err)
	}
	return nil
}

// pruneConfigMaps deletes sv's ConfigMaps that no injected StatefulSet needs any more.
func (r *ScratchVolumeReconciler) pruneConfigMaps(ctx context.Context, sv *v1alpha1.ScratchVolume, keep map[string]bool) error {
	list := &corev1.ConfigMapList{}
	// The cache's own objects, as in targets: every reconcile lists all of them, and the few it
	// deletes are not changed by the deletion.
	if err := r.List(ctx, list, client.InNamespace(sv.Namespace), client.MatchingLabels{v1alpha1.ScratchVolumeLabel: sv.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("failed to list ConfigMaps of ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		if keep[cm.Name] {
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, cm)); err != nil {
			return fmt.Errorf("failed to delete ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	return nil
}
