package controllers

// This file holds the controller's metrics, all counted by the I/O layer as it acts.

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the ScratchVolume controller, registered with controller-runtime's registry so they are
// served beside its own on the manager's metrics endpoint.
var (
	statefulSetWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dbtune_scratch_statefulset_writes_total",
		Help: "Server-side applies to StatefulSets by the ScratchVolume controller, by kind of change.",
	}, []string{"change"})
	injectionsBlocked = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dbtune_scratch_injections_blocked_total",
		Help: "Times a StatefulSet was left untouched because of a conflict or a problem the user must fix, by reason.",
	}, []string{"reason"})
	targetsInjected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbtune_scratch_targets_injected",
		Help: "StatefulSets carrying a ScratchVolume's entries, per ScratchVolume.",
	}, []string{"namespace", "scratchvolume"})
	restoresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dbtune_scratch_restores_total",
		Help: "Writes that put back entries another writer had removed from a StatefulSet, by namespace.",
	}, []string{"namespace"})
	writeWarsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dbtune_scratch_write_wars_total",
		Help: "Times the controller stopped restoring a StatefulSet because another writer kept removing its entries, by namespace.",
	}, []string{"namespace"})
	// targetsPlanned counts the syncs that planned a target, as opposed to those that reused its
	// last decision: in a steady state it stays still however often the targets' ScratchVolumes
	// reconcile.
	targetsPlanned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dbtune_scratch_targets_planned_total",
		Help: "Syncs of a target StatefulSet that planned it, the first and each after it or a ScratchVolume selecting it changed, by namespace.",
	}, []string{"namespace"})
)

func init() {
	metrics.Registry.MustRegister(statefulSetWrites, injectionsBlocked, targetsInjected, restoresTotal, writeWarsTotal, targetsPlanned)
}

// countBlocked counts a target left untouched for reason; "" counts nothing.
func countBlocked(reason string) {
	if reason != "" {
		injectionsBlocked.WithLabelValues(reason).Inc()
	}
}
