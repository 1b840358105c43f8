package readaheadtest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// PolicyTime is the creation time Policy gives a policy unless CreatedAt says otherwise.
var PolicyTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// PolicyOption changes a policy Policy builds.
type PolicyOption func(*v1alpha1.ReadAheadPolicy)

// Policy builds a ReadAheadPolicy that sets kib on the devices named by the globs in names,
// created at PolicyTime, for tests of the agent's decisions and of the operator's summaries.
func Policy(name string, kib int64, names []string, opts ...PolicyOption) *v1alpha1.ReadAheadPolicy {
	p := &v1alpha1.ReadAheadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(PolicyTime)},
		Spec:       v1alpha1.ReadAheadPolicySpec{ReadAheadKiB: kib, Mode: v1alpha1.ReadAheadSet},
	}
	for _, n := range names {
		p.Spec.Devices.Names = append(p.Spec.Devices.Names, v1alpha1.DeviceGlob(n))
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Priority sets spec.priority.
func Priority(n int32) PolicyOption {
	return func(p *v1alpha1.ReadAheadPolicy) { p.Spec.Priority = n }
}

// CreatedAt sets the creation time, which breaks ties between equal priorities.
func CreatedAt(t time.Time) PolicyOption {
	return func(p *v1alpha1.ReadAheadPolicy) { p.CreationTimestamp = metav1.NewTime(t) }
}

// NodeSelector sets spec.nodeSelector, written as the metav1.LabelSelector the API's JSON mirrors.
func NodeSelector(sel *metav1.LabelSelector) PolicyOption {
	return func(p *v1alpha1.ReadAheadPolicy) { p.Spec.NodeSelector = FromMeta(sel) }
}

// FromMeta converts a metav1.LabelSelector into the API's LabelSelector, with no checks: tests
// use it to build selectors the API server would refuse, too.
func FromMeta(sel *metav1.LabelSelector) *v1alpha1.LabelSelector {
	if sel == nil {
		return nil
	}
	out := &v1alpha1.LabelSelector{}
	for k, v := range sel.MatchLabels {
		if out.MatchLabels == nil {
			out.MatchLabels = map[string]v1alpha1.LabelValue{}
		}
		out.MatchLabels[k] = v1alpha1.LabelValue(v)
	}
	for _, r := range sel.MatchExpressions {
		req := v1alpha1.LabelSelectorRequirement{Key: v1alpha1.LabelKey(r.Key), Operator: r.Operator}
		for _, v := range r.Values {
			req.Values = append(req.Values, v1alpha1.LabelValue(v))
		}
		out.MatchExpressions = append(out.MatchExpressions, req)
	}
	return out
}

// MountPaths adds devices selected by what is mounted on them.
func MountPaths(paths ...string) PolicyOption {
	return func(p *v1alpha1.ReadAheadPolicy) {
		for _, mp := range paths {
			p.Spec.Devices.MountPaths = append(p.Spec.Devices.MountPaths, v1alpha1.AbsolutePath(mp))
		}
	}
}
