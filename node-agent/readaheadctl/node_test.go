package readaheadctl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readaheadctl"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// The "lvm" fixture has sda, sdb (128 KiB), the removable sdc, dm-0 (vg-root, 128 KiB) and dm-1
// (vg-mysql, 4096 KiB).

func TestAppliesPolicyReportsAndRevertsOnDeletion(t *testing.T) {
	e := setup(t)
	a := newNode(t, e, "lvm")
	probeWrites(t, a)
	a.start(t, a.config())

	p := a.policy(t, "scan", 8192, "dm-*")
	create(t, e, p)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"dm-0": 8192, "dm-1": 8192, "sda": 128}))
	testenv.Eventually(t, waitTimeout, func() string {
		prof := a.profile(t)
		for dev, want := range map[string]string{"dm-0": p.Name + ` 128/8192/8192 ""`, "dm-1": p.Name + ` 4096/8192/8192 ""`} {
			d := device(prof, dev)
			if got := describe(d); got != want {
				return fmt.Sprintf("%s: %s, want %s", dev, got, want)
			}
			if d.LastAppliedTime == nil || d.MajorMinor == "" {
				return fmt.Sprintf("%s has no lastAppliedTime or majorMinor", dev)
			}
		}
		if got := condition(prof.Status.Conditions, v1alpha1.ConditionReadAheadApplied); !strings.HasPrefix(got, "True Applied: 2 devices") {
			return "ReadAheadApplied: " + got
		}
		return ""
	})
	a.eventWith(t, readaheadctl.EventApplied, corev1.EventTypeNormal, fmt.Sprintf(
		"Set read-ahead for ReadAheadPolicy %s: dm-0 (253:0) 128 -> 8192 KiB (original saved in %[2]s); dm-1 (253:1) 4096 -> 8192 KiB (original saved in %[2]s)",
		p.Name, filepath.Join(a.stateDir, readahead.StateFileName)))
	if got := gauge(t, "dm-1"); got != 8192*1024 {
		t.Errorf("dbtune_node_read_ahead_bytes{device=dm-1} = %v, want %v", got, 8192*1024)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		st := a.getPolicy(t, p).Status
		if st.NodesMatched != 1 || st.NodesApplied != 1 || st.NodesDegraded != 0 || st.ObservedGeneration != p.Generation {
			return fmt.Sprintf("policy status %+v", st)
		}
		if got := condition(st.Conditions, v1alpha1.ConditionApplied); !strings.HasPrefix(got, "True Applied") {
			return "Applied: " + got
		}
		return ""
	})
	probeFieldsKept(t, a, true)

	// Nothing changes: nothing is written, however many resyncs pass.
	rv := a.profile(t).ResourceVersion
	sets := len(a.host.Sets())
	writes := a.statusWrites.Load()
	testenv.Consistently(t, 2*time.Second, func() string {
		if got := a.profile(t).ResourceVersion; got != rv {
			return "the NodeIOProfile was rewritten without a change: resourceVersion " + rv + " -> " + got
		}
		if n := a.statusWrites.Load() - writes; n != 0 {
			return fmt.Sprintf("%d status applies without a change", n)
		}
		if n := len(a.host.Sets()); n != sets {
			return fmt.Sprintf("%d device writes without a change", n-sets)
		}
		return ""
	})

	remove(t, e, p)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"dm-0": 128, "dm-1": 4096}))
	testenv.Eventually(t, waitTimeout, func() string {
		prof := a.profile(t)
		if len(prof.Status.ReadAhead) != 0 {
			return fmt.Sprintf("readAhead still lists %d devices", len(prof.Status.ReadAhead))
		}
		if got := condition(prof.Status.Conditions, v1alpha1.ConditionReadAheadApplied); !strings.HasPrefix(got, "False NoPolicy") {
			return "ReadAheadApplied: " + got
		}
		return ""
	})
	a.eventWith(t, readaheadctl.EventRestored, corev1.EventTypeNormal,
		"Restored the original read-ahead, as ReadAheadPolicy "+p.Name+" no longer applies to these devices: dm-0 (253:0) 8192 -> 128 KiB; dm-1 (253:1) 8192 -> 4096 KiB")
	if entries, err := readahead.NewStore(a.stateDir).Entries(); err != nil || len(entries) != 0 {
		t.Errorf("state after revert: %+v, %v", entries, err)
	}
	if got := gauge(t, "dm-1"); got != -1 {
		t.Errorf("dbtune_node_read_ahead_bytes{device=dm-1} = %v after the revert, want no series", got)
	}
	probeFieldsKept(t, a, false)
}

