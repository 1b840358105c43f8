package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelectsNode(t *testing.T) {
	db := map[string]string{"role": "db", "zone": "a"}
	tests := []struct {
		name    string
		sel     *metav1.LabelSelector
		want    bool
		wantErr bool
	}{
		{name: "no selector picks every node", sel: nil, want: true},
		{name: "empty selector picks every node", sel: &metav1.LabelSelector{}, want: true},
		{name: "matching labels", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "db"}}, want: true},
		{name: "other labels", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "web"}}, want: false},
		{name: "expression", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "zone", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}}}}, want: false},
		{name: "invalid operator", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
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
