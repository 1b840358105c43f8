package decide

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/capacity"
)

const mib = 1 << 20

var sizingNow = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC) // a Wednesday

// sizingCase is a ScratchVolume of 512Mi under spec.sizing, its pods' observations and its last
// status.sizing.
type sizingCase struct {
	mode                 v1alpha1.SizingMode
	windowPeak, lifePeak int64 // of every pod, in MiB
	last                 *v1alpha1.SizingStatus
	windows              []v1alpha1.MaintenanceWindow
	approve              bool // the annotation approves the proposal the last status named
	limit                string
	max                  string // spec.sizing.max, 2Gi when empty
}

func (c sizingCase) decide(t *testing.T) (*v1alpha1.SizingStatus, *Resize, time.Time) {
	t.Helper()
	rep, obs := c.report(t, Synced{})
	st := &v1alpha1.ScratchVolumeStatus{Usage: capacity.Summarize(obs)}
	resize, wake := rep.sizing(st)
	return st.Sizing, resize, wake
}

// report is the case's report, its pods observed, and the observations.
func (c sizingCase) report(t *testing.T, synced Synced) (*Report, []v1alpha1.ScratchVolumeUsage) {
	t.Helper()
	sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tmp", UID: "u1", Annotations: map[string]string{}}}
	sv.Spec.Size = resource.MustParse("512Mi")
	sv.Spec.Purpose = v1alpha1.PurposeMySQLTmpdir
	maxSize := c.max
	if maxSize == "" {
		maxSize = "2Gi"
	}
	sv.Spec.Sizing = &v1alpha1.SizingPolicy{Mode: c.mode, Min: new(resource.MustParse("256Mi")), Max: new(resource.MustParse(maxSize))}
	if c.mode == "" {
		sv.Spec.Sizing.Mode = v1alpha1.SizingAutomatic
	}
	sv.Spec.Changes = &v1alpha1.ChangePolicy{MaintenanceWindows: c.windows}
	sv.Status.Sizing = c.last
	if c.approve && c.last != nil {
		sv.Annotations[v1alpha1.ApproveChangeAnnotation] = c.last.ID
	}
	rep := NewReport(sv, ReportSettings{Version: "v1", Now: sizingNow}, synced)
	var obs []v1alpha1.ScratchVolumeUsage
	for _, pod := range []string{"db-0", "db-1", "db-2"} {
		obs = append(obs, v1alpha1.ScratchVolumeUsage{Namespace: "ns", Pod: pod, ScratchVolume: "tmp", SizeBytes: 512 * mib,
			PeakBytes: c.lifePeak * mib, WindowPeakBytes: c.windowPeak * mib, SampledSince: metav1.NewTime(sizingNow.Add(-48 * time.Hour))})
	}
	rep.observed = obs // as the Ending of a verdict gives it
	limit := c.limit
	if limit == "" {
		limit = "16Gi"
	}
	rep.containers["db"] = &corev1.Container{Name: "mariadb", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}}}
	return rep, obs
}

// TestVerdictHasNoSideEffects: deciding the status twice from one report decides the same
// resize, status and wake-up twice; the report is not changed by the first.
func TestVerdictHasNoSideEffects(t *testing.T) {
	open := v1alpha1.MaintenanceWindow{Start: "13:00", Duration: metav1.Duration{Duration: 2 * time.Hour}}
	for name, c := range map[string]sizingCase{
		"resized in a window": {windowPeak: 500, lifePeak: 500, last: proposing("640Mi", 7*time.Hour), windows: []v1alpha1.MaintenanceWindow{open}},
		"sustaining":          {windowPeak: 500, lifePeak: 500, last: proposing("640Mi", time.Hour)},
	} {
		t.Run(name, func(t *testing.T) {
			rep, obs := c.report(t, Synced{Found: 1, Targets: []Target{{StatefulSet: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}}}}})
			first, second := rep.Verdict(Ending{Observed: obs}), rep.Verdict(Ending{Observed: obs})
			if diff := cmp.Diff(first, second, cmp.AllowUnexported(Verdict{})); diff != "" {
				t.Errorf("a second verdict from the same report differs (-first +second):\n%s", diff)
			}
			if (first.Resize != nil) != (name == "resized in a window") || first.RequeueAfter(sizingNow) == 0 && first.Resize == nil {
				t.Errorf("resize %+v, requeue after %s", first.Resize, first.RequeueAfter(sizingNow))
			}
		})
	}
}

