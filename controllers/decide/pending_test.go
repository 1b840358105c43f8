package decide

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// renderedBefore is a StatefulSet named name that carries sv's configuration as an earlier
// release rendered it from the same spec (a 128Mi volume where this one renders 256Mi), and sv
// with the status that release wrote: record says what it recorded of what it applied.
func renderedBefore(t *testing.T, name string, record func(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) *v1alpha1.AppliedConfig) (*v1alpha1.ScratchVolume, *appsv1.StatefulSet) {
	t.Helper()
	sv := scratchVolumes(nil)[0]
	sts := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
	sts.Name = name
	old := sv.DeepCopy()
	old.Spec.Size = resource.MustParse("128Mi")
	sts = injectedBy(sts, []*v1alpha1.ScratchVolume{old})
	sv.Status.ObservedGeneration = sv.Generation
	sv.Status.Targets = []v1alpha1.ScratchTargetStatus{{
		Name: name, Injected: true, ConfigHash: sts.Spec.Template.Annotations[sv.InjectionAnnotation()],
	}}
	if record != nil {
		sv.Status.Targets[0].Applied = record(sv, sts)
	}
	return sv, sts
}

// byV1 is the record manager v1 kept when it wrote the configuration.
func byV1(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) *v1alpha1.AppliedConfig {
	return &v1alpha1.AppliedConfig{Generation: sv.Generation, SpecHash: SpecHash(sv), TemplateHash: TemplateHash(sts), Version: "v1"}
}

var saturday = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func TestChangesNobodyWroteWait(t *testing.T) {
	gate := Gate{Now: saturday, Version: "v2"}
	sv, sts := renderedBefore(t, "db", byV1)
	tp := PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, gate)
	w := mustWait(t, tp.Outcomes[sv.Name])
	if !tp.Settled() {
		t.Errorf("a waiting change must leave the StatefulSet as it is: desired %+v, observed %+v, pending %v", tp.Desired, tp.Observed, tp.Pending)
	}
	c := w.Change
	if w.Reason != v1alpha1.ReasonAwaitingApproval || c.WantedBy != "v2" || len(c.ID) != 10 || c.NextWindow != nil {
		t.Errorf("pending change: reason %s, %+v", w.Reason, c)
	}
	if want := "volume dbtune-scratch-a: emptyDir.sizeLimit 128Mi → 256Mi"; !slices.Contains(c.Changes, want) {
		t.Errorf("the change should say %q, says %q", want, c.Changes)
	}
	if !strings.Contains(c.Reason, "manager v2 renders the configuration differently from manager v1") {
		t.Errorf("reason: %q", c.Reason)
	}
	if c.ConfigHash != w.Plan.Hash || c.ConfigHash == sts.Spec.Template.Annotations[sv.InjectionAnnotation()] {
		t.Errorf("the pending change names the hash it would write: %s", c.ConfigHash)
	}

	// The same change on another StatefulSet planned alike has the same ID: one approval serves
	// a fleet.
	sv2, sts2 := renderedBefore(t, "db2", byV1)
	if w2 := mustWait(t, PlanTarget([]*v1alpha1.ScratchVolume{sv2}, sts2, inject.Namespace{}, gate).Outcomes[sv.Name]); w2.Change.ID != c.ID {
		t.Errorf("targets planned alike should share the change's ID %s: %+v", c.ID, w2.Change)
	}
	// The same change wanted by another version is another change.
	if w3 := mustWait(t, PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, Gate{Now: saturday, Version: "v3"}).Outcomes[sv.Name]); w3.Change.ID == c.ID {
		t.Errorf("a change wanted by another version must have another ID")
	}
}

