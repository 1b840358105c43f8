package controllers

// This file watches what the node agents report about the pods' RAM volumes: the index of
// NodeIOProfiles by the ScratchVolumes they report on, and the mapping of their changes to
// reconciles.

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// The node agents write how full each pod's RAM volume has been into their node's NodeIOProfile
// (status.scratchVolumes); the controller reads them from its cache, trimmed to that list, to sum
// them up in each ScratchVolume's status.
//
// +kubebuilder:rbac:groups=dbtune.io,resources=nodeioprofiles,verbs=list;watch

// indexObservedScratchVolumes indexes NodeIOProfiles by the ScratchVolumes ("namespace/name")
// whose pods' volumes they report.
const indexObservedScratchVolumes = "status.scratchVolumes.scratchVolume"

func observedKey(namespace, name string) string { return namespace + "/" + name }

// observedScratchVolumes is the index function of indexObservedScratchVolumes.
func observedScratchVolumes(o client.Object) []string {
	reports := o.(*v1alpha1.NodeIOProfile).Status.ScratchVolumes
	keys := make([]string, 0, len(reports))
	for _, u := range reports {
		keys = append(keys, observedKey(u.Namespace, u.ScratchVolume))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// scratchVolumesForProfile maps a NodeIOProfile to the ScratchVolumes it reports on. An update is
// mapped from the old object too, so a ScratchVolume whose last pod left the list hears of it.
func (r *ScratchVolumeReconciler) scratchVolumesForProfile(_ context.Context, o client.Object) []reconcile.Request {
	keys := observedScratchVolumes(o)
	reqs := make([]reconcile.Request, 0, len(keys))
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	}
	return reqs
}

// scratchVolumesChanged passes the NodeIOProfile updates that change the reports on the pods'
// RAM volumes; the probe's and read-ahead's own updates concern no ScratchVolume.
func scratchVolumesChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*v1alpha1.NodeIOProfile)
		after, ok2 := e.ObjectNew.(*v1alpha1.NodeIOProfile)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(before.Status.ScratchVolumes, after.Status.ScratchVolumes)
	}}
}