// proposing is a last status that has proposed growing to want since d ago.
func proposing(want string, ago time.Duration) *v1alpha1.SizingStatus {
	since := metav1.NewTime(sizingNow.Add(-ago))
	return &v1alpha1.SizingStatus{Proposed: new(resource.MustParse(want)), Since: &since, ID: "abc", Reason: v1alpha1.ReasonSizingSustaining}
}

func TestSizingRule(t *testing.T) {
	weekday := v1alpha1.Weekday(sizingNow.Weekday().String()[:3])
	open := v1alpha1.MaintenanceWindow{Days: []v1alpha1.Weekday{weekday}, Start: "13:00", Duration: metav1.Duration{Duration: 2 * time.Hour}}
	closed := v1alpha1.MaintenanceWindow{Start: "02:00", Duration: metav1.Duration{Duration: time.Hour}} // every day
	for _, tc := range []struct {
		name       string
		c          sizingCase
		reason     string
		proposed   string // "" for none
		resizedTo  string // "" for no resize
		wakeIn     time.Duration
		sinceAgo   time.Duration // of the status's Since, when proposed
		messageHas string
	}{
		{name: "recent peaks within a step", c: sizingCase{windowPeak: 380, lifePeak: 400}, reason: v1alpha1.ReasonSizingSteady},
		{name: "recent peaks call for more: the clock starts", c: sizingCase{windowPeak: 500, lifePeak: 500},
			reason: v1alpha1.ReasonSizingSustaining, proposed: "640Mi", wakeIn: 6 * time.Hour, messageHas: "proposed once they have for 6h0m0s"},
		{name: "still calling for more: the clock goes on", c: sizingCase{windowPeak: 500, lifePeak: 500, last: proposing("640Mi", 2*time.Hour)},
			reason: v1alpha1.ReasonSizingSustaining, proposed: "640Mi", sinceAgo: 2 * time.Hour, wakeIn: 4 * time.Hour},
		{name: "sustained, no window: waits for approval", c: sizingCase{windowPeak: 500, lifePeak: 500, last: proposing("640Mi", 7*time.Hour)},
			reason: v1alpha1.ReasonAwaitingApproval, proposed: "640Mi", sinceAgo: 7 * time.Hour, messageHas: "dbtune.io/approve-change="},
		{name: "sustained, window closed: waits for it", c: sizingCase{windowPeak: 500, lifePeak: 500, last: proposing("640Mi", 7*time.Hour), windows: []v1alpha1.MaintenanceWindow{closed}},
			reason: v1alpha1.ReasonAwaitingWindow, proposed: "640Mi", sinceAgo: 7 * time.Hour, wakeIn: 12 * time.Hour},
		{name: "sustained, window open: resized", c: sizingCase{windowPeak: 500, lifePeak: 500, last: proposing("640Mi", 7*time.Hour), windows: []v1alpha1.MaintenanceWindow{open}},
			reason: v1alpha1.ReasonResized, resizedTo: "640Mi", messageHas: "in the maintenance window"},
		{name: "a spike older than the window does not grow it", c: sizingCase{windowPeak: 60, lifePeak: 505, last: proposing("704Mi", 7*time.Hour)},
			reason: v1alpha1.ReasonSizingSteady},
		{name: "shrinking, never below the pods' highest use", c: sizingCase{windowPeak: 20, lifePeak: 300, last: &v1alpha1.SizingStatus{}},
			reason: v1alpha1.ReasonSizingSustaining, proposed: "320Mi", wakeIn: 6 * time.Hour},
		{name: "shrinking, never below min", c: sizingCase{windowPeak: 10, lifePeak: 20},
			reason: v1alpha1.ReasonSizingSustaining, proposed: "256Mi", wakeIn: 6 * time.Hour},
		{name: "a volume full within the window calls for twice its size", c: sizingCase{windowPeak: 510, lifePeak: 512, last: &v1alpha1.SizingStatus{}},
			reason: v1alpha1.ReasonSizingSustaining, proposed: "1Gi", wakeIn: 6 * time.Hour},
		{name: "growing, never above max", c: sizingCase{windowPeak: 510, lifePeak: 512, max: "768Mi"},
			reason: v1alpha1.ReasonSizingSustaining, proposed: "768Mi", wakeIn: 6 * time.Hour},
		{name: "a turn of direction starts the clock again", c: sizingCase{windowPeak: 10, lifePeak: 20, last: proposing("640Mi", 7*time.Hour)},
			reason: v1alpha1.ReasonSizingSustaining, proposed: "256Mi", wakeIn: 6 * time.Hour},
		{name: "too soon after the last resize", c: sizingCase{windowPeak: 500, lifePeak: 500, windows: []v1alpha1.MaintenanceWindow{open}, last: func() *v1alpha1.SizingStatus {
			s := proposing("640Mi", 7*time.Hour)
			s.History = []v1alpha1.SizeChange{{Time: metav1.NewTime(sizingNow.Add(-time.Hour)), From: resource.MustParse("256Mi"), To: resource.MustParse("512Mi")}}
			return s
		}()}, reason: v1alpha1.ReasonSizingInterval, proposed: "640Mi", sinceAgo: 7 * time.Hour, wakeIn: 23 * time.Hour},
		{name: "the memory limit would not hold it", c: sizingCase{windowPeak: 500, lifePeak: 500, last: proposing("640Mi", 7*time.Hour), windows: []v1alpha1.MaintenanceWindow{open}, limit: "768Mi"},
			reason: v1alpha1.ReasonSizingMemory, proposed: "640Mi", sinceAgo: 7 * time.Hour, messageHas: "needs larger memory limits for container mariadb"},
		{name: "Recommend only reports", c: sizingCase{mode: v1alpha1.SizingRecommend, windowPeak: 500, lifePeak: 500, last: proposing("640Mi", 7*time.Hour), windows: []v1alpha1.MaintenanceWindow{open}},
			reason: v1alpha1.ReasonSizingRecommendOnly, proposed: "640Mi", sinceAgo: 7 * time.Hour, messageHas: "mode Automatic would set spec.size to 640Mi now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, rz, wake := tc.c.decide(t)
			if st == nil || st.Reason != tc.reason {
				t.Fatalf("status %+v, want reason %s", st, tc.reason)
			}
			switch {
			case tc.proposed == "" && st.Proposed != nil:
				t.Errorf("proposed %s, want none", st.Proposed)
			case tc.proposed != "" && (st.Proposed == nil || st.Proposed.Cmp(resource.MustParse(tc.proposed)) != 0):
				t.Errorf("proposed %v, want %s (%s)", st.Proposed, tc.proposed, st.Message)
			}
			if tc.proposed != "" && (st.Since == nil || !st.Since.Time.Equal(sizingNow.Add(-tc.sinceAgo))) {
				t.Errorf("since %v, want %s ago", st.Since, tc.sinceAgo)
			}
			if tc.resizedTo == "" && rz != nil || tc.resizedTo != "" && (rz == nil || rz.To.Cmp(resource.MustParse(tc.resizedTo)) != 0) {
				t.Errorf("resize %+v, want to %q", rz, tc.resizedTo)
			}
			if want := sizingNow.Add(tc.wakeIn); tc.wakeIn > 0 && !wake.Equal(want) || tc.wakeIn == 0 && !wake.IsZero() {
				t.Errorf("wake at %s, want in %s", wake, tc.wakeIn)
			}
			if !strings.Contains(st.Message, tc.messageHas) {
				t.Errorf("message %q, want it to say %q", st.Message, tc.messageHas)
			}
		})
	}
}