func TestWhatLetsAChangeThrough(t *testing.T) {
	gate := Gate{Now: saturday, Version: "v2"}
	sv, sts := renderedBefore(t, "db", byV1)
	id := mustWait(t, PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, gate).Outcomes[sv.Name]).Change.ID
	window := func(start string, dur time.Duration, days ...v1alpha1.Weekday) []v1alpha1.MaintenanceWindow {
		return []v1alpha1.MaintenanceWindow{{Days: days, Start: start, Duration: metav1.Duration{Duration: dur}}}
	}
	tests := []struct {
		name string
		// change turns the fixture into the case.
		change func(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, g *Gate)
		// applying is a part of why the change is written now; "" when it is the user's own.
		applying string
		// wait is the reason it waits, "" when it does not.
		wait string
	}{
		{name: "approved", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Annotations = map[string]string{v1alpha1.ApproveChangeAnnotation: "0123456789, " + id}
		}, applying: "approved with dbtune.io/approve-change=" + id},
		{name: "another change approved", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Annotations = map[string]string{v1alpha1.ApproveChangeAnnotation: "0123456789"}
		}, wait: v1alpha1.ReasonAwaitingApproval},
		{name: "the ScratchVolume's window is open", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Spec.Changes = &v1alpha1.ChangePolicy{MaintenanceWindows: window("11:00", 2*time.Hour, "Sat")}
		}, applying: "in the maintenance window Sat 11:00+2h0m0s"},
		{name: "the ScratchVolume's window is closed", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Spec.Changes = &v1alpha1.ChangePolicy{MaintenanceWindows: window("11:00", 2*time.Hour, "Sun")}
		}, wait: v1alpha1.ReasonAwaitingWindow},
		{name: "the manager's window is open", change: func(_ *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, g *Gate) {
			g.Windows = window("12:00", time.Minute)
		}, applying: "in the maintenance window"},
		{name: "the ScratchVolume's closed window wins over the manager's open one", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, g *Gate) {
			g.Windows = window("12:00", time.Minute)
			sv.Spec.Changes = &v1alpha1.ChangePolicy{MaintenanceWindows: window("11:00", 2*time.Hour, "Sun")}
		}, wait: v1alpha1.ReasonAwaitingWindow},
		{name: "the user edited the spec", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Generation++
			sv.Spec.MountPath = "/var/lib/tmp2"
		}},
		{name: "the user edited only spec.changes", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Generation++
			sv.Spec.Changes = &v1alpha1.ChangePolicy{MaintenanceWindows: window("01:00", time.Hour)}
		}, wait: v1alpha1.ReasonAwaitingWindow},
		{name: "the user edited only spec.sizing", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Generation++
			sv.Spec.Sizing = &v1alpha1.SizingPolicy{Mode: v1alpha1.SizingRecommend, Min: new(resource.MustParse("64Mi")), Max: new(resource.MustParse("1Gi"))}
		}, wait: v1alpha1.ReasonAwaitingApproval},
		{name: "a default the API server fills in moved the spec, not the generation", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Spec.Container = "db"
		}, wait: v1alpha1.ReasonAwaitingApproval},
		{name: "the user edited the StatefulSet's template", change: func(_ *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, _ *Gate) {
			sts.Spec.Template.Spec.Containers[0].Image = "mariadb:11.8"
		}},
		{name: "the user scaled the StatefulSet", change: func(_ *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, _ *Gate) {
			sts.Generation++
			*sts.Spec.Replicas = 5
		}, wait: v1alpha1.ReasonAwaitingApproval},
		{name: "a status an earlier release wrote, with no record", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Status.Targets[0].Applied = nil
		}, wait: v1alpha1.ReasonAwaitingApproval},
		{name: "a spec edited since the earlier release's last status", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Status.Targets[0].Applied = nil
			sv.Generation++
		}},
		{name: "no status at all", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Status = v1alpha1.ScratchVolumeStatus{}
		}, wait: v1alpha1.ReasonAwaitingApproval},
		{name: "the change moves the replica load directory off the RAM volume", change: func(sv *v1alpha1.ScratchVolume, _ *appsv1.StatefulSet, _ *Gate) {
			sv.Status.Targets[0].TempLocations = []v1alpha1.TempLocation{{Data: v1alpha1.TempDataReplicaLoad, Medium: v1alpha1.TempMediumMemory}}
		}, applying: "moves ReplicaLoad from the RAM volume to disk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sv, sts := renderedBefore(t, "db", byV1)
			g := gate
			tt.change(sv, sts, &g)
			o := PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, g).Outcomes[sv.Name]
			if tt.wait != "" {
				w := mustWait(t, o)
				if w.Reason != tt.wait {
					t.Errorf("waits for %s, want %s", w.Reason, tt.wait)
				}
				if tt.wait == v1alpha1.ReasonAwaitingWindow && (w.Change.NextWindow == nil || !w.Change.NextWindow.After(saturday)) {
					t.Errorf("a change waiting for a window says when it opens: %v", w.Change.NextWindow)
				}
				return
			}
			switch s := mustInject(t, o); {
			case (tt.applying == "") != (s.Applying == ""):
				t.Errorf("applying %q, want %q", s.Applying, tt.applying)
			case !strings.Contains(string(s.Applying), tt.applying):
				t.Errorf("applying %q, want it to say %q", s.Applying, tt.applying)
			}
		})
	}
}

func TestAFreshInjectionNeverWaits(t *testing.T) {
	sv := scratchVolumes(nil)[0]
	sts := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
	s := mustInject(t, PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, Gate{Now: saturday, Version: "v2"}).Outcomes[sv.Name])
	if s.Applying != "" || s.Urgent || s.TemplateHash != TemplateHash(sts) {
		t.Errorf("a first injection is the user's own change: %+v", s)
	}
}

