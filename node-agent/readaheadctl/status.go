package readaheadctl

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// writeStatus server-side applies the read-ahead part of the NodeIOProfile status under
// FieldManager: status.readAhead and the ReadAheadApplied condition, nothing else, so the
// probe's fields are never sent and never touched. Nothing is sent when the NodeIOProfile
// already says the same.
func (r *nodeReconciler) writeStatus(ctx context.Context, node *metav1.PartialObjectMetadata, rep report) error {
	profile := &v1alpha1.NodeIOProfile{}
	err := r.client.Get(ctx, client.ObjectKey{Name: r.nodeName}, profile)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.createProfile(ctx, node); err != nil {
			return err
		}
		profile = &v1alpha1.NodeIOProfile{}
	case err != nil:
		return fmt.Errorf("failed to get NodeIOProfile %s: %w", r.nodeName, err)
	}
	conditions := []metav1.Condition{rep.applied}
	keepTransitionTimes(conditions, profile.Status.Conditions, metav1.NewTime(r.now()))
	if ownStatusEqual(profile.Status, rep.devices, conditions) {
		return nil
	}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.NodeIOProfileStatus{
		ReadAhead: rep.devices, Conditions: conditions,
	})
	if err != nil {
		return fmt.Errorf("failed to encode the read-ahead status of NodeIOProfile %s: %w", r.nodeName, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "NodeIOProfile",
		"metadata":   map[string]any{"name": r.nodeName},
		"status":     status,
	}}
	// Forcing only ever takes these fields from an earlier owner of the same fields (a hand edit
	// or an older agent): they are this manager's by design.
	err = r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManager), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("failed to apply the read-ahead status of NodeIOProfile %s: %w", r.nodeName, err)
	}
	log.FromContext(ctx).Info("Applied NodeIOProfile read-ahead status", "nodeioprofile", r.nodeName,
		"devices", len(rep.devices), "applied", rep.applied.Status, "reason", rep.applied.Reason)
	return nil
}

// createProfile creates the node's NodeIOProfile, owned by the Node so that it goes with it. The
// probe may create it at the same moment; whoever comes second uses the first one's.
func (r *nodeReconciler) createProfile(ctx context.Context, node *metav1.PartialObjectMetadata) error {
	profile := &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{
		Name: node.Name,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
		}},
	}}
	err := r.client.Create(ctx, profile, client.FieldOwner(FieldManager))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create NodeIOProfile %s: %w", node.Name, err)
	}
	return nil
}

// keepTransitionTimes sets each condition's lastTransitionTime: the old one while the status
// stays, now when it changes.
func keepTransitionTimes(conditions, old []metav1.Condition, now metav1.Time) {
	for i := range conditions {
		c := &conditions[i]
		c.LastTransitionTime = now
		if prev := meta.FindStatusCondition(old, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}
}

// ownStatusEqual reports whether the NodeIOProfile already holds this manager's part of the
// status. The device list is compared in name order, as a list map has no meaningful order.
func ownStatusEqual(status v1alpha1.NodeIOProfileStatus, devices []v1alpha1.DeviceReadAheadStatus, conditions []metav1.Condition) bool {
	have := sortedDevices(status.ReadAhead)
	want := sortedDevices(devices)
	if len(have) != len(want) || (len(want) > 0 && !equality.Semantic.DeepEqual(have, want)) {
		return false
	}
	for _, c := range conditions {
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
