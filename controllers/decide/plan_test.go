package decide

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// scratchVolumes builds the ScratchVolumes of a case, the first created first.
func scratchVolumes(specs ...func(*v1alpha1.ScratchVolumeSpec)) []*v1alpha1.ScratchVolume {
	names := []string{"a", "b", "c"}
	out := make([]*v1alpha1.ScratchVolume, len(specs))
	for i, spec := range specs {
		sv := testenv.SelectorScratchVolume(names[i], spec)
		sv.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC))
		out[i] = &sv
	}
	return out
}

// injectedBy is sts as a write of the plans of svs leaves it.
func injectedBy(sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) *appsv1.StatefulSet {
	out := sts.DeepCopy()
	out.Spec.Template = inject.Inject(out.Spec.Template, WinningPlans(PlanTarget(svs, sts, inject.Namespace{}, Gate{}).Outcomes))
	return out
}

func controlledBy(sts *appsv1.StatefulSet) *appsv1.StatefulSet {
	out := sts.DeepCopy()
	out.OwnerReferences = []metav1.OwnerReference{{APIVersion: "k8s.mariadb.com/v1alpha1", Kind: "MariaDB", Name: "main", UID: "m", Controller: ptr.To(true)}}
	return out
}

// TestPlanTarget plans one StatefulSet for the ScratchVolumes that select it, and checks each one's
// outcome (the reason it is blocked, "" when it is planned), whether it keeps an earlier
// injection, whether the StatefulSet already carries the plan, and the Events a write would record.
func TestPlanTarget(t *testing.T) {
	fresh := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
	one := scratchVolumes(nil)
	otherPath := func(s *v1alpha1.ScratchVolumeSpec) { s.MountPath = "/var/lib/other-tmp" }
	tests := []struct {
		name        string
		svs         []*v1alpha1.ScratchVolume
		sts         *appsv1.StatefulSet
		blocked     map[string]string
		kept        map[string]bool
		settled     bool
		wantChanges []string
	}{
		{name: "one ScratchVolume, not injected yet", svs: one, sts: fresh,
			blocked: map[string]string{"a": ""}, wantChanges: []string{EventInjected}},
		{name: "one ScratchVolume, injected", svs: one, sts: injectedBy(fresh, one),
			blocked: map[string]string{"a": ""}, settled: true},
		{name: "two for the same purpose: the older wins", svs: scratchVolumes(nil, otherPath), sts: fresh,
			blocked: map[string]string{"a": "", "b": v1alpha1.ReasonScratchVolumeConflict}, wantChanges: []string{EventInjected}},
		{name: "another operator's StatefulSet", svs: one, sts: controlledBy(fresh),
			blocked: map[string]string{"a": v1alpha1.ReasonControlledByOperator}, settled: true},
		{name: "another operator took over an injected StatefulSet: the injection stays", svs: one, sts: controlledBy(injectedBy(fresh, one)),
			blocked: map[string]string{"a": v1alpha1.ReasonControlledByOperator}, kept: map[string]bool{"a": true}, settled: true},
		{name: "the memory limit is too small", svs: one, sts: testenv.FullStatefulSet("mariadb:11.4", nil, nil, "200Mi"),
			blocked: map[string]string{"a": v1alpha1.ReasonMemoryBudget}, settled: true},
		{name: "no ScratchVolume any more: the injection goes", svs: nil, sts: injectedBy(fresh, one),
			blocked: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := PlanTarget(tt.svs, tt.sts, inject.Namespace{}, Gate{})
			got, kept := map[string]string{}, map[string]bool{}
			for name, o := range tp.Outcomes {
				switch s := o.State.(type) {
				case Injected:
					got[name] = ""
				case Blocked:
					got[name] = s.Problem.Reason
					if s.Kept {
						kept[name] = true
					}
				default:
					t.Errorf("%s: %T, want Injected or Blocked", name, o.State)
				}
			}
			if diff := cmp.Diff(tt.blocked, got); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.kept, kept, cmpEmpty); diff != "" {
				t.Errorf("kept injections (-want +got):\n%s", diff)
			}
			if tp.Settled() != tt.settled {
				t.Errorf("Settled() = %v, want %v: desired %+v, observed %+v, pending %v", tp.Settled(), tt.settled, tp.Desired, tp.Observed, tp.Pending)
			}
			var reasons []string
			for _, c := range Changes(tt.sts, tp.Outcomes, tp.Desired, tp.Observed, nil) {
				reasons = append(reasons, c.Reason)
			}
			if tp.Settled() {
				reasons = nil // nothing is written, so nothing changes
			}
			if diff := cmp.Diff(tt.wantChanges, reasons); diff != "" {
				t.Errorf("change Events (-want +got):\n%s", diff)
			}
		})
	}
}