// probeWrites creates the NodeIOProfile and applies status fields under the probe's field
// manager, as the probe does.
func probeWrites(t *testing.T, a *agent) {
	t.Helper()
	create(t, a.e, &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: a.node}})
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "NodeIOProfile",
		"metadata": map[string]any{"name": a.node},
		"status": map[string]any{
			"kernel": "6.12.0-test",
			"conditions": []any{map[string]any{
				"type": v1alpha1.ConditionProbed, "status": "True", "reason": "Probed", "message": "probed",
				"lastTransitionTime": "2026-03-01T12:00:00Z",
			}, map[string]any{
				"type": v1alpha1.ConditionDegraded, "status": "False", "reason": "AllTargetsMeasured", "message": "all measured",
				"lastTransitionTime": "2026-03-01T12:00:00Z",
			}},
		},
	}}
	err := a.e.Client.Status().Apply(ctxFor(t), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.AgentFieldManager))
	if err != nil {
		t.Fatal(err)
	}
}

// probeFieldsKept checks that the read-ahead writes left the probe's fields and ownership alone,
// the Degraded condition included.
func probeFieldsKept(t *testing.T, a *agent, ownsDevices bool) {
	t.Helper()
	prof := a.profile(t)
	if prof.Status.Kernel != "6.12.0-test" || condition(prof.Status.Conditions, v1alpha1.ConditionProbed) != "True Probed: probed" ||
		condition(prof.Status.Conditions, v1alpha1.ConditionDegraded) != "False AllTargetsMeasured: all measured" {
		t.Errorf("the probe's fields changed: kernel %q, Probed %q, Degraded %q", prof.Status.Kernel,
			condition(prof.Status.Conditions, v1alpha1.ConditionProbed), condition(prof.Status.Conditions, v1alpha1.ConditionDegraded))
	}
	owners := map[string]string{}
	for _, mf := range prof.ManagedFields {
		if mf.Subresource == "status" && mf.FieldsV1 != nil {
			owners[mf.Manager] = mf.FieldsV1.GetRawString()
		}
	}
	probe, ours := owners[v1alpha1.AgentFieldManager], owners[readaheadctl.FieldManager]
	if !strings.Contains(probe, `"f:kernel"`) || !strings.Contains(probe, `"k:{\"type\":\"Probed\"}"`) {
		t.Errorf("the probe's manager no longer owns its fields: %s", probe)
	}
	if strings.Contains(ours, "kernel") || strings.Contains(ours, "Probed") || strings.Contains(ours, "Degraded") ||
		!strings.Contains(ours, `"k:{\"type\":\"ReadAheadApplied\"}"`) || strings.Contains(ours, `"f:readAhead"`) != ownsDevices {
		t.Errorf("%s owns %s", readaheadctl.FieldManager, ours)
	}
}

func TestPriorityDecidesAndTheLoserIsOverridden(t *testing.T) {
	e := setup(t)
	a := newNode(t, e, "lvm")
	a.start(t, a.config())

	lo := a.policy(t, "lo", 512, "sda")
	hi := a.policy(t, "hi", 2048, "sd?")
	hi.Spec.Priority = 10
	create(t, e, lo, hi)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 2048, "sdb": 2048, "sdc": 128}))
	testenv.Eventually(t, waitTimeout, func() string {
		d := device(a.profile(t), "sda")
		want := hi.Name + " 128/2048/2048 \"\" overrides [" + lo.Name + "]"
		if got := describe(d); got != want {
			return "sda: " + got
		}
		return ""
	})
	testenv.Eventually(t, waitTimeout, func() string {
		st := a.getPolicy(t, lo).Status
		if got := condition(st.Conditions, v1alpha1.ConditionOverridden); got != fmt.Sprintf(
			"True Overridden: ReadAheadPolicy %s wins on %s/sda; raise spec.priority to take these devices", hi.Name, a.node) {
			return "lo Overridden: " + got
		}
		if got := condition(st.Conditions, v1alpha1.ConditionApplied); !strings.HasPrefix(got, "False Overridden") || st.NodesMatched != 1 || st.NodesApplied != 0 {
			return fmt.Sprintf("lo Applied: %s, matched %d, applied %d", got, st.NodesMatched, st.NodesApplied)
		}
		st = a.getPolicy(t, hi).Status
		if !strings.HasPrefix(condition(st.Conditions, v1alpha1.ConditionOverridden), "False") || st.NodesApplied != 1 {
			return fmt.Sprintf("hi: %+v", st)
		}
		return ""
	})

	// The winner goes: the loser takes its device over, the device only the winner selected
	// gets its original back, and sda keeps the original saved before the first change.
	remove(t, e, hi)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 512, "sdb": 128}))
	testenv.Eventually(t, waitTimeout, func() string {
		if got := describe(device(a.profile(t), "sda")); got != lo.Name+` 128/512/512 ""` {
			return "sda: " + got
		}
		st := a.getPolicy(t, lo).Status
		if !strings.HasPrefix(condition(st.Conditions, v1alpha1.ConditionOverridden), "False") || st.NodesApplied != 1 {
			return fmt.Sprintf("lo after hi went: %+v", st)
		}
		return ""
	})
	remove(t, e, lo)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 128, "sdb": 128}))
}