// A resize is recorded with the figures behind it, the approval lets exactly the proposal it
// names through, and the history keeps the last five.
func TestSizingApprovalAndHistory(t *testing.T) {
	last := proposing("640Mi", 7*time.Hour)
	st, _, _ := sizingCase{windowPeak: 500, lifePeak: 500, last: last}.decide(t)
	if st.Reason != v1alpha1.ReasonAwaitingApproval || st.ID == "" {
		t.Fatalf("%+v", st)
	}
	last.ID = "someother0"
	if st, rz, _ := (sizingCase{windowPeak: 500, lifePeak: 500, last: last, approve: true}).decide(t); rz != nil || st.Reason != v1alpha1.ReasonAwaitingApproval {
		t.Fatalf("an approval of another proposal let this one through: %+v", st)
	}
	last.ID = st.ID
	for range 5 {
		last.History = append(last.History, v1alpha1.SizeChange{Time: metav1.NewTime(sizingNow.Add(-48 * time.Hour)), From: resource.MustParse("256Mi"), To: resource.MustParse("512Mi")})
	}
	st, rz, _ := sizingCase{windowPeak: 500, lifePeak: 500, last: last, approve: true}.decide(t)
	if rz == nil || rz.To.Cmp(resource.MustParse("640Mi")) != 0 || !strings.Contains(rz.Why, "approved with dbtune.io/approve-change="+last.ID) {
		t.Fatalf("approved: resize %+v, status %+v", rz, st)
	}
	h := st.History
	if len(h) != 5 || h[0].To.Cmp(resource.MustParse("640Mi")) != 0 || h[0].From.Cmp(resource.MustParse("512Mi")) != 0 ||
		h[0].WindowPeakBytes != 500*mib || h[0].PeakBytes != 500*mib || h[0].Pods != 3 || !h[0].Since.Equal(last.Since) {
		t.Errorf("history %+v", h)
	}
	if st.Last != "512Mi → 640Mi" || st.Proposed != nil || st.ID != "" {
		t.Errorf("after the resize: last %q, proposed %v, id %q", st.Last, st.Proposed, st.ID)
	}
}