// sameSpec leaves the spec as SelectorScratchVolume makes it.
func sameSpec(*v1alpha1.ScratchVolumeSpec) {}

var cmpEmpty = cmp.FilterValues(func(a, b map[string]bool) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

// TestClaim settles conflicts between ScratchVolumes: the first to claim a container and purpose,
// or a mount path in a container, keeps it.
func TestClaim(t *testing.T) {
	plan := func(container, path string) *inject.Plan {
		p := &inject.Plan{Container: container}
		p.Mount.MountPath = path
		return p
	}
	sv := func(name string, purpose v1alpha1.Purpose) *v1alpha1.ScratchVolume {
		return &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ScratchVolumeSpec{Purpose: purpose}}
	}
	tests := []struct {
		name   string
		second *v1alpha1.ScratchVolume
		plan   *inject.Plan
		want   string // a word of the conflict, "" for none
	}{
		{"another container", sv("b", v1alpha1.PurposeMySQLTmpdir), plan("sidecar", "/tmp/ram"), ""},
		{"same container, another purpose and path", sv("b", v1alpha1.PurposeGeneric), plan("db", "/scratch"), ""},
		{"same container and purpose", sv("b", v1alpha1.PurposeMySQLTmpdir), plan("db", "/scratch"), "a MySQLTmpdir volume in container db"},
		{"same container and path", sv("b", v1alpha1.PurposeGeneric), plan("db", "/tmp/ram"), "the mount path /tmp/ram in container db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := map[string]string{}
			if p := claim(claims, sv("a", v1alpha1.PurposeMySQLTmpdir), plan("db", "/tmp/ram")); p != nil {
				t.Fatalf("the first claim failed: %v", p)
			}
			p := claim(claims, tt.second, tt.plan)
			switch {
			case tt.want == "" && p != nil:
				t.Errorf("conflict %v, want none", p)
			case tt.want != "" && (p == nil || p.Reason != v1alpha1.ReasonScratchVolumeConflict || !strings.Contains(p.Message, tt.want) || !strings.Contains(p.Message, "ScratchVolume a")):
				t.Errorf("conflict %v, want one with a naming %q", p, tt.want)
			}
		})
	}
}