func TestRevertsWhenTheNodeStopsMatching(t *testing.T) {
	e := setup(t)
	a := newNode(t, e, "lvm")
	a.start(t, a.config())
	p := a.policy(t, "scan", 1024, "sd?")
	create(t, e, p)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 1024, "sdb": 1024}))

	// With no probe around, the agent created the NodeIOProfile, owned by the Node.
	node := &corev1.Node{}
	if err := e.Client.Get(ctxFor(t), client.ObjectKey{Name: a.node}, node); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		prof := a.profile(t)
		if prof == nil || len(prof.OwnerReferences) != 1 || prof.OwnerReferences[0].UID != node.UID || prof.OwnerReferences[0].Kind != "Node" {
			return fmt.Sprintf("NodeIOProfile %+v is not owned by the Node", prof)
		}
		return ""
	})

	node.Labels = map[string]string{"kubernetes.io/hostname": a.node}
	if err := e.Client.Update(ctxFor(t), node); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 128, "sdb": 128}))
	a.eventWith(t, readaheadctl.EventRestored, corev1.EventTypeNormal, "sda (8:0) 1024 -> 128 KiB; sdb (8:16) 1024 -> 128 KiB")
	testenv.Eventually(t, waitTimeout, func() string {
		st := a.getPolicy(t, p).Status
		if got := condition(st.Conditions, v1alpha1.ConditionApplied); !strings.HasPrefix(got, "False NoMatchingNodes") || st.NodesMatched != 0 {
			return fmt.Sprintf("policy status %+v", st)
		}
		return ""
	})
}

func TestRepairsDriftWithAnEvent(t *testing.T) {
	e := setup(t)
	a := newNode(t, e, "lvm")
	a.start(t, a.config())
	create(t, e, a.policy(t, "scan", 4096, "sdb"))
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sdb": 4096}))

	// `blockdev --setra 512 /dev/sdb` by hand.
	sdb, _ := readahead.ParseDevNum("8:16")
	a.host.AddDevice(readahead.DeviceID{Name: "sdb", Dev: sdb}, 256)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sdb": 4096}))
	a.eventWith(t, readaheadctl.EventDriftRepaired, corev1.EventTypeWarning,
		"sdb (8:16) was 256 KiB (the agent had set 4096), now 4096 KiB")
	if e, _, _ := readahead.NewStore(a.stateDir).Entry(readahead.DeviceID{Name: "sdb", Dev: sdb}); e.OriginalKiB != 128 {
		t.Errorf("the repair changed the saved original to %d", e.OriginalKiB)
	}
}

func TestFaultsBecomeConditionsAndTheAgentGoesOn(t *testing.T) {
	e := setup(t)
	a := newNode(t, e, "lvm")
	a.start(t, a.config())
	scan := a.policy(t, "scan", 4096, "sd?")
	nvme := a.policy(t, "nvme", 4096, "nvme*n1")
	create(t, e, scan, nvme)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 4096, "sdb": 4096}))

	a.host.RemoveDevice("sdb")
	testenv.Eventually(t, waitTimeout, func() string {
		prof := a.profile(t)
		if prof == nil {
			return "no NodeIOProfile"
		}
		got := condition(prof.Status.Conditions, v1alpha1.ConditionReadAheadApplied)
		for _, want := range []string{
			"False DeviceNotFound: 1 of 2 devices have the read-ahead of their policy: sdb (8:16): failed to read read-ahead of sdb (8:16)",
			"(the device does not exist or has gone away)",
			"ReadAheadPolicy " + nvme.Name + `: name pattern "nvme*n1" matches no block device on this node`,
		} {
			if !strings.Contains(got, want) {
				return fmt.Sprintf("ReadAheadApplied %q lacks %q", got, want)
			}
		}
		if d := device(prof, "sdb"); d == nil || !strings.Contains(d.Message, "has gone away") || d.CurrentKiB != nil {
			return "sdb: " + describe(d)
		}
		return ""
	})
	a.eventWith(t, readaheadctl.EventFailed, corev1.EventTypeWarning, "sdb (8:16): failed to read read-ahead")

	// The agent goes on with the devices it can reach.
	// The status reconciler writes the policy too: retry on its resourceVersion.
	var latest *v1alpha1.ReadAheadPolicy
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest = a.getPolicy(t, scan)
		latest.Spec.ReadAheadKiB = 1024
		return e.Client.Update(ctxFor(t), latest)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 1024}))
	testenv.Eventually(t, waitTimeout, func() string {
		st := a.getPolicy(t, scan).Status
		if st.NodesDegraded != 1 || st.ObservedGeneration != latest.Generation ||
			!strings.Contains(condition(st.Conditions, v1alpha1.ConditionDegraded), a.node+"/sdb: failed to read") {
			return fmt.Sprintf("scan status %+v", st)
		}
		st = a.getPolicy(t, nvme).Status
		if got := condition(st.Conditions, v1alpha1.ConditionApplied); !strings.HasPrefix(got, "False NoDevices") {
			return "nvme Applied: " + got
		}
		return ""
	})
}

