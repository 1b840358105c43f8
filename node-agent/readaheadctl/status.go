package readaheadctl

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// writeStatus server-side applies the read-ahead part of the NodeIOProfile status under
// FieldManager: status.readAhead and the ReadAheadApplied condition, nothing else, so the
// probe's fields are never sent and never touched. Nothing is sent when the NodeIOProfile
// already says the same.
func (r *nodeReconciler) writeStatus(ctx context.Context, rep report) error {
	profile, err := r.profile.Ensure(ctx)
	if err != nil {
		return err
	}
	conds := []metav1.Condition{rep.applied}
	conditions.KeepTransitionTimes(conds, profile.Status.Conditions, metav1.NewTime(r.now()))
	if ownStatusEqual(profile.Status, rep.devices, conds) {
		return nil
	}
	if err := r.profile.ApplyStatus(ctx, &v1alpha1.NodeIOProfileStatus{ReadAhead: rep.devices, Conditions: conds}); err != nil {
		return err
	}
	log.FromContext(ctx).Info("Applied NodeIOProfile read-ahead status", "nodeioprofile", r.nodeName,
		"devices", len(rep.devices), "applied", rep.applied.Status, "reason", rep.applied.Reason)
	return nil
}

// ownStatusEqual reports whether the NodeIOProfile already holds this manager's part of the
// status. The device list is compared in name order, as a list map has no meaningful order.
func ownStatusEqual(status v1alpha1.NodeIOProfileStatus, devices []v1alpha1.DeviceReadAheadStatus, conds []metav1.Condition) bool {
	have := sortedDevices(status.ReadAhead)
	want := sortedDevices(devices)
	if len(have) != len(want) || (len(want) > 0 && !equality.Semantic.DeepEqual(have, want)) {
		return false
	}
	for _, c := range conds {
		prev := meta.FindStatusCondition(status.Conditions, c.Type)
		if prev == nil || prev.Status != c.Status || prev.Reason != c.Reason || prev.Message != c.Message ||
			!prev.LastTransitionTime.Equal(&c.LastTransitionTime) {
			return false
		}
	}
	return true
}

func sortedDevices(devices []v1alpha1.DeviceReadAheadStatus) []v1alpha1.DeviceReadAheadStatus {
	out := slices.Clone(devices)
	slices.SortFunc(out, func(a, b v1alpha1.DeviceReadAheadStatus) int { return strings.Compare(a.Device, b.Device) })
	return out
}
