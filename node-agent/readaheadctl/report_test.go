package readaheadctl

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

// harness runs passes of the node reconciler without an API server: gather's host part, decide,
// act and report.
type harness struct {
	r      *nodeReconciler
	host   *readaheadtest.FakeHost
	events *events.FakeRecorder
	inv    *readahead.Inventory
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	host := readaheadtest.NewFakeHost()
	inv := testInventory()
	for i := range inv.Devices {
		if d := &inv.Devices[i]; d.Kind != readahead.KindPartition {
			host.AddDevice(d.ID(), d.ReadAheadKiB)
		}
	}
	rec := events.NewFakeRecorder(100)
	return &harness{
		r: &nodeReconciler{recorder: rec, nodeName: "node-1", host: host, store: readahead.NewStore(t.TempDir()),
			warned: map[problem]bool{}, exported: map[string]bool{}},
		host: host, events: rec, inv: inv,
	}
}

func (h *harness) pass(t *testing.T, policies ...*v1alpha1.ReadAheadPolicy) report {
	t.Helper()
	in := input{policies: policies, inventory: h.inv}
	in.saved, in.stateErr = h.r.store.Entries()
	p := decide(in)
	node := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	events := newEventBatch(policies)
	rep := buildReport(p, h.r.act(context.Background(), p, h.r.assess(p.targets), events))
	h.r.warn(events, rep.problems)
	events.emit(h.r.recorder, node)
	return rep
}

func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func conditionView(c metav1.Condition) string {
	return string(c.Status) + " " + c.Reason + ": " + c.Message
}

