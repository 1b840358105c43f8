package controllers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestStatusWriteReplacesTheWholeStatus leaves in the stored status what an earlier writer put there
// and the controller would not compute now — a target that is gone, usage figures, a message, a
// recommendation — and checks that the next status write takes all of it away, the nested fields
// included, which a merge patch of the new status alone would keep.
func TestStatusWriteReplacesTheWholeStatus(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	settle(t, e, ns)
	settled := getSV(t, e, ns, "tmp").Status

	stale := getSV(t, e, ns, "tmp")
	stale.Status.Targets = append(stale.Status.Targets, v1alpha1.ScratchTargetStatus{Name: "gone", Injected: true, ConfigHash: "old"})
	stale.Status.Targets[0].Usage = &v1alpha1.ScratchUsage{Pods: 2, PeakBytes: 1 << 20, WindowPeakBytes: 1 << 19}
	stale.Status.Targets[0].Message = "an earlier message"
	stale.Status.Usage = &v1alpha1.ScratchUsage{Pods: 2, PeakBytes: 1 << 20, FullPods: 1}
	stale.Status.RecommendedSize = ptr.To(resource.MustParse("1Gi"))
	if err := e.Client.Status().Update(ctxFor(t), stale); err != nil {
		t.Fatal(err)
	}
	// A label change brings a reconcile (a status change alone does not).
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Labels = map[string]string{"touched": "yes"} })

	want, err := json.Marshal(settled)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		got, err := json.Marshal(getSV(t, e, ns, "tmp").Status)
		if err != nil {
			return err.Error()
		}
		if !bytes.Equal(got, want) {
			return fmt.Sprintf("status\n  %s\nwant\n  %s", got, want)
		}
		return ""
	})
}
