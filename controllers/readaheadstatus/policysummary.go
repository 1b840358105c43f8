package readaheadstatus

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// policySummary is what the NodeIOProfiles say about one policy across the matched nodes.
type policySummary struct {
	matched, applied, degraded int32
	selectorErr                error
	// waiting are nodes whose agent has not reported read-ahead yet.
	waiting []string
	// noDevices are nodes where the policy selects no device (their ReadAheadApplied says why).
	noDevices []string
	// outranked are nodes where every device the policy selects went to another policy.
	outranked []string
	// pending are node/device pairs not yet at the desired value, without a problem.
	pending []string
	// problems are node/device pairs the agent could not tune, with why.
	problems []string
	// lostTo are node/device pairs another policy won, with the winner.
	lostTo []string
}

// summarizePolicy counts the nodes the policy's nodeSelector picks, and reads each one's
// NodeIOProfile: a node is applied when the policy owns at least one device there and every
// device it owns has current == desired and no problem, and degraded when a device it owns
// reports a problem.
func summarizePolicy(p *v1alpha1.ReadAheadPolicy, nodes []metav1.PartialObjectMetadata, profiles []v1alpha1.NodeIOProfile) policySummary {
	var s policySummary
	byNode := make(map[string]*v1alpha1.NodeIOProfile, len(profiles))
	for i := range profiles {
		byNode[profiles[i].Name] = &profiles[i]
	}
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b metav1.PartialObjectMetadata) int { return strings.Compare(a.Name, b.Name) })
	for i := range nodes {
		ok, err := p.SelectsNode(nodes[i].Labels)
		if err != nil {
			s.selectorErr = err
			return s
		}
		if ok {
			s.matched++
			s.addNode(p.Name, nodes[i].Name, byNode[nodes[i].Name])
		}
	}
	return s
}

func (s *policySummary) addNode(policy, node string, profile *v1alpha1.NodeIOProfile) {
	if profile == nil || meta.FindStatusCondition(profile.Status.Conditions, v1alpha1.ConditionReadAheadApplied) == nil {
		s.waiting = append(s.waiting, node)
		return
	}
	owned, lost, applied, degraded := 0, 0, true, false
	for _, e := range profile.Status.ReadAhead {
		issue, losers := e.Message, e.OverriddenPolicies
		where := node + "/" + e.Device
		switch {
		case e.Policy == policy:
			owned++
			switch {
			case issue != "":
				s.problems = append(s.problems, where+": "+issue)
				applied, degraded = false, true
			case e.CurrentKiB == nil || e.DesiredKiB == nil || *e.CurrentKiB != *e.DesiredKiB:
				s.pending = append(s.pending, where)
				applied = false
			}
		case slices.Contains(losers, policy):
			lost++
			s.lostTo = append(s.lostTo, fmt.Sprintf("ReadAheadPolicy %s wins on %s", e.Policy, where))
		}
	}
	switch {
	case owned > 0 && applied:
		s.applied++
	case owned == 0 && lost > 0:
		s.outranked = append(s.outranked, node)
	case owned == 0:
		s.noDevices = append(s.noDevices, node)
	}
	if degraded {
		s.degraded++
	}
}

// status is the policy's new status; the conditions keep their transition times while their
// status stays.
func (s policySummary) status(p *v1alpha1.ReadAheadPolicy, now metav1.Time) v1alpha1.ReadAheadPolicyStatus {
	st := v1alpha1.ReadAheadPolicyStatus{
		ObservedGeneration: p.Generation,
		NodesMatched:       s.matched, NodesApplied: s.applied, NodesDegraded: s.degraded,
		Conditions: slices.Clone(p.Status.Conditions),
	}
	for _, c := range []metav1.Condition{s.appliedCondition(), s.degradedCondition(), s.overriddenCondition()} {
		c.ObservedGeneration = p.Generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

func (s policySummary) appliedCondition() metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionApplied, Status: metav1.ConditionFalse}
	switch {
	case s.selectorErr != nil:
		c.Reason, c.Message = v1alpha1.ReasonInvalidNodeSelector, fmt.Sprintf("spec.nodeSelector is invalid: %v", s.selectorErr)
		return c
	case s.matched == 0:
		c.Reason, c.Message = v1alpha1.ReasonNoMatchingNodes, "no node matches spec.nodeSelector"
		return c
	case s.applied == s.matched:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonApplied
		c.Message = fmt.Sprintf("every device the policy owns has its read-ahead on all %d matched %s",
			s.matched, conditions.Plural(int(s.matched), "node", "nodes"))
		return c
	}
	var why []string
	add := func(reason string, items []string, format string) {
		if len(items) == 0 {
			return
		}
		if c.Reason == "" {
			c.Reason = reason
		}
		why = append(why, fmt.Sprintf(format, conditions.Names(items, conditions.MaxListed)))
	}
	add(v1alpha1.ReasonDegraded, s.problems, "degraded: %s")
	add(v1alpha1.ReasonOverridden, s.outranked, "other policies win every device it selects on %s")
	add(v1alpha1.ReasonNoDevices, s.noDevices, "it selects no device on %s (the ReadAheadApplied condition of their NodeIOProfiles says why)")
	add(v1alpha1.ReasonWaitingForAgent, s.waiting, "the node agent has not reported read-ahead on %s yet")
	add(v1alpha1.ReasonPending, s.pending, "not yet at the desired value: %s")
	c.Message = fmt.Sprintf("%d of %d matched nodes applied; %s", s.applied, s.matched, strings.Join(why, "; "))
	return c
}

func (s policySummary) degradedCondition() metav1.Condition {
	if s.degraded == 0 {
		return metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoProblems,
			Message: "no node reports a problem with a device this policy owns"}
	}
	return metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDegraded,
		Message: fmt.Sprintf("%d %s could not tune every device: %s", s.degraded, conditions.Plural(int(s.degraded), "node", "nodes"), conditions.List(s.problems, conditions.MaxListed))}
}

func (s policySummary) overriddenCondition() metav1.Condition {
	if len(s.lostTo) == 0 {
		return metav1.Condition{Type: v1alpha1.ConditionOverridden, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNotOverridden,
			Message: "no other policy wins a device this policy selects"}
	}
	return metav1.Condition{Type: v1alpha1.ConditionOverridden, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonOverridden,
		Message: conditions.List(s.lostTo, conditions.MaxListed) + "; raise spec.priority to take these devices"}
}
