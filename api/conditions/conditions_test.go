package conditions

import (
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestListAndNames(t *testing.T) {
	items := []string{"a", "b", "c", "d"}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"list within the limit", List(items, 4), "a; b; c; d"},
		{"list over the limit", List(items, 2), "a; b; and 2 more"},
		{"names within the limit", Names(items, 8), "a, b, c, d"},
		{"names over the limit", Names(items, 3), "a, b, c and 1 more"},
		{"nothing", List(nil, MaxListed), ""},
		{"the first of more", ListFirst([]string{"a", "b"}, 5), "a; b; and 3 more"},
		{"the first of as many", ListFirst([]string{"a", "b"}, 2), "a; b"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if Plural(1, "node", "nodes") != "node" || Plural(0, "node", "nodes") != "nodes" || Plural(2, "node", "nodes") != "nodes" {
		t.Error("Plural picks the wrong form")
	}
}

func TestKeepTransitionTimes(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	old := []metav1.Condition{
		{Type: "Applied", Status: metav1.ConditionTrue, LastTransitionTime: then},
		{Type: "Degraded", Status: metav1.ConditionFalse, LastTransitionTime: then},
	}
	conds := []metav1.Condition{
		{Type: "Applied", Status: metav1.ConditionTrue, Reason: "Other"},
		{Type: "Degraded", Status: metav1.ConditionTrue},
		{Type: "New", Status: metav1.ConditionTrue},
	}
	KeepTransitionTimes(conds, old, now)
	want := []metav1.Time{then, now, now}
	for i, c := range conds {
		if !c.LastTransitionTime.Equal(&want[i]) {
			t.Errorf("%s: lastTransitionTime %v, want %v", c.Type, c.LastTransitionTime, want[i])
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s     string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven …"},
		// "é" is two bytes: a cut inside one drops the half character.
		{"ééééé", 9, "éé …"},
		{"éééééé", 10, "ééé …"},
	} {
		got := Cut(c.s, c.limit)
		if got != c.want || len(got) > c.limit || !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q (%d bytes), want %q", c.s, c.limit, got, len(got), c.want)
		}
	}
}