// TestReportConditions turns the outcomes of a reconcile into conditions, and checks the reason
// each one gives and when the next reconcile comes without an event.
func TestReportConditions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fresh := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
	one := scratchVolumes(nil)
	type want struct{ ready, found, injected, rolled, conflict string }
	one1 := func(sts *appsv1.StatefulSet, o *Outcome) Synced {
		return Synced{Found: 1, Targets: []Target{{StatefulSet: sts, Outcome: o}}}
	}
	tests := []struct {
		name     string
		sv       *v1alpha1.ScratchVolume
		settings ReportSettings
		fill     func(sv *v1alpha1.ScratchVolume) (Synced, Ending)
		want     want
		retry    time.Duration
	}{
		{"nothing selected", one[0], ReportSettings{}, func(*v1alpha1.ScratchVolume) (Synced, Ending) { return Synced{}, Ending{} },
			want{v1alpha1.ReasonTargetNotFound, v1alpha1.ReasonTargetNotFound, v1alpha1.ReasonTargetNotFound, v1alpha1.ReasonTargetNotFound, v1alpha1.ReasonNoConflict}, 0},
		{"an invalid selector", one[0], ReportSettings{InvalidSelector: "bad key"}, func(*v1alpha1.ScratchVolume) (Synced, Ending) { return Synced{}, Ending{} },
			want{v1alpha1.ReasonInvalidSelector, v1alpha1.ReasonInvalidSelector, v1alpha1.ReasonInvalidSelector, v1alpha1.ReasonInvalidSelector, v1alpha1.ReasonNoConflict}, 0},
		{"injected, half-way through a partitioned rollout", one[0], ReportSettings{}, func(sv *v1alpha1.ScratchVolume) (Synced, Ending) {
			sts := injectedBy(fresh, one)
			return one1(sts, PlanTarget(one, sts, inject.Namespace{}, Gate{}).Outcomes[sv.Name]), Ending{}
		}, want{v1alpha1.ReasonPartitioned, v1alpha1.ReasonTargetFound, v1alpha1.ReasonInjected, v1alpha1.ReasonPartitioned, v1alpha1.ReasonNoConflict}, 0},
		{"blocked by an older ScratchVolume", scratchVolumes(nil, sameSpec)[1], ReportSettings{}, func(sv *v1alpha1.ScratchVolume) (Synced, Ending) {
			svs := scratchVolumes(nil, sameSpec)
			return one1(fresh, PlanTarget(svs, fresh, inject.Namespace{}, Gate{}).Outcomes[sv.Name]), Ending{}
		}, want{v1alpha1.ReasonScratchVolumeConflict, v1alpha1.ReasonTargetFound, v1alpha1.ReasonScratchVolumeConflict, v1alpha1.ReasonScratchVolumeConflict, v1alpha1.ReasonScratchVolumeConflict}, 0},
		{"a write failed", one[0], ReportSettings{}, func(sv *v1alpha1.ScratchVolume) (Synced, Ending) {
			return one1(fresh, WriteFailed(sv, fresh, errors.New("boom"))), Ending{}
		}, want{v1alpha1.ReasonWriteFailed, v1alpha1.ReasonTargetFound, v1alpha1.ReasonWriteFailed, v1alpha1.ReasonWriteFailed, v1alpha1.ReasonNoConflict}, 0},
		{"admission control refused the write", one[0], ReportSettings{}, func(sv *v1alpha1.ScratchVolume) (Synced, Ending) {
			return one1(fresh, Denied(sv, fresh, "denied by policy")), Ending{}
		}, want{v1alpha1.ReasonAdmissionDenied, v1alpha1.ReasonTargetFound, v1alpha1.ReasonAdmissionDenied, v1alpha1.ReasonAdmissionDenied, v1alpha1.ReasonNoConflict}, AdmissionRetryInterval},
		{"the reconcile ended before every target was synced", one[0], ReportSettings{}, func(*v1alpha1.ScratchVolume) (Synced, Ending) {
			return Synced{Found: 2}, Ending{Failure: errors.New("conflict")}
		}, want{v1alpha1.ReasonReconcileFailed, v1alpha1.ReasonTargetFound, v1alpha1.ReasonReconcileFailed, v1alpha1.ReasonReconcileFailed, v1alpha1.ReasonNoConflict}, 0},
		{"held off by a write war", one[0], ReportSettings{}, func(sv *v1alpha1.ScratchVolume) (Synced, Ending) {
			outcomes := PlanTarget(one, fresh, inject.Namespace{}, Gate{}).Outcomes
			war := &v1alpha1.WriteWar{Holds: 1, HeldSince: metav1.NewTime(now), RetryAt: metav1.NewTime(now.Add(10 * time.Minute))}
			Hold(outcomes, war)
			return one1(fresh, WithGuard(outcomes, Guard{War: war})[sv.Name]), Ending{}
		}, want{v1alpha1.ReasonFightingAnotherWriter, v1alpha1.ReasonTargetFound, v1alpha1.ReasonFightingAnotherWriter, v1alpha1.ReasonFightingAnotherWriter, v1alpha1.ReasonFightingAnotherWriter}, 10*time.Minute + time.Second},
		{"a rolling target misses a pod", one[0], ReportSettings{}, func(sv *v1alpha1.ScratchVolume) (Synced, Ending) {
			sts := injectedBy(fresh, one)
			synced := one1(sts, PlanTarget(one, sts, inject.Namespace{}, Gate{}).Outcomes[sv.Name])
			synced.Targets[0].RecheckAt = now.Add(90 * time.Second)
			return synced, Ending{}
		}, want{v1alpha1.ReasonPartitioned, v1alpha1.ReasonTargetFound, v1alpha1.ReasonInjected, v1alpha1.ReasonPartitioned, v1alpha1.ReasonNoConflict}, 90*time.Second + time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synced, ending := tt.fill(tt.sv)
			verdict := NewReport(tt.sv, tt.settings, synced).Verdict(ending)
			status := verdict.Status
			reason := func(typ string) string {
				if c := meta.FindStatusCondition(status.Conditions, typ); c != nil {
					return c.Reason
				}
				return "missing"
			}
			got := want{reason(v1alpha1.ConditionReady), reason(v1alpha1.ConditionTargetFound), reason(v1alpha1.ConditionInjected),
				reason(v1alpha1.ConditionRolledOut), reason(v1alpha1.ConditionConflict)}
			if got != tt.want {
				t.Errorf("condition reasons\n got %+v\nwant %+v", got, tt.want)
			}
			if got := verdict.RequeueAfter(now); got != tt.retry {
				t.Errorf("RequeueAfter = %v, want %v", got, tt.retry)
			}
		})
	}
}