func TestReportOfAWaitingChange(t *testing.T) {
	sv, sts := renderedBefore(t, "db", byV1)
	sv.Status.Targets[0].TempLocations = []v1alpha1.TempLocation{{Data: v1alpha1.TempDataTmpdir, Medium: v1alpha1.TempMediumMemory}}
	sv.Spec.Changes = &v1alpha1.ChangePolicy{MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Days: []v1alpha1.Weekday{"Sun"}, Start: "02:00", Duration: metav1.Duration{Duration: time.Hour}}}}
	carried := sts.Spec.Template.Annotations[sv.InjectionAnnotation()]
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "r", UpdateRevision: "r"}
	o := PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, Gate{Now: saturday, Version: "v2"}).Outcomes[sv.Name]
	rep := NewReport(sv, ReportSettings{Version: "v2"}, Synced{Found: 1, Targets: []Target{{StatefulSet: sts, Outcome: o}}})
	status := rep.Verdict(Ending{}).Status
	ts := status.Targets[0]
	if !ts.Injected || ts.ConfigHash != carried || ts.PendingChange == nil || ts.Applied == nil || ts.Applied.Version != "v1" || len(ts.TempLocations) != 1 {
		t.Errorf("the target keeps what it carries and reports the change beside: %+v", ts)
	}
	if status.PendingChanges != 1 {
		t.Errorf("pendingChanges = %d", status.PendingChanges)
	}
	pending := findCondition(status.Conditions, v1alpha1.ConditionChangesPending)
	if pending == nil || pending.Status != metav1.ConditionTrue || pending.Reason != v1alpha1.ReasonAwaitingWindow ||
		!strings.Contains(pending.Message, ts.PendingChange.ID) || !strings.Contains(pending.Message, "kubectl annotate scratchvolume a dbtune.io/approve-change=<id>") {
		t.Errorf("ChangesPending: %+v", pending)
	}
	if ready := findCondition(status.Conditions, v1alpha1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("a target that keeps a working configuration stays Ready: %+v", ready)
	}
	sunday2am := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	if after := rep.Verdict(Ending{}).RequeueAfter(saturday); after != sunday2am.Sub(saturday)+time.Second {
		t.Errorf("the next reconcile should come when the window opens, in %s, not %s", sunday2am.Sub(saturday), after)
	}
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func TestMaintenanceWindows(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	parse := func(s string) v1alpha1.MaintenanceWindow {
		w, err := ParseWindow(s)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	tests := []struct {
		window string
		now    time.Time
		open   bool
		next   time.Time
	}{
		{"Sat 02:00+3h Europe/Berlin", time.Date(2026, 12, 5, 2, 30, 0, 0, berlin), true, time.Date(2026, 12, 12, 2, 0, 0, 0, berlin)},
		{"Sat 02:00+3h Europe/Berlin", time.Date(2026, 12, 5, 5, 0, 0, 0, berlin), false, time.Date(2026, 12, 12, 2, 0, 0, 0, berlin)},
		{"Sat 02:00+3h Europe/Berlin", time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC), false, time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)},
		// A window past midnight is still open the next day.
		{"Sun 23:00+2h", time.Date(2026, 12, 7, 0, 30, 0, 0, time.UTC), true, time.Date(2026, 12, 13, 23, 0, 0, 0, time.UTC)},
		{"01:30+90m", time.Date(2026, 12, 7, 2, 59, 0, 0, time.UTC), true, time.Date(2026, 12, 8, 1, 30, 0, 0, time.UTC)},
		{"01:30+90m", time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC), false, time.Date(2026, 12, 8, 1, 30, 0, 0, time.UTC)},
		// Daylight saving time: 02:00 local is 00:00 UTC in summer, 01:00 in winter.
		{"Mon 02:00+1h Europe/Berlin", time.Date(2026, 7, 6, 0, 30, 0, 0, time.UTC), true, time.Date(2026, 7, 13, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		st, err := Windows([]v1alpha1.MaintenanceWindow{parse(tt.window)}, tt.now)
		if err != nil {
			t.Fatal(err)
		}
		if st.Open != tt.open || !st.Next.Equal(tt.next) {
			t.Errorf("%s at %s: open %v next %s, want %v %s", tt.window, tt.now, st.Open, st.Next, tt.open, tt.next)
		}
	}
	for _, bad := range []string{"", "Sat", "Sat 02:00", "Fri,Sat 02:00+0s", "Sam 02:00+1h", "24:00+1h", "02:00+25h", "02:00+1h Mars/Olympus", "02:00+1h UTC extra"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("ParseWindow(%q) should fail", bad)
		}
	}
}

