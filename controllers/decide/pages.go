package decide

// This file decides what the status says about the pages of the pods' RAM volumes: each pod's
// report from its node agent, per target, and the LargePages condition.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// podPages lists what the observed pods' volumes run with, by pod name; pods whose agent has not
// said yet are left out.
func podPages(obs []v1alpha1.ScratchVolumeUsage) []v1alpha1.PodLargePages {
	var out []v1alpha1.PodLargePages
	for _, o := range obs {
		if o.LargePages != nil {
			out = append(out, v1alpha1.PodLargePages{Pod: o.Pod, VolumeLargePages: *o.LargePages})
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.PodLargePages) int { return cmp.Compare(a.Pod, b.Pod) })
	return out
}

// pagesRank orders the states a condition names, the one a user must act on first.
var pagesRank = map[v1alpha1.LargePagesState]int{
	v1alpha1.LargePagesFailed:      0,
	v1alpha1.LargePagesUnsupported: 1,
	v1alpha1.LargePagesDisabled:    2,
	v1alpha1.LargePagesOverridden:  3,
}

// largePagesCondition sums up the pods' reports: True when every one runs with what want asks
// for, else False with the state of the pods to look at first, naming them and quoting the
// first one's message.
func largePagesCondition(want v1alpha1.LargePagesPolicy, pods []v1alpha1.PodLargePages) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionLargePages}
	if len(pods) == 0 {
		c.Status, c.Reason = metav1.ConditionUnknown, v1alpha1.ReasonCapacityNotObserved
		c.Message = "no node agent has reported a pod's RAM volume yet: pods are reported once they run the injected template on a node where the node agent runs"
		return c
	}
	worst, byState := v1alpha1.LargePagesState(""), map[v1alpha1.LargePagesState][]v1alpha1.PodLargePages{}
	for _, p := range pods {
		r, bad := pagesRank[p.State]
		if !bad {
			continue
		}
		byState[p.State] = append(byState[p.State], p)
		if worst == "" || r < pagesRank[worst] {
			worst = p.State
		}
	}
	if worst == "" {
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonLargePagesAsRequested
		c.Message = fmt.Sprintf("the RAM volumes of %d pod(s) run with %s", len(pods), pagesWanted(want))
		return c
	}
	bad := byState[worst]
	names := make([]string, 0, len(bad))
	for _, p := range bad {
		names = append(names, p.Pod)
	}
	c.Status, c.Reason = metav1.ConditionFalse, string(worst)
	c.Message = fmt.Sprintf("%d of %d pod(s) run without %s (%s: %s): %s", len(bad), len(pods), pagesWanted(want),
		strings.ToLower(string(worst)), strings.Join(names, ", "), bad[0].Message)
	return c
}

func pagesWanted(want v1alpha1.LargePagesPolicy) string {
	if want == v1alpha1.LargePagesNever {
		return "the pages the kubelet mounts them with (spec.largePages Never)"
	}
	return "large pages (huge=within_size)"
}
