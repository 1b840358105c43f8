package controllers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestAutomaticSizing feeds the controller node agents' reports of a 512Mi volume whose recent
// peaks call for more, under spec.sizing Automatic with the shortest sustainFor: it proposes the
// size, waits for approval, then writes spec.size under its own field manager, records the
// resize with its figures, and the StatefulSet gets the larger volume. A spike older than the
// window does not move it back.
func TestAutomaticSizing(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sv := scratchVolume(ns, "tmp", "db")
	sv.Spec.Sizing = &v1alpha1.SizingPolicy{Mode: v1alpha1.SizingAutomatic, Min: new(resource.MustParse("256Mi")), Max: new(resource.MustParse("1Gi")),
		SustainFor: &metav1.Duration{Duration: time.Minute}, Interval: &metav1.Duration{Duration: time.Minute}}
	create(t, e, mariadbStatefulSet(ns, "db"), sv)
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	report := func(pod string, windowMi, peakMi int64) v1alpha1.ScratchVolumeUsage {
		return v1alpha1.ScratchVolumeUsage{Namespace: ns, Pod: pod, ScratchVolume: "tmp", SampledSince: since,
			SizeBytes: 512 * mib, PeakBytes: peakMi * mib, WindowPeakBytes: windowMi * mib}
	}
	// 480 MiB of 512: 600 MiB with the margin, 640Mi in 64Mi steps.
	agent := agentReports(t, e, ns+"-a", report("db-0", 480, 480), report("db-1", 200, 200))
	var proposal *v1alpha1.SizingStatus
	testenv.Eventually(t, waitTimeout, func() string {
		proposal = getSV(t, e, ns, "tmp").Status.Sizing
		if proposal == nil || proposal.Reason != v1alpha1.ReasonSizingSustaining || proposal.Proposed == nil || proposal.Proposed.Cmp(resource.MustParse("640Mi")) != 0 {
			return fmt.Sprintf("sizing %+v, want 640Mi proposed and sustaining", proposal)
		}
		return ""
	})
	// Sustained for a minute, no maintenance window: it waits for approval, and writes nothing.
	testenv.Eventually(t, 2*time.Minute, func() string {
		proposal = getSV(t, e, ns, "tmp").Status.Sizing
		if proposal.Reason != v1alpha1.ReasonAwaitingApproval || proposal.ID == "" {
			return fmt.Sprintf("sizing %+v, want the resize waiting for approval", proposal)
		}
		return ""
	})
	if size := getSV(t, e, ns, "tmp").Spec.Size; size.Cmp(resource.MustParse("512Mi")) != 0 {
		t.Fatalf("spec.size became %s before anyone approved", size.String())
	}
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) {
		metav1.SetMetaDataAnnotation(&sv.ObjectMeta, v1alpha1.ApproveChangeAnnotation, proposal.ID)
	})
	testenv.Eventually(t, waitTimeout, func() string {
		got := getSV(t, e, ns, "tmp")
		if got.Spec.Size.Cmp(resource.MustParse("640Mi")) != 0 || got.Status.Sizing == nil || got.Status.Sizing.Last != "512Mi → 640Mi" {
			return fmt.Sprintf("size %s, sizing %+v: want 640Mi written and recorded", got.Spec.Size.String(), got.Status.Sizing)
		}
		h := got.Status.Sizing.History
		if len(h) != 1 || h[0].WindowPeakBytes != 480*mib || h[0].Pods != 2 || !strings.Contains(h[0].Why, proposal.ID) {
			return fmt.Sprintf("history %+v", h)
		}
		return ""
	})
	got := getSV(t, e, ns, "tmp")
	owner := ""
	for _, f := range got.ManagedFields {
		if f.FieldsV1 != nil && strings.Contains(f.FieldsV1.GetRawString(), `"f:size"`) {
			owner = f.Manager
		}
	}
	if owner != v1alpha1.SizingFieldManager {
		t.Errorf("spec.size is owned by %q, want %s", owner, v1alpha1.SizingFieldManager)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		vol := findVolume(&getSTS(t, e, ns, "db").Spec.Template.Spec, sv.VolumeName())
		if vol == nil || vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Cmp(resource.MustParse("640Mi")) != 0 {
			return fmt.Sprintf("the StatefulSet's volume is %+v, want 640Mi", vol)
		}
		return ""
	})

	// The pods restart with the larger volume and report from zero; a spike of the past stays
	// in the peak since they started, not in the window: nothing to change.
	agent.set(t, v1alpha1.ScratchVolumeUsage{Namespace: ns, Pod: "db-0", ScratchVolume: "tmp", SampledSince: metav1.NewTime(time.Now().Truncate(time.Second)),
		SizeBytes: 640 * mib, PeakBytes: 600 * mib, WindowPeakBytes: 400 * mib})
	testenv.Eventually(t, waitTimeout, func() string {
		if s := getSV(t, e, ns, "tmp").Status.Sizing; s == nil || s.Reason != v1alpha1.ReasonSizingSteady {
			return fmt.Sprintf("sizing %+v, want Steady", s)
		}
		return ""
	})
	testenv.Consistently(t, 3*time.Second, func() string {
		if size := getSV(t, e, ns, "tmp").Spec.Size; size.Cmp(resource.MustParse("640Mi")) != 0 {
			return "spec.size moved to " + size.String()
		}
		return ""
	})
}