func TestPassAppliesReportsAndRestores(t *testing.T) {
	h := newHarness(t)
	bulk := readaheadtest.Policy("bulk", 8192, []string{"sd?"}, readaheadtest.Priority(5))
	base := readaheadtest.Policy("base", 1024, []string{"sda"})
	rep := h.pass(t, bulk, base)

	want := []v1alpha1.DeviceReadAheadStatus{
		{Device: "sda", MajorMinor: "8:0", Policy: "bulk", OriginalKiB: new(int64(128)), DesiredKiB: new(int64(8192)), CurrentKiB: new(int64(8192)),
			OverriddenPolicies: []string{"base"}},
		{Device: "sdb", MajorMinor: "8:16", Policy: "bulk", OriginalKiB: new(int64(128)), DesiredKiB: new(int64(8192)), CurrentKiB: new(int64(8192))},
	}
	for i := range rep.devices {
		if rep.devices[i].LastAppliedTime == nil {
			t.Errorf("%s has no lastAppliedTime", rep.devices[i].Device)
		}
		rep.devices[i].LastAppliedTime = nil
	}
	if diff := cmp.Diff(want, rep.devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	if got := conditionView(rep.applied); got != "True Applied: 2 devices have the read-ahead of their policy: sda 8192 KiB (bulk); sdb 8192 KiB (bulk)" {
		t.Errorf("ReadAheadApplied = %s", got)
	}
	statePath := h.r.store.Path()
	wantEvents := []string{"Normal ReadAheadApplied Set read-ahead for ReadAheadPolicy bulk: sda (8:0) 128 -> 8192 KiB (original saved in " +
		statePath + "); sdb (8:16) 128 -> 8192 KiB (original saved in " + statePath + ")"}
	if diff := cmp.Diff(wantEvents, h.drainEvents()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Unchanged: no write, no Event.
	before := len(h.host.Sets())
	h.pass(t, bulk, base)
	if n := len(h.host.Sets()) - before; n != 0 {
		t.Errorf("an unchanged pass wrote %d times", n)
	}
	if got := h.drainEvents(); len(got) != 0 {
		t.Errorf("an unchanged pass emitted %q", got)
	}

	// The winner goes: base takes sda, keeping the first original; sdb is restored.
	rep = h.pass(t, base)
	if v, _ := h.host.Value("sda"); v != 1024 {
		t.Errorf("sda = %d KiB after the winner went, want base's 1024", v)
	}
	if v, _ := h.host.Value("sdb"); v != 128 {
		t.Errorf("sdb = %d KiB after no policy selects it, want its original 128", v)
	}
	if e, ok, _ := h.r.store.Entry(sda); !ok || e.OriginalKiB != 128 || e.Policy != "base" {
		t.Errorf("sda's entry = %+v, want original 128 for base", e)
	}
	if len(rep.devices) != 1 || rep.devices[0].Message != "" {
		t.Errorf("devices = %+v, want only sda without a message", rep.devices)
	}
	wantEvents = []string{
		"Normal ReadAheadRestored Restored the original read-ahead, as ReadAheadPolicy bulk no longer applies to these devices: sdb (8:16) 8192 -> 128 KiB",
		"Normal ReadAheadApplied Set read-ahead for ReadAheadPolicy base: sda (8:0) 8192 -> 1024 KiB",
	}
	if diff := cmp.Diff(wantEvents, h.drainEvents()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// No policy at all.
	rep = h.pass(t)
	if v, _ := h.host.Value("sda"); v != 128 {
		t.Errorf("sda = %d KiB with no policy, want its original 128", v)
	}
	if got := conditionView(rep.applied); got != "False NoPolicy: no ReadAheadPolicy selects a device on this node" {
		t.Errorf("ReadAheadApplied = %s", got)
	}
	if entries, _ := h.r.store.Entries(); len(entries) != 0 {
		t.Errorf("state still holds %+v", entries)
	}
}

func TestPassRepairsDrift(t *testing.T) {
	h := newHarness(t)
	p := readaheadtest.Policy("scan", 4096, []string{"sdb"})
	h.pass(t, p)
	h.drainEvents()
	h.host.AddDevice(sdb, 256)
	h.pass(t, p)
	if v, _ := h.host.Value("sdb"); v != 4096 {
		t.Errorf("sdb = %d KiB, want the policy's 4096 back", v)
	}
	want := "Warning ReadAheadDriftRepaired Read-ahead changed outside the agent, set back for ReadAheadPolicy scan: sdb (8:16) was 256 KiB (the agent had set 4096), now 4096 KiB"
	if got := h.drainEvents(); len(got) != 1 || got[0] != want {
		t.Errorf("events = %q, want %q", got, want)
	}
	if e, _, _ := h.r.store.Entry(sdb); e.OriginalKiB != 128 {
		t.Errorf("the repair replaced the original with %d", e.OriginalKiB)
	}
}

func TestPassFaultsAreReportedAndOthersGoOn(t *testing.T) {
	h := newHarness(t)
	h.host.RemoveDevice("sda")
	h.host.FailSets("dm-0", syscall.EROFS)
	rep := h.pass(t,
		readaheadtest.Policy("scan", 4096, []string{"sd?", "nvme*"}),
		readaheadtest.Policy("mysql", 8192, nil, readaheadtest.MountPaths("/var/lib/mysql")),
	)
	if v, _ := h.host.Value("sdb"); v != 4096 {
		t.Errorf("sdb = %d KiB, want 4096 despite the other faults", v)
	}
	var reasons []string
	for _, p := range rep.problems {
		reasons = append(reasons, p.reason+" "+p.subject)
	}
	wantReasons := []string{"ReadOnlySysfs dm-0 (253:0)", "DeviceNotFound sda (8:0)", "NoDeviceMatched ReadAheadPolicy scan"}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if c := rep.applied; c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonReadOnlySysfs ||
		!strings.HasPrefix(c.Message, "1 of 3 devices have the read-ahead of their policy: dm-0 (253:0): failed to set read-ahead") ||
		!strings.Contains(c.Message, "/sys is mounted read-only; the agent needs a privileged container") ||
		!strings.Contains(c.Message, "; sda (8:0): failed to read read-ahead of sda (8:0)") ||
		!strings.Contains(c.Message, "the device does not exist or has gone away") ||
		!strings.Contains(c.Message, `; ReadAheadPolicy scan: name pattern "nvme*" matches no block device on this node`) {
		t.Errorf("ReadAheadApplied = %s", conditionView(c))
	}
	if v, _ := h.host.Value("dm-0"); v != 128 {
		t.Errorf("dm-0 = %d KiB after a refused write", v)
	}
	// One Warning per policy with every new problem; a lasting problem is not announced again.
	var warnings []string
	for _, e := range h.drainEvents() {
		if strings.HasPrefix(e, "Warning ReadAheadFailed ") {
			warnings = append(warnings, e)
		}
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "dm-0 (253:0): failed to set read-ahead") ||
		!strings.Contains(warnings[1], "sda (8:0): failed to read read-ahead") || !strings.Contains(warnings[1], `name pattern "nvme*"`) {
		t.Errorf("warnings = %q", warnings)
	}
	h.pass(t, readaheadtest.Policy("scan", 4096, []string{"sd?", "nvme*"}), readaheadtest.Policy("mysql", 8192, nil, readaheadtest.MountPaths("/var/lib/mysql")))
	if got := h.drainEvents(); len(got) != 0 {
		t.Errorf("lasting problems announced again: %q", got)
	}
}

func TestPassWithCorruptStateChangesNothing(t *testing.T) {
	h := newHarness(t)
	if err := os.WriteFile(h.r.store.Path(), []byte(`{"version": 1, "devices": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := h.pass(t, readaheadtest.Policy("scan", 4096, []string{"sd?"}))
	if sets := h.host.Sets(); len(sets) != 0 {
		t.Errorf("a corrupt state file let %d writes through: %+v", len(sets), sets)
	}
	if c := rep.applied; c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonStateFileCorrupt ||
		!strings.HasPrefix(c.Message, "no device was changed: state file: read-ahead state file "+h.r.store.Path()+" is corrupt") ||
		!strings.Contains(c.Message, "changes nothing until the file is repaired or moved aside") {
		t.Errorf("ReadAheadApplied = %s", conditionView(c))
	}
	for _, d := range rep.devices {
		if d.OriginalKiB != nil || !strings.HasPrefix(d.Message, "left unchanged: StateFileCorrupt") {
			t.Errorf("device entry %+v", d)
		}
	}
}
