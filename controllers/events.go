package controllers

// This file records Events: the change Events of a pass over a ScratchVolume's targets, gathered
// into one per ScratchVolume and reason, and the Warnings package decide asks for.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// changeEvents gathers the Injected, Updated, Restored and Reverted Events of one pass over a
// ScratchVolume's targets and records them when the pass ends, one per ScratchVolume and reason.
// A change of one StatefulSet keeps its own note, which says what went where; a change of many
// names the first few and leaves the details to status.targets. A selector over a fleet so records
// a handful of Events instead of one per StatefulSet: each is a write the API server serves beside
// the injection's own, and one the recorder keeps in memory for minutes.
//
// The Event about many StatefulSets is related to the first it names. The events.k8s.io recorder
// folds Events with the same regarding and related objects, reason and action into one series
// that keeps the first note: two passes over different StatefulSets stay two Events.
type changeEvents struct {
	recorder recorder.EventRecorder
	mu       sync.Mutex
	groups   map[changeKey]*changeGroup
}

type changeKey struct {
	sv     types.NamespacedName
	reason string
}

// changeGroup is one Event to record: the StatefulSets a ScratchVolume changed alike, and the
// first one's change.
type changeGroup struct {
	sv    *v1alpha1.ScratchVolume
	first decide.Change
	sts   []*appsv1.StatefulSet
}

func (r *ScratchVolumeReconciler) changeEvents() *changeEvents {
	return &changeEvents{recorder: r.Recorder, groups: map[changeKey]*changeGroup{}}
}

// add counts sts among the StatefulSets c.SV changed for c.Reason.
func (e *changeEvents) add(sts *appsv1.StatefulSet, c decide.Change) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := changeKey{client.ObjectKeyFromObject(c.SV), c.Reason}
	g := e.groups[k]
	if g == nil {
		g = &changeGroup{sv: c.SV, first: c}
		e.groups[k] = g
	}
	g.sts = append(g.sts, sts)
}

// record sends the Events gathered, in the order of their ScratchVolumes and reasons, and forgets
// them.
func (e *changeEvents) record() {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(e.groups), func(a, b changeKey) int {
		return cmp.Or(cmp.Compare(a.sv.Namespace, b.sv.Namespace), cmp.Compare(a.sv.Name, b.sv.Name), cmp.Compare(a.reason, b.reason))
	})
	for _, k := range keys {
		g := e.groups[k]
		if len(g.sts) == 1 {
			e.recorder.Eventf(g.sv, g.sts[0], corev1.EventTypeNormal, k.reason, g.first.Action, "%s", conditions.Cut(g.first.Note, conditions.MaxEventNote))
			continue
		}
		slices.SortFunc(g.sts, func(a, b *appsv1.StatefulSet) int { return cmp.Compare(a.Name, b.Name) })
		names := make([]string, len(g.sts))
		for i, sts := range g.sts {
			names[i] = sts.Name
		}
		note := fmt.Sprintf("%s %d StatefulSets: %s", g.first.Many, len(names), conditions.Names(names, conditions.MaxListed))
		if k.reason == decide.EventInjected || k.reason == decide.EventUpdated {
			note += "; status.targets says where each one's temporary data goes"
		}
		e.recorder.Eventf(g.sv, g.sts[0], corev1.EventTypeNormal, k.reason, g.first.Action, "%s", conditions.Cut(note, conditions.MaxEventNote))
	}
	clear(e.groups)
}

// warn records a Warning Event about sv, related to sts when it is not nil.
func (r *ScratchVolumeReconciler) warn(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, w decide.Warning) {
	// A note over the API server's limit would lose the whole Event (a write war's lists the
	// candidates for the remover and what was removed).
	note := conditions.Cut(w.Note, conditions.MaxEventNote)
	if sts == nil {
		r.Recorder.Eventf(sv, nil, corev1.EventTypeWarning, w.Reason, w.Action, "%s", note)
		return
	}
	r.Recorder.Eventf(sv, sts, corev1.EventTypeWarning, w.Reason, w.Action, "%s", note)
}