func TestUnknownTimeZoneIsInvalidSpec(t *testing.T) {
	sv, sts := renderedBefore(t, "db", byV1)
	sv.Spec.Changes = &v1alpha1.ChangePolicy{MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Start: "02:00", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Atlantis"}}}
	o := PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, Gate{Now: saturday, Version: "v2"}).Outcomes[sv.Name]
	if s, ok := o.State.(Blocked); !ok || s.Problem.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(s.Problem.Message, `"Europe/Atlantis" is not a known IANA time zone`) || !s.Kept {
		t.Errorf("an unknown time zone blocks the ScratchVolume, keeping what the StatefulSet carries: %T %+v", o.State, o.State)
	}
}

func TestLineChangesNameTheSection(t *testing.T) {
	before := "# comment\n[mysqld]\ntmpdir = /a\n\n[sst]\ntmpdir = /b\n"
	after := "# other comment\n[mysqld]\ntmpdir = /a\ninnodb_temp_tablespaces_dir = /a/t\n[sst]\ntmpdir = /b\n[xtrabackup]\ntmpdir = /b\n"
	got := lineChanges("drop-in f", before, after)
	want := []string{"drop-in f: + [mysqld] innodb_temp_tablespaces_dir = /a/t", "drop-in f: + [xtrabackup] tmpdir = /b"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := lineChanges("f", after, before); len(got) != 2 || !strings.HasPrefix(got[0], "f: - ") {
		t.Errorf("removals: %q", got)
	}
}

// TestPendingChangeSaysHowPodsRestart checks that the approval a pending change asks for says how
// many of the target's pods it restarts at once.
func TestPendingChangeSaysHowPodsRestart(t *testing.T) {
	sv, sts := renderedBefore(t, "db", byV1)
	sts.Spec.Replicas = ptr.To[int32](4)
	sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromString("50%"))}}
	o := PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, Gate{Now: saturday, Version: "v2"}).Outcomes[sv.Name]
	mustWait(t, o)
	rep := NewReport(sv, ReportSettings{Version: "v2"}, Synced{Found: 1, Targets: []Target{{StatefulSet: sts, Outcome: o}}})
	status := rep.Verdict(Ending{}).Status
	c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionChangesPending)
	if c == nil || !strings.Contains(c.Message, "applied, it restarts its 4 pods 2 at a time (rollingUpdate.maxUnavailable)") {
		t.Errorf("the pending change does not say how the pods restart: %+v", c)
	}
	if got := status.Targets[0].RestartsAtOnce; got != 2 {
		t.Errorf("restartsAtOnce = %d, want 2", got)
	}
}

// TestPendingChangeReadsTheDropInGiven: what a waiting change does to the drop-in file is told
// from the ConfigMap data the gate was given, line by line, and from nothing else.
func TestPendingChangeReadsTheDropInGiven(t *testing.T) {
	sv, sts := renderedBefore(t, "db", byV1)
	plan := func(g Gate) *v1alpha1.PendingChange {
		t.Helper()
		w := mustWait(t, PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, g).Outcomes[sv.Name])
		if w.Plan.ConfigVolume == nil {
			t.Fatalf("the fixture's change must carry a drop-in: %+v", w.Plan)
		}
		return w.Change
	}
	fresh := plan(Gate{Now: saturday, Version: "v2"})
	key := ""
	for _, c := range fresh.Changes {
		if strings.HasPrefix(c, "drop-in ") {
			key, _, _ = strings.Cut(strings.TrimPrefix(c, "drop-in "), ":")
			break
		}
	}
	if key == "" {
		t.Fatalf("without the ConfigMap's data every line of the drop-in is new, but no drop-in line is listed: %q", fresh.Changes)
	}
	rendered := mustWait(t, PlanTarget([]*v1alpha1.ScratchVolume{sv}, sts, inject.Namespace{}, Gate{Now: saturday, Version: "v2"}).Outcomes[sv.Name]).Plan.ConfigData
	// The ConfigMap holds the same file but for one setting: only that line changes.
	old := strings.Replace(rendered, "\ntmpdir = ", "\ntmpdir = /before", 1)
	if old == rendered {
		t.Fatalf("the rendering sets no tmpdir:\n%s", rendered)
	}
	got := plan(Gate{Now: saturday, Version: "v2", DropIns: map[string]map[string]string{sv.Name: {key: old}}})
	var lines []string
	for _, c := range got.Changes {
		if strings.HasPrefix(c, "drop-in ") {
			lines = append(lines, c)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0]+lines[1], "- ") || !strings.Contains(lines[0]+lines[1], "+ ") {
		t.Errorf("the drop-in given differs from the rendering in one line; the change lists %q", lines)
	}
	if got.ID == fresh.ID {
		t.Errorf("two different changes to the drop-in share the ID %s", got.ID)
	}
}
