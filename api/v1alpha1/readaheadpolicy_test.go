package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelectsNode(t *testing.T) {
	db := map[string]string{"role": "db", "zone": "a"}
	tests := []struct {
		name    string
		sel     *LabelSelector
		want    bool
		wantErr bool
	}{
		{name: "no selector picks every node", sel: nil, want: true},
		{name: "empty selector picks every node", sel: &LabelSelector{}, want: true},
		{name: "matching labels", sel: &LabelSelector{MatchLabels: map[string]LabelValue{"role": "db"}}, want: true},
		{name: "other labels", sel: &LabelSelector{MatchLabels: map[string]LabelValue{"role": "web"}}, want: false},
		{name: "expression", sel: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{
			{Key: "zone", Operator: metav1.LabelSelectorOpNotIn, Values: []LabelValue{"a"}}}}, want: false},
		{name: "invalid operator", sel: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{
			{Key: "zone", Operator: "Near"}}}, wantErr: true},
	}
	for _, tt := range tests {
		p := &ReadAheadPolicy{Spec: ReadAheadPolicySpec{NodeSelector: tt.sel}}
		got, err := p.SelectsNode(db)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%s: SelectsNode = %t, %v; want %t, error %t", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}
