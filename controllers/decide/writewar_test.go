package decide

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// TestWriteWarRule walks the rule through a fight: the restores the window allows, the hold, the
// one try when it ends, a longer hold when the try is undone, a spec change, and the end of the
// fight when a try survives the window.
func TestWriteWarRule(t *testing.T) {
	w := WriteWarRule{}.OrDefaults()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := t0.Add
	var g Guard
	restore := func(now time.Time, key string) (hold, fresh bool) {
		t.Helper()
		g, hold, fresh = w.BeforeRestore(g, now, key)
		if !hold {
			g = w.AfterWrite(g, now, true)
		}
		return hold, fresh
	}
	for i := range 3 {
		if hold, _ := restore(at(time.Duration(i)*time.Minute), "a"); hold {
			t.Fatalf("restore %d held off; the window allows %d", i+1, w.Restores)
		}
	}
	if hold, fresh := restore(at(3*time.Minute), "a"); !hold || !fresh || g.War.Holds != 1 {
		t.Fatalf("the 4th restore within the window: hold=%v fresh=%v war=%+v, want the first hold", hold, fresh, g.War)
	}
	if want := at(3*time.Minute + w.Window); !g.War.RetryAt.Time.Equal(want) {
		t.Errorf("the first hold ends at %v, want %v (one window)", g.War.RetryAt, want)
	}
	if got := w.Wake(g); !got.Equal(g.War.RetryAt.Time) {
		t.Errorf("wake = %v, want the end of the hold", got)
	}
	if hold, fresh := restore(at(5*time.Minute), "a"); !hold || fresh {
		t.Errorf("during the hold: hold=%v fresh=%v, want held, not a new hold", hold, fresh)
	}
	// The hold ends: one try.
	if hold, _ := restore(at(14*time.Minute), "a"); hold {
		t.Fatal("no try after the hold ended")
	}
	if g.War == nil || g.War.TriedAt.IsZero() {
		t.Fatalf("the try is not recorded: %+v", g.War)
	}
	// Undone again: a hold twice as long, without the 3 restores.
	if hold, fresh := restore(at(15*time.Minute), "a"); !hold || !fresh || g.War.Holds != 2 {
		t.Fatalf("an undone try: hold=%v fresh=%v war=%+v, want the second hold", hold, fresh, g.War)
	}
	if got, want := g.War.RetryAt.Sub(g.War.HeldSince.Time), 2*w.Window; got != want {
		t.Errorf("the second hold lasts %v, want %v", got, want)
	}
	// A new spec tries at once.
	if hold, _ := restore(at(16*time.Minute), "b"); hold {
		t.Error("a spec change did not end the hold")
	}
	// The try stays: the fight ends one window later.
	g = w.Settled(g, at(20*time.Minute))
	if g.War == nil {
		t.Fatal("the fight ended before the try survived a window")
	}
	if got, want := w.Wake(g), at(16*time.Minute+w.Window); !got.Equal(want) {
		t.Errorf("wake = %v, want %v", got, want)
	}
	g = w.Settled(g, at(26*time.Minute))
	if g.War != nil || len(g.Restores) != 0 {
		t.Errorf("after a quiet window: %+v, want no fight and no restores in the window", g)
	}
}

func TestHoldForGrowsAndIsBounded(t *testing.T) {
	w := WriteWarRule{}.OrDefaults()
	for n, want := range map[int32]time.Duration{1: 10 * time.Minute, 2: 20 * time.Minute, 3: 40 * time.Minute, 6: 320 * time.Minute, 40: 320 * time.Minute} {
		if got := w.holdFor(n); got != want {
			t.Errorf("holdFor(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestGuardFromStatusMergesScratchVolumes(t *testing.T) {
	t1, t2 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	sv := func(ts ...v1alpha1.ScratchTargetStatus) *v1alpha1.ScratchVolume {
		return &v1alpha1.ScratchVolume{Status: v1alpha1.ScratchVolumeStatus{Targets: ts}}
	}
	svs := []*v1alpha1.ScratchVolume{
		sv(v1alpha1.ScratchTargetStatus{Name: "db", Restores: []metav1.Time{t2}}, v1alpha1.ScratchTargetStatus{Name: "other", Restores: []metav1.Time{t1}}),
		sv(v1alpha1.ScratchTargetStatus{Name: "db", Restores: []metav1.Time{t1, t2}, WriteWar: &v1alpha1.WriteWar{Holds: 2}}),
	}
	g := GuardFromStatus(svs, "db")
	if diff := cmp.Diff([]metav1.Time{t1, t2}, g.Restores); diff != "" {
		t.Errorf("restores (-want +got):\n%s", diff)
	}
	if g.War == nil || g.War.Holds != 2 {
		t.Errorf("war = %+v, want the one with 2 holds", g.War)
	}
}

func TestUpdateWriters(t *testing.T) {
	fields := metav1.NewFieldsV1
	ts := func(sec int64) *metav1.Time { t := metav1.NewTime(time.Unix(sec, 0)); return &t }
	template := `{"f:spec":{"f:template":{"f:spec":{}}}}`
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, Time: ts(1), FieldsV1: fields(template)},
		{Manager: "other-operator", Operation: metav1.ManagedFieldsOperationUpdate, Time: ts(5), FieldsV1: fields(template)},
		{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: ts(6), FieldsV1: fields(template)},
		{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply, Time: ts(7), FieldsV1: fields(template)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: ts(8), FieldsV1: fields(`{"f:status":{}}`)},
		{Manager: "scaler", Operation: metav1.ManagedFieldsOperationUpdate, Time: ts(9), FieldsV1: fields(`{"f:spec":{"f:replicas":{}}}`)},
	}}}
	want := []v1alpha1.WriteCandidate{{FieldManager: "scaler", LastUpdate: *ts(9)}, {FieldManager: "other-operator", LastUpdate: *ts(5)},
		{FieldManager: "helm", LastUpdate: *ts(1)}}
	if diff := cmp.Diff(want, UpdateWriters(sts)); diff != "" {
		t.Errorf("UpdateWriters (-want +got):\n%s", diff)
	}
}