func TestCorruptStateFileChangesNothing(t *testing.T) {
	e := setup(t)
	a := newNode(t, e, "lvm")
	stateFile := filepath.Join(a.stateDir, readahead.StateFileName)
	if err := os.WriteFile(stateFile, []byte("{\"version\": 1, \"devices\": [{\"name\": \"sda\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.start(t, a.config())
	create(t, e, a.policy(t, "scan", 4096, "sd?"))
	testenv.Eventually(t, waitTimeout, func() string {
		prof := a.profile(t)
		if prof == nil {
			return "no NodeIOProfile"
		}
		got := condition(prof.Status.Conditions, v1alpha1.ConditionReadAheadApplied)
		if !strings.HasPrefix(got, "False StateFileCorrupt: no device was changed: state file: read-ahead state file "+stateFile+" is corrupt") ||
			!strings.Contains(got, "changes nothing until the file is repaired or moved aside") {
			return "ReadAheadApplied: " + got
		}
		return ""
	})
	testenv.Consistently(t, time.Second, func() string {
		if sets := a.host.Sets(); len(sets) != 0 {
			return fmt.Sprintf("the agent wrote with a corrupt state file: %+v", sets)
		}
		return ""
	})
	a.eventWith(t, readaheadctl.EventFailed, corev1.EventTypeWarning, "is corrupt")

	// Moved aside, the agent starts afresh.
	if err := os.Rename(stateFile, stateFile+".broken"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 4096, "sdb": 4096}))
}

// countingHost counts reads, to tell when an agent has made a pass that changed nothing.
type countingHost struct {
	readahead.Host
	reads atomic.Int64
}

func (h *countingHost) ReadAhead(id readahead.DeviceID) (int64, error) {
	h.reads.Add(1)
	return h.Host.ReadAhead(id)
}

func TestRestartCarriesOnWithoutResavingOriginals(t *testing.T) {
	e := setup(t)
	a := newNode(t, e, "lvm")
	a.start(t, a.config())
	p := a.policy(t, "scan", 4096, "sda")
	create(t, e, p)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 4096}))
	testenv.Eventually(t, waitTimeout, func() string {
		if got := describe(device(a.profile(t), "sda")); got != p.Name+` 128/4096/4096 ""` {
			return "sda: " + got
		}
		return ""
	})
	store := readahead.NewStore(a.stateDir)
	before, err := store.Entries()
	if err != nil || len(before) != 1 {
		t.Fatalf("state before the restart: %+v, %v", before, err)
	}

	// The pod exits: nothing is restored.
	a.stop()
	if v := a.value("sda"); v != 4096 {
		t.Fatalf("sda = %d KiB after the agent stopped, want the policy's value kept", v)
	}
	rv := a.profile(t).ResourceVersion
	sets := len(a.host.Sets())

	// A new agent with the same state directory finds its state and carries on.
	counting := &countingHost{Host: a.host}
	cfg := a.config()
	cfg.Host = counting
	a.start(t, cfg)
	testenv.Eventually(t, waitTimeout, func() string {
		if counting.reads.Load() < 4 {
			return "the new agent has not made two passes yet"
		}
		return ""
	})
	if n := len(a.host.Sets()) - sets; n != 0 {
		t.Errorf("the restarted agent wrote %d times", n)
	}
	after, err := store.Entries()
	if err != nil || len(after) != 1 || after[0].OriginalKiB != 128 || !after[0].SavedAt.Equal(before[0].SavedAt) {
		t.Errorf("state after the restart: %+v (%v), want %+v", after, err, before)
	}
	if got := a.profile(t).ResourceVersion; got != rv {
		t.Errorf("the restarted agent rewrote an unchanged NodeIOProfile: resourceVersion %s -> %s", rv, got)
	}

	remove(t, e, p)
	testenv.Eventually(t, waitTimeout, a.values(map[string]int64{"sda": 128}))
}
