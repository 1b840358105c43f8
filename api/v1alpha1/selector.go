package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// LabelSelector is a Kubernetes label selector (the same JSON as metav1.LabelSelector) whose keys
// and values are checked at admission with Kubernetes' own rules, so that a selector the API
// admits is one the controllers can always parse. Its lists are bounded, which keeps the cost of
// those checks within what the API server allows.
//
// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, !format.qualifiedName().validate(k).hasValue())",message="matchLabels: every key must be a label key such as app or app.kubernetes.io/name: a name of at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, optionally after a DNS prefix and '/'"
type LabelSelector struct {
	// MatchLabels selects objects whose labels have these values.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`

	// MatchExpressions are requirements on labels; all must hold.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a LabelSelector: a key, an operator and values.
type LabelSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	//
	// +required
	Key LabelKey `json:"key"`

	// Operator is In, NotIn, Exists or DoesNotExist.
	//
	// +required
	Operator metav1.LabelSelectorOperator `json:"operator"`

	// Values for In and NotIn (at least one); empty for Exists and DoesNotExist.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Values []LabelValue `json:"values,omitempty"`
}

// LabelKey is a label key: an optional DNS subdomain prefix and '/', then a name.
//
// +kubebuilder:validation:MaxLength=317
// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="must be a label key such as app or app.kubernetes.io/name: a name of at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, optionally after a DNS prefix and '/'"
type LabelKey string

// LabelValue is a label value.
//
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="!format.labelValue().validate(self).hasValue()",message="must be a label value: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit (no spaces)"
type LabelValue string

// AsSelector returns the labels.Selector the selector stands for; nil selects nothing.
func (s *LabelSelector) AsSelector() (labels.Selector, error) {
	if s == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(s.Meta())
}

// Meta is the selector as a metav1.LabelSelector.
func (s *LabelSelector) Meta() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{}
	if s.MatchLabels != nil {
		out.MatchLabels = make(map[string]string, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			out.MatchLabels[k] = string(v)
		}
	}
	for _, r := range s.MatchExpressions {
		req := metav1.LabelSelectorRequirement{Key: string(r.Key), Operator: r.Operator}
		for _, v := range r.Values {
			req.Values = append(req.Values, string(v))
		}
		out.MatchExpressions = append(out.MatchExpressions, req)
	}
	return out
}
