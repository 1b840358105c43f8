package controllers

// This file finds the pods the API server refused to create for a StatefulSet that carries an
// injection: the StatefulSet controller reports each refused creation as a FailedCreate Event on
// the StatefulSet, quoting the API server, within milliseconds of the deletion of the pod it
// replaces. The cache holds only those Events.

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// +kubebuilder:rbac:groups="",resources=events,verbs=list;watch

// failedCreate is the reason the StatefulSet controller gives a refused pod creation.
const failedCreate = "FailedCreate"

// failedCreates selects the Events the cache keeps: the StatefulSet controller's refused creations.
func failedCreates() fields.Selector {
	return fields.SelectorFromSet(fields.Set{"reason": failedCreate, "involvedObject.kind": "StatefulSet"})
}

// DefaultMissingPodsGrace is how long a pod of a rolling StatefulSet that carries an injection may
// stay missing, with no FailedCreate Event to say why, before the controller takes the rollout for
// refused: the StatefulSet controller creates a deleted pod's successor within milliseconds, and
// reports every refusal, but Events are best effort (an API server under load, or an Event
// aggregated away, loses them).
const DefaultMissingPodsGrace = 20 * time.Second

func (r *ScratchVolumeReconciler) missingGrace() time.Duration {
	if r.MissingPodsGrace > 0 {
		return r.MissingPodsGrace
	}
	return DefaultMissingPodsGrace
}

// refusalSlack is how long before a target was first found in flight a FailedCreate still counts
// as a refusal of its rollout: the StatefulSet controller may report it before the reconcile that
// records the rollout runs.
const refusalSlack = 30 * time.Second

// refusedCreations returns, by ScratchVolume, the refused pod creations of sts's rollout for each
// of svs whose injection sts carries: FailedCreate Events on sts since its rollout began, since the
// last refusal recorded and since the controller's last write of an injection to it, while a pod
// of sts's update is missing.
func (r *ScratchVolumeReconciler) refusedCreations(ctx context.Context, sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) map[string]decide.Refusal {
	if !missingPods(sts) {
		return nil
	}
	var out map[string]decide.Refusal
	var events []corev1.Event
	listed := false
	for _, sv := range svs {
		if _, carried := sts.Spec.Template.Annotations[sv.InjectionAnnotation()]; !carried {
			continue
		}
		if !listed {
			events, listed = r.failedCreatesOf(ctx, sts), true
		}
		since := rolloutStart(sv, sts.Name)
		if last := decide.LastRefusal(sv, sts.Name); last.After(since) {
			since = last
		}
		// The StatefulSet controller may retry a refused creation until it sees the revert: those
		// retries belong to the last attempt, which the write of this one follows.
		if w, ok := r.wroteAt.Load(client.ObjectKeyFromObject(sts)); ok && w.(time.Time).After(since) {
			since = w.(time.Time)
		}
		// Core Events keep whole seconds: one of the second the attempt began counts.
		msg, at := newestAfter(events, since.Truncate(time.Second))
		if msg == "" {
			msg, at = r.missingTooLong(sts)
		}
		if msg == "" {
			continue
		}
		if out == nil {
			out = map[string]decide.Refusal{}
		}
		out[sv.Name] = decide.Refusal{Message: msg, At: time.Now()}
		log.FromContext(ctx).Info("Found the pods of a StatefulSet's injected revision refused", "statefulset", client.ObjectKeyFromObject(sts),
			"scratchVolume", sv.Name, "eventTime", at, "message", msg)
	}
	return out
}

// missingTooLong says, when sts has been missing pods for the grace or longer since the
// controller first saw it so, what is missing; "" otherwise. The first sighting is remembered
// until sts has all its pods again (forgetGap).
func (r *ScratchVolumeReconciler) missingTooLong(sts *appsv1.StatefulSet) (string, time.Time) {
	key := client.ObjectKeyFromObject(sts)
	first, _ := r.gaps.LoadOrStore(key, gapSighting{uid: sts.UID, at: time.Now()})
	g := first.(gapSighting)
	if g.uid != sts.UID {
		r.gaps.Store(key, gapSighting{uid: sts.UID, at: time.Now()})
		return "", time.Time{}
	}
	if time.Since(g.at) < r.missingGrace() {
		return "", time.Time{}
	}
	return fmt.Sprintf("%d of its %d pods have not been created for %s since the rollout deleted them, and no FailedCreate Event says why",
		replicasOf(sts)-sts.Status.Replicas, replicasOf(sts), time.Since(g.at).Round(time.Second)), g.at
}