// Manual sizing reports nothing, and without observations nothing moves.
func TestSizingManualAndUnobserved(t *testing.T) {
	if st, rz, _ := (sizingCase{mode: v1alpha1.SizingManual, windowPeak: 500, lifePeak: 500}).decide(t); st != nil || rz != nil {
		t.Errorf("Manual: %+v, %+v", st, rz)
	}
	sv := &v1alpha1.ScratchVolume{}
	sv.Spec.Size = resource.MustParse("512Mi")
	sv.Spec.Sizing = &v1alpha1.SizingPolicy{Mode: v1alpha1.SizingAutomatic, Min: new(resource.MustParse("256Mi")), Max: new(resource.MustParse("2Gi"))}
	rep := NewReport(sv, ReportSettings{Version: "v1", Now: sizingNow}, Synced{})
	rep.observed = []v1alpha1.ScratchVolumeUsage{}
	st := &v1alpha1.ScratchVolumeStatus{}
	if resize, _ := rep.sizing(st); st.Sizing == nil || st.Sizing.Reason != v1alpha1.ReasonSizingNotObserved || resize != nil {
		t.Errorf("no pods observed: %+v", st.Sizing)
	}
	// The profiles could not be read: the proposal and its clock stay as they were.
	sv.Status.Sizing = proposing("640Mi", 7*time.Hour)
	rep = NewReport(sv, ReportSettings{Version: "v1", Now: sizingNow}, Synced{})
	st = &v1alpha1.ScratchVolumeStatus{}
	if resize, _ := rep.sizing(st); st.Sizing == nil || !st.Sizing.Since.Equal(sv.Status.Sizing.Since) || st.Sizing.Reason != v1alpha1.ReasonSizingSustaining || resize != nil {
		t.Errorf("observations unreadable: %+v, want the last status kept", st.Sizing)
	}
}

// The reconcile the new spec.size brings may read the status from before the resize: the resize
// the controller wrote must not be lost from the history, nor repeated within the interval.
func TestSizingKeepsAResizeTheCacheHasNotSeen(t *testing.T) {
	sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tmp", UID: "u1"}}
	sv.Spec.Size = resource.MustParse("640Mi") // written
	sv.Spec.Sizing = &v1alpha1.SizingPolicy{Mode: v1alpha1.SizingAutomatic, Min: new(resource.MustParse("256Mi")), Max: new(resource.MustParse("2Gi"))}
	sv.Status.Sizing = proposing("640Mi", 7*time.Hour) // read from before the resize
	known := &v1alpha1.SizingStatus{Reason: v1alpha1.ReasonResized, Last: "512Mi → 640Mi", History: []v1alpha1.SizeChange{{
		Time: metav1.NewTime(sizingNow.Add(-time.Second)), From: resource.MustParse("512Mi"), To: resource.MustParse("640Mi")}}}
	if SizingSeen(sv.Status.Sizing, known) || !SizingSeen(known, known) || !SizingSeen(nil, nil) {
		t.Fatal("SizingSeen cannot tell the status as read from the one written")
	}
	rep := NewReport(sv, ReportSettings{Version: "v1", Now: sizingNow, KnownSizing: known}, Synced{})
	obs := []v1alpha1.ScratchVolumeUsage{{Namespace: "ns", Pod: "db-0", ScratchVolume: "tmp", SizeBytes: 512 * mib, PeakBytes: 500 * mib, WindowPeakBytes: 500 * mib}}
	rep.observed = obs
	st := &v1alpha1.ScratchVolumeStatus{Usage: capacity.Summarize(obs)}
	if resize, _ := rep.sizing(st); st.Sizing.Reason != v1alpha1.ReasonSizingSteady || len(st.Sizing.History) != 1 || st.Sizing.Last != "512Mi → 640Mi" || resize != nil {
		t.Errorf("after a resize the cache has not seen: %+v", st.Sizing)
	}
}