// TestNewProblems warns of a condition that turned to a problem, once: not again while it says
// the same, not of a fight (warned of when it began), not of a missing target.
func TestNewProblems(t *testing.T) {
	status := func(typ, reason, msg string) *v1alpha1.ScratchVolumeStatus {
		return &v1alpha1.ScratchVolumeStatus{Conditions: []metav1.Condition{{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}}}
	}
	none := &v1alpha1.ScratchVolumeStatus{}
	tests := []struct {
		name       string
		last, next *v1alpha1.ScratchVolumeStatus
		want       []string
	}{
		{"a new block", none, status(v1alpha1.ConditionInjected, v1alpha1.ReasonMountPathInUse, "m"), []string{EventBlocked}},
		{"the same block again", status(v1alpha1.ConditionInjected, v1alpha1.ReasonMountPathInUse, "m"), status(v1alpha1.ConditionInjected, v1alpha1.ReasonMountPathInUse, "m"), nil},
		{"no memory limit", none, status(v1alpha1.ConditionMemoryBudget, v1alpha1.ReasonNoMemoryLimit, "m"), []string{EventMemoryWarning}},
		{"a fight", none, status(v1alpha1.ConditionInjected, v1alpha1.ReasonFightingAnotherWriter, "m"), nil},
		{"no target yet", none, status(v1alpha1.ConditionInjected, v1alpha1.ReasonTargetNotFound, "m"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range NewProblems(tt.last, tt.next) {
				got = append(got, w.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlannedContainerRoom checks that the container a decision keeps for the sizing checks has
// the room its limits leave it: with pod-level resources, the pod's limit less the other running
// containers', when that binds first.
func TestPlannedContainerRoom(t *testing.T) {
	mem := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
	}
	sts := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "4Gi")
	pod := &sts.Spec.Template.Spec
	pod.Containers = append(pod.Containers, corev1.Container{Name: "metrics", Image: "exporter", Resources: corev1.ResourceRequirements{Limits: mem("512Mi")}})
	for _, tc := range []struct {
		name, podLimit, want string
	}{
		{"no pod-level limit", "", "4Gi"},
		{"a larger pod-level limit", "8Gi", "4Gi"},
		// Less the fixture's exporter (128Mi) and the metrics container (512Mi).
		{"a pod-level limit that binds", "4Gi", "3456Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod.Resources = nil
			if tc.podLimit != "" {
				pod.Resources = &corev1.ResourceRequirements{Limits: mem(tc.podLimit)}
			}
			got := PlannedContainer(sts, pod.Containers[0].Name).Resources.Limits[corev1.ResourceMemory]
			if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
				t.Errorf("room %s, want %s", got.String(), tc.want)
			}
		})
	}
}

// mustInject is o's state, which must be Injected.
func mustInject(t *testing.T, o *Outcome) Injected {
	t.Helper()
	s, ok := o.Injecting()
	if !ok {
		t.Fatalf("ScratchVolume %s is %T %+v, want Injected", o.SV.Name, o.State, o.State)
	}
	return s
}

// mustWait is o's state, which must be Waiting.
func mustWait(t *testing.T, o *Outcome) Waiting {
	t.Helper()
	s, ok := o.State.(Waiting)
	if !ok {
		t.Fatalf("ScratchVolume %s is %T %+v, want Waiting", o.SV.Name, o.State, o.State)
	}
	return s
}
