package decide

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// refusalReasons reads, from api/v1alpha1/reasons.go, the reasons a ScratchVolume cannot be
// injected into a StatefulSet (the const block that starts with ReasonContainerNotFound), so that
// a reason added there is checked here too.
func refusalReasons(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../api/v1alpha1/reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST || len(gd.Specs) == 0 || gd.Specs[0].(*ast.ValueSpec).Names[0].Name != "ReasonContainerNotFound" {
			continue
		}
		var out []string
		for _, s := range gd.Specs {
			v, err := strconv.Unquote(s.(*ast.ValueSpec).Values[0].(*ast.BasicLit).Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	t.Fatal("reasons.go has no const block starting with ReasonContainerNotFound")
	return nil
}

// contradictions lists the pairs of conditions that say opposite things.
func contradictions(conds []metav1.Condition) []string {
	get := func(typ string) metav1.Condition {
		if c := meta.FindStatusCondition(conds, typ); c != nil {
			return *c
		}
		return metav1.Condition{Type: typ, Status: "missing"}
	}
	found, injected, memory, rolled, ready, conflict := get(v1alpha1.ConditionTargetFound), get(v1alpha1.ConditionInjected),
		get(v1alpha1.ConditionMemoryBudget), get(v1alpha1.ConditionRolledOut), get(v1alpha1.ConditionReady), get(v1alpha1.ConditionConflict)
	var out []string
	bad := func(c1, c2 metav1.Condition) {
		out = append(out, c1.Type+"="+string(c1.Status)+"/"+c1.Reason+" beside "+c2.Type+"="+string(c2.Status)+"/"+c2.Reason+": "+c2.Message)
	}
	for _, c := range conds {
		if c.Status == "missing" || c.Reason == "" || c.Message == "" {
			out = append(out, c.Type+" has no status, reason or message")
		}
		if found.Status == metav1.ConditionTrue && c.Type != v1alpha1.ConditionTargetFound &&
			(c.Reason == v1alpha1.ReasonTargetNotFound || c.Reason == v1alpha1.ReasonInvalidSelector) {
			bad(found, c)
		}
		if found.Status != metav1.ConditionTrue && c.Status == metav1.ConditionTrue && c.Type != v1alpha1.ConditionConflict {
			bad(found, c)
		}
	}
	if ready.Status == metav1.ConditionTrue {
		for _, c := range []metav1.Condition{found, injected, rolled} {
			if c.Status != metav1.ConditionTrue {
				bad(ready, c)
			}
		}
		if conflict.Status == metav1.ConditionTrue || memory.Status == metav1.ConditionFalse {
			bad(ready, conflict)
		}
	}
	if rolled.Status == metav1.ConditionTrue && injected.Status != metav1.ConditionTrue {
		bad(rolled, injected)
	}
	if memory.Status == metav1.ConditionFalse && injected.Status == metav1.ConditionTrue {
		bad(memory, injected)
	}
	if conflict.Status == metav1.ConditionTrue && injected.Status == metav1.ConditionTrue {
		bad(conflict, injected)
	}
	if memory.Status == metav1.ConditionTrue && injected.Status != metav1.ConditionTrue {
		bad(memory, injected)
	}
	return out
}

// TestNoConditionContradictsAnother refuses one found target for every reason there is, and for
// the other ways a target is not injected (held in a write war, refused by admission control, a
// failed write, nothing found, an invalid selector), and checks that the conditions agree.
func TestNoConditionContradictsAnother(t *testing.T) {
	sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Name: "tmp", Namespace: "ns", Generation: 1}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
	type reportCase struct {
		name     string
		settings ReportSettings
		synced   Synced
	}
	one := func(name string, o *Outcome) reportCase {
		return reportCase{name: name, synced: Synced{Found: 1, Targets: []Target{{StatefulSet: sts, Outcome: o}}}}
	}
	blocked := func(reason string) *Outcome {
		return &Outcome{SV: sv, State: Blocked{Problem: &inject.Problem{Reason: reason, Message: "why"}}}
	}
	var cases []reportCase
	for _, reason := range refusalReasons(t) {
		cases = append(cases, one("refused: "+reason, blocked(reason)))
	}
	for _, reason := range []string{v1alpha1.ReasonControlledByOperator, v1alpha1.ReasonScratchVolumeConflict} {
		cases = append(cases, one("refused: "+reason, blocked(reason)))
	}
	now := time.Now()
	war := &v1alpha1.WriteWar{Holds: 1, HeldSince: metav1.NewTime(now), RetryAt: metav1.NewTime(now.Add(time.Hour))}
	other := sts.DeepCopy()
	other.Name = "db-2"
	cases = append(cases,
		one("held in a write war", &Outcome{SV: sv, State: Held{Plan: &inject.Plan{Container: "db"}, Hash: "h", War: war}}),
		one("pods refused", &Outcome{SV: sv, State: Refused{Record: &v1alpha1.RolloutRefusal{Message: "exceeded quota", Time: metav1.NewTime(now)}}}),
		one("refused by admission control", Denied(sv, sts, "no")),
		one("a failed write", WriteFailed(sv, sts, errTest)),
		reportCase{name: "two targets, one refused", synced: Synced{Found: 2, Targets: []Target{
			{StatefulSet: sts, Outcome: blocked(v1alpha1.ReasonUnknownImage)},
			{StatefulSet: other, Outcome: blocked(v1alpha1.ReasonContainerNotFound)},
		}}},
		reportCase{name: "nothing found"},
		reportCase{name: "an invalid selector", settings: ReportSettings{InvalidSelector: "bad key"}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := NewReport(sv, tc.settings, tc.synced)
			status := rep.Verdict(Ending{}).Status
			if got := contradictions(status.Conditions); len(got) > 0 {
				t.Errorf("the conditions contradict each other:\n%s", strings.Join(got, "\n"))
			}
			if !slices.ContainsFunc(status.Conditions, func(c metav1.Condition) bool { return c.Type == v1alpha1.ConditionMemoryBudget }) {
				t.Error("no MemoryBudget condition")
			}
		})
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("the API server is unavailable")