// gapSighting is when the controller first saw a StatefulSet missing pods.
type gapSighting struct {
	uid types.UID
	at  time.Time
}

// recheckGap is when sts's missing pods reach the grace, which asks for a reconcile then; zero
// when it misses none. It forgets a StatefulSet that has all its pods again.
func (r *ScratchVolumeReconciler) recheckGap(sts *appsv1.StatefulSet) time.Time {
	key := client.ObjectKeyFromObject(sts)
	if !missingPods(sts) {
		r.gaps.Delete(key)
		return time.Time{}
	}
	if g, ok := r.gaps.Load(key); ok {
		return g.(gapSighting).at.Add(r.missingGrace())
	}
	return time.Time{}
}

// missingPods reports whether sts has fewer pods than it asks for while its controller rolls it:
// a deleted pod whose successor has not been created.
func missingPods(sts *appsv1.StatefulSet) bool {
	return sts.Status.ObservedGeneration >= sts.Generation && sts.Status.Replicas < replicasOf(sts) &&
		sts.Status.UpdateRevision != "" && sts.Status.UpdateRevision != sts.Status.CurrentRevision
}

func replicasOf(sts *appsv1.StatefulSet) int32 {
	if sts.Spec.Replicas == nil {
		return 1
	}
	return *sts.Spec.Replicas
}

// rolloutStart is when sv's rollout on target began, as near as the status tells: the first time
// it was found in flight, less refusalSlack; without a record, refusalSlack ago.
func rolloutStart(sv *v1alpha1.ScratchVolume, target string) time.Time {
	for _, t := range sv.Status.Targets {
		if t.Name == target && t.InFlightSince != nil {
			return t.InFlightSince.Add(-refusalSlack)
		}
	}
	return time.Now().Add(-refusalSlack)
}

// failedCreatesOf lists the cached FailedCreate Events of sts.
func (r *ScratchVolumeReconciler) failedCreatesOf(ctx context.Context, sts *appsv1.StatefulSet) []corev1.Event {
	var list corev1.EventList
	if err := r.List(ctx, &list, client.InNamespace(sts.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "Could not list the FailedCreate Events of a StatefulSet", "statefulset", client.ObjectKeyFromObject(sts))
		return nil
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == failedCreate && e.InvolvedObject.Kind == "StatefulSet" && e.InvolvedObject.Name == sts.Name &&
			(e.InvolvedObject.UID == "" || e.InvolvedObject.UID == sts.UID) {
			out = append(out, e)
		}
	}
	return out
}

// newestAfter is the API server's words in the newest of events that happened at since or after,
// and when; "" when none did. The StatefulSet controller's message wraps them: "create Pod db-0 in
// StatefulSet db failed error: <the API server's>".
func newestAfter(events []corev1.Event, since time.Time) (string, time.Time) {
	var msg string
	var newest time.Time
	for _, e := range events {
		at := eventTime(e)
		if at.Before(since) || !at.After(newest) {
			continue
		}
		newest, msg = at, e.Message
		if _, apiServer, ok := strings.Cut(e.Message, " failed error: "); ok {
			msg = apiServer
		}
	}
	return msg, newest
}

// eventTime is the last time e happened, in whichever field its recorder set.
func eventTime(e corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

// scratchVolumesForEvent maps a FailedCreate Event to the ScratchVolumes of its StatefulSet.
func (r *ScratchVolumeReconciler) scratchVolumesForEvent(ctx context.Context, o client.Object) []reconcile.Request {
	e, ok := o.(*corev1.Event)
	if !ok || e.InvolvedObject.Kind != "StatefulSet" {
		return nil
	}
	sts := &appsv1.StatefulSet{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.InvolvedObject.Name}, sts); err != nil {
		return nil
	}
	return r.scratchVolumesForStatefulSet(ctx, sts)
}