func TestRemovedEntries(t *testing.T) {
	want := inject.Entries{
		Annotations:    map[string]string{"scratch.dbtune.io/tmp": "h1"},
		Volumes:        []corev1.Volume{{Name: "dbtune-scratch-tmp"}},
		InitContainers: []corev1.Container{{Name: "dbtune-init-tmp"}},
		Mounts:         map[string][]corev1.VolumeMount{"mariadb": {{Name: "dbtune-scratch-tmp", MountPath: "/var/lib/mysql-tmp"}}},
	}
	have := inject.Entries{
		Annotations: map[string]string{"scratch.dbtune.io/tmp": "h0"},
		Volumes:     []corev1.Volume{{Name: "dbtune-scratch-tmp"}},
	}
	got := names(contestedEntries(want, have, &corev1.PodTemplateSpec{}))
	wantNames := []string{"the mount /var/lib/mysql-tmp in container mariadb", "the init container dbtune-init-tmp",
		"the pod-template annotation scratch.dbtune.io/tmp"}
	if diff := cmp.Diff(wantNames, got); diff != "" {
		t.Errorf("contestedEntries (-want +got):\n%s", diff)
	}
	if got := contestedEntries(want, want, &corev1.PodTemplateSpec{}); len(got) != 0 {
		t.Errorf("nothing removed, got %v", got)
	}
}

// A writer that replaces the StatefulSet from a stored copy (an Update under its own field manager,
// writing back an unchanged pod template) owns no field under the template, yet it is the one that
// removes the entries. The API server records who last changed each field, not who removed one:
// the message must say the remover is not known for sure, and list every manager that updates the
// StatefulSet with its time, newest first, without naming any as the remover.
func TestFightMessageNamesNoRemoverAsFact(t *testing.T) {
	fields := metav1.NewFieldsV1
	at := func(s string) *metav1.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		mt := metav1.NewTime(tm)
		return &mt
	}
	template := `{"f:spec":{"f:template":{"f:spec":{}}}}`
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, Time: at("2026-12-02T06:00:00Z"), FieldsV1: fields(template)},
		{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: at("2026-12-02T06:10:00Z"), FieldsV1: fields(template)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at("2026-12-02T06:11:00Z"), FieldsV1: fields(`{"f:status":{}}`)},
		{Manager: "stored-copy-writer", Operation: metav1.ManagedFieldsOperationUpdate, Time: at("2026-12-02T06:12:00Z"),
			FieldsV1: fields(`{"f:metadata":{"f:annotations":{"f:restored-at":{}}}}`)},
	}}}
	rule := WriteWarRule{}.OrDefaults()
	g := Guard{War: &v1alpha1.WriteWar{Holds: 1, RetryAt: *at("2026-12-02T06:22:00Z")}}.WithWriters(sts, Restore{entries: []contested{{what: "the volume dbtune-scratch-tmp"}}})
	msg := FightMessage("db", g.War, rule)
	for _, want := range []string{"not known for sure", "stored-copy-writer (last update 2026-12-02T06:12:00Z)",
		"kubectl-client-side-apply (last update 2026-12-02T06:00:00Z)", "the volume dbtune-scratch-tmp"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q:\n%s", want, msg)
		}
	}
	if i, j := strings.Index(msg, "stored-copy-writer"), strings.Index(msg, "kubectl-client-side-apply"); i < 0 || j < 0 || i > j {
		t.Errorf("the candidates are not listed newest first:\n%s", msg)
	}
	for _, wrong := range []string{"field manager kubectl-client-side-apply removed", "field managers kubectl-client-side-apply", "kube-controller-manager", v1alpha1.FieldManager} {
		if strings.Contains(msg, wrong) {
			t.Errorf("the message says %q:\n%s", wrong, msg)
		}
	}
}
