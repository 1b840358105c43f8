package decide

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

func TestLargePagesCondition(t *testing.T) {
	pod := func(name string, state v1alpha1.LargePagesState, msg string) v1alpha1.PodLargePages {
		return v1alpha1.PodLargePages{Pod: name, VolumeLargePages: v1alpha1.VolumeLargePages{State: state, Message: msg}}
	}
	tests := []struct {
		name   string
		want   v1alpha1.LargePagesPolicy
		pods   []v1alpha1.PodLargePages
		status metav1.ConditionStatus
		reason string
		words  []string
	}{
		{"none reported", v1alpha1.LargePagesWithinSize, nil, metav1.ConditionUnknown, v1alpha1.ReasonCapacityNotObserved, []string{"no node agent"}},
		{"all applied", v1alpha1.LargePagesWithinSize, []v1alpha1.PodLargePages{pod("a-0", v1alpha1.LargePagesApplied, ""), pod("a-1", v1alpha1.LargePagesApplied, "")},
			metav1.ConditionTrue, v1alpha1.ReasonLargePagesAsRequested, []string{"2 pod(s)", "huge=within_size"}},
		{"never, as mounted", v1alpha1.LargePagesNever, []v1alpha1.PodLargePages{pod("a-0", v1alpha1.LargePagesDefault, "")},
			metav1.ConditionTrue, v1alpha1.ReasonLargePagesAsRequested, []string{"spec.largePages Never"}},
		{"a failure comes before a refusal", v1alpha1.LargePagesWithinSize, []v1alpha1.PodLargePages{
			pod("a-0", v1alpha1.LargePagesUnsupported, "no THP"), pod("a-1", v1alpha1.LargePagesFailed, "needs CAP_SYS_ADMIN"), pod("a-2", v1alpha1.LargePagesApplied, "")},
			metav1.ConditionFalse, string(v1alpha1.LargePagesFailed), []string{"1 of 3 pod(s)", "a-1", "needs CAP_SYS_ADMIN"}},
		{"disabled agents", v1alpha1.LargePagesWithinSize, []v1alpha1.PodLargePages{pod("a-0", v1alpha1.LargePagesDisabled, "--large-pages=false"), pod("a-1", v1alpha1.LargePagesDisabled, "--large-pages=false")},
			metav1.ConditionFalse, string(v1alpha1.LargePagesDisabled), []string{"2 of 2 pod(s)", "a-0, a-1", "--large-pages=false"}},
		{"overridden by the node", v1alpha1.LargePagesWithinSize, []v1alpha1.PodLargePages{pod("a-0", v1alpha1.LargePagesOverridden, "shmem_enabled is deny")},
			metav1.ConditionFalse, string(v1alpha1.LargePagesOverridden), []string{"deny"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := largePagesCondition(tt.want, tt.pods)
			if c.Type != v1alpha1.ConditionLargePages || c.Status != tt.status || c.Reason != tt.reason {
				t.Errorf("condition = %s %s %s, want %s %s", c.Type, c.Status, c.Reason, tt.status, tt.reason)
			}
			for _, w := range tt.words {
				if !strings.Contains(c.Message, w) {
					t.Errorf("message %q lacks %q", c.Message, w)
				}
			}
		})
	}
}

func TestPodPagesLeavesOutPodsNotReported(t *testing.T) {
	got := podPages([]v1alpha1.ScratchVolumeUsage{
		{Pod: "db-1", LargePages: &v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesApplied}},
		{Pod: "db-0"},
		{Pod: "db-0x", LargePages: &v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesFailed}},
	})
	if len(got) != 2 || got[0].Pod != "db-0x" || got[1].Pod != "db-1" {
		t.Errorf("podPages = %+v, want db-0x and db-1, sorted, db-0 left out", got)
	}
}
