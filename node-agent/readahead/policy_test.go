package readahead_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

func policy(name string, priority int32, created time.Time) *v1alpha1.ReadAheadPolicy {
	return &v1alpha1.ReadAheadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1alpha1.ReadAheadPolicySpec{Priority: priority, ReadAheadKiB: 4096},
	}
}

func TestArbitrate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	older, newer := t0, t0.Add(time.Hour)
	tests := []struct {
		name       string
		policies   []*v1alpha1.ReadAheadPolicy
		wantWinner string
		wantLosers []string
	}{
		{name: "none"},
		{name: "one", policies: []*v1alpha1.ReadAheadPolicy{policy("a", 0, older)}, wantWinner: "a"},
		{
			name:       "higher priority wins over age",
			policies:   []*v1alpha1.ReadAheadPolicy{policy("old", 0, older), policy("urgent", 10, newer)},
			wantWinner: "urgent", wantLosers: []string{"old"},
		},
		{
			name:       "negative priority loses to the default",
			policies:   []*v1alpha1.ReadAheadPolicy{policy("low", -5, older), policy("default", 0, newer)},
			wantWinner: "default", wantLosers: []string{"low"},
		},
		{
			name:       "on a tie the older wins",
			policies:   []*v1alpha1.ReadAheadPolicy{policy("newcomer", 5, newer), policy("incumbent", 5, older)},
			wantWinner: "incumbent", wantLosers: []string{"newcomer"},
		},
		{
			name:       "same age: by name",
			policies:   []*v1alpha1.ReadAheadPolicy{policy("b", 5, older), policy("a", 5, older), policy("c", 1, older)},
			wantWinner: "a", wantLosers: []string{"b", "c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readahead.Arbitrate(tt.policies)
			gotWinner := ""
			if got.Winner != nil {
				gotWinner = got.Winner.Name
			}
			var gotLosers []string
			for _, p := range got.Losers {
				gotLosers = append(gotLosers, p.Name)
			}
			if gotWinner != tt.wantWinner {
				t.Errorf("winner = %q, want %q", gotWinner, tt.wantWinner)
			}
			if diff := cmp.Diff(tt.wantLosers, gotLosers); diff != "" {
				t.Errorf("losers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArbitrateDoesNotReorderItsInput(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := []*v1alpha1.ReadAheadPolicy{policy("low", 0, t0), policy("high", 9, t0)}
	readahead.Arbitrate(in)
	if in[0].Name != "low" {
		t.Error("Arbitrate reordered the caller's slice")
	}
	if !readahead.Precedes(in[1], in[0]) || readahead.Precedes(in[0], in[1]) {
		t.Error("Precedes disagrees with the priorities")
	}
}
