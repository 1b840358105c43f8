package readaheadstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

func node(name string, labels map[string]string) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func profile(name string, entries ...v1alpha1.DeviceReadAheadStatus) v1alpha1.NodeIOProfile {
	return v1alpha1.NodeIOProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1alpha1.NodeIOProfileStatus{
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReadAheadApplied, Status: metav1.ConditionTrue}},
			ReadAhead:  entries,
		},
	}
}

func entry(device, policy string, desired, current int64, msg string, overrides ...string) v1alpha1.DeviceReadAheadStatus {
	return v1alpha1.DeviceReadAheadStatus{Device: device, Policy: policy, DesiredKiB: &desired, CurrentKiB: &current, Message: msg,
		OverriddenPolicies: overrides}
}

func TestSummarizePolicy(t *testing.T) {
	db := map[string]string{"role": "db"}
	type counts struct {
		Matched, Applied, Degraded                int32
		AppliedCond, DegradedCond, OverriddenCond string
	}
	tests := []struct {
		name     string
		policy   *v1alpha1.ReadAheadPolicy
		nodes    []metav1.PartialObjectMetadata
		profiles []v1alpha1.NodeIOProfile
		want     counts
	}{{
		name:     "applied on every matched node; an unmatched node does not count",
		policy:   readaheadtest.Policy("scan", 4096, []string{"sd?"}, readaheadtest.NodeSelector(&metav1.LabelSelector{MatchLabels: db})),
		nodes:    []metav1.PartialObjectMetadata{node("a", db), node("b", db), node("web", nil)},
		profiles: []v1alpha1.NodeIOProfile{profile("a", entry("sda", "scan", 4096, 4096, "")), profile("b", entry("sda", "scan", 4096, 4096, "")), profile("web")},
		want: counts{Matched: 2, Applied: 2, AppliedCond: "True Applied: every device the policy owns has its read-ahead on all 2 matched nodes",
			DegradedCond: "False NoProblems", OverriddenCond: "False NotOverridden"},
	}, {
		name:   "the loser of an overlap is Overridden; a node where it loses everything is not applied",
		policy: readaheadtest.Policy("base", 1024, []string{"sda"}),
		nodes:  []metav1.PartialObjectMetadata{node("a", nil)},
		profiles: []v1alpha1.NodeIOProfile{profile("a",
			entry("sda", "bulk", 8192, 8192, "", "base"), entry("sdb", "bulk", 8192, 8192, ""))},
		want: counts{Matched: 1, AppliedCond: "False Overridden: 0 of 1 matched nodes applied; other policies win every device it selects on a",
			DegradedCond: "False NoProblems", OverriddenCond: "True Overridden: ReadAheadPolicy bulk wins on a/sda; raise spec.priority to take these devices"},
	}, {
		name:   "the winner of an overlap is applied and not Overridden",
		policy: readaheadtest.Policy("bulk", 8192, []string{"sd?"}),
		nodes:  []metav1.PartialObjectMetadata{node("a", nil)},
		profiles: []v1alpha1.NodeIOProfile{profile("a",
			entry("sda", "bulk", 8192, 8192, "", "base"), entry("sdb", "bulk", 8192, 8192, ""))},
		want: counts{Matched: 1, Applied: 1, AppliedCond: "True Applied: every device the policy owns has its read-ahead on all 1 matched node",
			DegradedCond: "False NoProblems", OverriddenCond: "False NotOverridden"},
	}, {
		name:   "a device with a problem makes its node degraded",
		policy: readaheadtest.Policy("scan", 4096, []string{"sd?"}),
		nodes:  []metav1.PartialObjectMetadata{node("a", nil), node("b", nil)},
		profiles: []v1alpha1.NodeIOProfile{
			profile("a", entry("sda", "scan", 4096, 4096, ""), entry("sdb", "scan", 4096, 128, "permission denied", "base")),
			profile("b", entry("sda", "scan", 4096, 4096, "")),
		},
		want: counts{Matched: 2, Applied: 1, Degraded: 1,
			AppliedCond:    "False Degraded: 1 of 2 matched nodes applied; degraded: a/sdb: permission denied",
			DegradedCond:   "True Degraded: 1 node could not tune every device: a/sdb: permission denied",
			OverriddenCond: "False NotOverridden"},
	}, {
		name:     "agents that have not reported, and values not reached yet",
		policy:   readaheadtest.Policy("scan", 4096, []string{"sd?"}),
		nodes:    []metav1.PartialObjectMetadata{node("a", nil), node("b", nil), node("c", nil)},
		profiles: []v1alpha1.NodeIOProfile{profile("a", entry("sda", "scan", 4096, 128, "")), {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
		want: counts{Matched: 3,
			AppliedCond:  "False WaitingForAgent: 0 of 3 matched nodes applied; the node agent has not reported read-ahead on b, c yet; not yet at the desired value: a/sda",
			DegradedCond: "False NoProblems", OverriddenCond: "False NotOverridden"},
	}, {
		name:     "a policy that selects no device on a node (its glob matches nothing there)",
		policy:   readaheadtest.Policy("scan", 4096, []string{"nvme*"}),
		nodes:    []metav1.PartialObjectMetadata{node("a", nil)},
		profiles: []v1alpha1.NodeIOProfile{profile("a")},
		want: counts{Matched: 1,
			AppliedCond:  "False NoDevices: 0 of 1 matched nodes applied; it selects no device on a (the ReadAheadApplied condition of their NodeIOProfiles says why)",
			DegradedCond: "False NoProblems", OverriddenCond: "False NotOverridden"},
	}, {
		name:   "no matching node",
		policy: readaheadtest.Policy("scan", 4096, []string{"sd?"}, readaheadtest.NodeSelector(&metav1.LabelSelector{MatchLabels: db})),
		nodes:  []metav1.PartialObjectMetadata{node("web", nil)},
		want: counts{AppliedCond: "False NoMatchingNodes: no node matches spec.nodeSelector",
			DegradedCond: "False NoProblems", OverriddenCond: "False NotOverridden"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.policy.Generation = 3
			st := summarizePolicy(tt.policy, tt.nodes, tt.profiles).status(tt.policy, metav1.NewTime(t0))
			cond := func(typ string) string {
				for _, c := range st.Conditions {
					if c.Type == typ {
						if c.ObservedGeneration != 3 {
							t.Errorf("%s observedGeneration = %d", typ, c.ObservedGeneration)
						}
						s := string(c.Status) + " " + c.Reason
						if c.Status == metav1.ConditionTrue || typ == v1alpha1.ConditionApplied {
							s += ": " + c.Message
						}
						return s
					}
				}
				return "missing"
			}
			got := counts{Matched: st.NodesMatched, Applied: st.NodesApplied, Degraded: st.NodesDegraded,
				AppliedCond: cond(v1alpha1.ConditionApplied), DegradedCond: cond(v1alpha1.ConditionDegraded), OverriddenCond: cond(v1alpha1.ConditionOverridden)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d", st.ObservedGeneration)
			}
		})
	}
}

func TestPolicyStatusKeepsTransitionTimes(t *testing.T) {
	p := readaheadtest.Policy("scan", 4096, []string{"sd?"})
	nodes := []metav1.PartialObjectMetadata{node("a", nil)}
	profiles := []v1alpha1.NodeIOProfile{profile("a", entry("sda", "scan", 4096, 4096, ""))}
	p.Status = summarizePolicy(p, nodes, profiles).status(p, metav1.NewTime(t0))
	later := summarizePolicy(p, nodes, profiles).status(p, metav1.NewTime(t0.Add(time.Hour)))
	if diff := cmp.Diff(p.Status, later); diff != "" {
		t.Errorf("an unchanged summary changed the status (-before +after):\n%s", diff)
	}
}
