package controllers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/test/testenv"
)

const mib = 1 << 20

// TestUsageFromTheNodeAgents feeds the controller what node agents write into their
// NodeIOProfiles and checks the ScratchVolume's status: the usage per target and in all, the
// recommendation, the Capacity condition, one Event per time a pod's volume filled up, and pods
// that are not the ScratchVolume's or are gone not counted.
func TestUsageFromTheNodeAgents(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionCapacity, metav1.ConditionUnknown, v1alpha1.ReasonCapacityNotObserved)
	})

	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	report := func(pod, sv string, peakMi int64) v1alpha1.ScratchVolumeUsage {
		return v1alpha1.ScratchVolumeUsage{Namespace: ns, Pod: pod, ScratchVolume: sv, SampledSince: since,
			SizeBytes: 512 * mib, PeakBytes: peakMi * mib, WindowPeakBytes: peakMi * mib}
	}
	nodeA := agentReports(t, e, ns+"-a", report("db-0", "tmp", 100), report("db-1", "tmp", 300),
		report("db-0", "other", 500), report("web-0", "tmp", 500), report("dbx-0", "tmp", 500))
	testenv.Eventually(t, waitTimeout, func() string {
		sv := getSV(t, e, ns, "tmp")
		u := sv.Status.Usage
		if u == nil || u.Pods != 2 || u.PeakBytes != 300*mib || u.PeakPercent != 59 || !u.ObservedSince.Equal(&since) {
			return fmt.Sprintf("usage %+v, want 2 pods (db-0, db-1 only), peak 300 MiB = 59%%", u)
		}
		if len(sv.Status.Targets) != 1 || sv.Status.Targets[0].Usage == nil || sv.Status.Targets[0].Usage.Pods != 2 {
			return fmt.Sprintf("targets %+v, want db with the usage of 2 pods", sv.Status.Targets)
		}
		if r := sv.Status.RecommendedSize; r == nil || r.Cmp(resource.MustParse("384Mi")) != 0 {
			return fmt.Sprintf("recommended %v, want 384Mi (300 MiB + 25%%, in 64Mi steps)", r)
		}
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionCapacity, metav1.ConditionTrue, v1alpha1.ReasonCapacitySufficient)
	})
	if c := condition(t, e, ns, "tmp", v1alpha1.ConditionCapacity); !strings.Contains(c.Message, "would free 128Mi of memory per pod (256Mi over 2 pods)") {
		t.Errorf("Capacity message %q does not say what the recommendation frees", c.Message)
	}
	if c := condition(t, e, ns, "tmp", v1alpha1.ConditionReady); c.Reason == v1alpha1.ReasonCapacitySufficient {
		t.Errorf("Ready took the Capacity reason: %+v", c)
	}

	// db-1 fills up: Full, twice the size recommended, one Event.
	full := report("db-1", "tmp", 512)
	full.Full, full.FullEpisodes, full.LastFullTime = true, 1, &since
	nodeA.set(t, report("db-0", "tmp", 100), full)
	testenv.Eventually(t, waitTimeout, func() string {
		if r := getSV(t, e, ns, "tmp").Status.RecommendedSize; r == nil || r.Cmp(resource.MustParse("1Gi")) != 0 {
			return fmt.Sprintf("recommended %v, want 1Gi (twice the size of a full volume)", r)
		}
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionCapacity, metav1.ConditionFalse, v1alpha1.ReasonCapacityFull)
	})
	testenv.Eventually(t, waitTimeout, func() string { return fullEvents(t, ns, 1, "pod db-1 was found full") })
	if c := condition(t, e, ns, "tmp", v1alpha1.ConditionCapacity); !strings.Contains(c.Message, "needs 512Mi more memory per pod (1Gi over 2 pods); the containers' memory limits hold it") {
		t.Errorf("Capacity message %q does not weigh the recommendation against the 2Gi limit", c.Message)
	}
	// 1.5Gi holds 512Mi + 512M buffer pool + 256Mi headroom, not 1Gi + the same.
	updateSTS(t, e, ns, "db", func(sts *appsv1.StatefulSet) {
		sts.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1536Mi")
	})
	testenv.Eventually(t, waitTimeout, func() string {
		if c := condition(t, e, ns, "tmp", v1alpha1.ConditionCapacity); !strings.Contains(c.Message, "needs larger memory limits for container mariadb of db (1.5Gi, needs 1.8Gi)") {
			return fmt.Sprintf("Capacity message %q does not say the 1.5Gi limit is short", c.Message)
		}
		return ""
	})

	// The volume empties, the count stays: nothing new to announce. Then it fills again.
	full.Full, full.WindowPeakBytes = false, 10*mib
	nodeA.set(t, report("db-0", "tmp", 100), full)
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionCapacity, metav1.ConditionTrue, v1alpha1.ReasonCapacitySufficient)
	})
	testenv.Consistently(t, 2*time.Second, func() string { return fullEvents(t, ns, 1, "") })
	full.Full, full.FullEpisodes = true, 2
	nodeA.set(t, report("db-0", "tmp", 100), full)
	testenv.Eventually(t, waitTimeout, func() string { return fullEvents(t, ns, 2, "(2 time(s) since") })
	if fp := getSV(t, e, ns, "tmp").Status.FullPods; len(fp) != 1 || fp[0].Pod != "db-1" || fp[0].Episodes != 2 {
		t.Errorf("status.fullPods = %+v, want db-1 announced twice", fp)
	}

	// A second node, then db-0 deleted from the first.
	agentReports(t, e, ns+"-b", report("db-2", "tmp", 50))
	testenv.Eventually(t, waitTimeout, func() string {
		if u := getSV(t, e, ns, "tmp").Status.Usage; u == nil || u.Pods != 3 || u.FullPods != 1 {
			return fmt.Sprintf("usage %+v, want 3 pods over two nodes, 1 found full", u)
		}
		return ""
	})
	nodeA.set(t, full)
	testenv.Eventually(t, waitTimeout, func() string {
		if u := getSV(t, e, ns, "tmp").Status.Usage; u == nil || u.Pods != 2 {
			return fmt.Sprintf("usage %+v, want 2 pods once db-0 is gone", u)
		}
		return ""
	})
}

// agentProfile is a NodeIOProfile written as a node agent would.
type agentProfile struct {
	e    *testenv.Env
	name string
}

// agentReports creates a NodeIOProfile reporting the given volumes.
func agentReports(t *testing.T, e *testenv.Env, node string, us ...v1alpha1.ScratchVolumeUsage) *agentProfile {
	t.Helper()
	p := &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := e.Client.Create(ctxFor(t), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctxFor(t), p) })
	a := &agentProfile{e: e, name: node}
	a.set(t, us...)
	return a
}

func (a *agentProfile) set(t *testing.T, us ...v1alpha1.ScratchVolumeUsage) {
	t.Helper()
	p := &v1alpha1.NodeIOProfile{}
	if err := a.e.Client.Get(ctxFor(t), client.ObjectKey{Name: a.name}, p); err != nil {
		t.Fatal(err)
	}
	p.Status.ScratchVolumes = us
	if err := a.e.Client.Status().Update(ctxFor(t), p); err != nil {
		t.Fatalf("failed to write the scratch volumes of NodeIOProfile %s: %v", a.name, err)
	}
}

// fullEvents returns "" when exactly n ScratchVolumeFull Events exist in ns and the newest says
// what it should.
func fullEvents(t *testing.T, ns string, n int, says string) string {
	list := &eventsv1.EventList{}
	if err := env.Client.List(ctxFor(t), list, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var notes []string
	for _, ev := range list.Items {
		if ev.Reason == decide.EventScratchVolumeFull {
			notes = append(notes, ev.Note)
		}
	}
	if len(notes) != n {
		return fmt.Sprintf("%d %s Events %q, want %d", len(notes), decide.EventScratchVolumeFull, notes, n)
	}
	for _, note := range notes {
		if strings.Contains(note, says) && strings.Contains(note, "No space left on device") && strings.Contains(note, "1Gi") {
			return ""
		}
	}
	return fmt.Sprintf("no %s Event says %q, the recommendation and what fails: %q", decide.EventScratchVolumeFull, says, notes)
}

// TestLargePagesFromTheNodeAgents: what the agents say each pod's volume runs with reaches the
// ScratchVolume's status per target and pod, and the LargePages condition names the pods to look
// at, without touching Ready; the pods of another ScratchVolume or StatefulSet do not count.
func TestLargePagesFromTheNodeAgents(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionLargePages, metav1.ConditionUnknown, v1alpha1.ReasonCapacityNotObserved)
	})
	if sv := getSV(t, e, ns, "tmp"); sv.Spec.LargePages != v1alpha1.LargePagesWithinSize {
		t.Errorf("spec.largePages defaults to %q, want WithinSize", sv.Spec.LargePages)
	}
	report := func(pod, sv string, lp *v1alpha1.VolumeLargePages) v1alpha1.ScratchVolumeUsage {
		return v1alpha1.ScratchVolumeUsage{Namespace: ns, Pod: pod, ScratchVolume: sv, SampledSince: metav1.NewTime(time.Now().Truncate(time.Second)),
			SizeBytes: 512 * mib, LargePages: lp}
	}
	applied := &v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesApplied, Huge: "within_size"}
	refused := &v1alpha1.VolumeLargePages{State: v1alpha1.LargePagesUnsupported, Huge: "never", Message: "the node's kernel does not give this tmpfs large pages"}
	node := agentReports(t, e, ns+"-a", report("db-0", "tmp", applied), report("db-1", "tmp", nil),
		report("db-2", "other", refused), report("web-0", "tmp", refused))
	testenv.Eventually(t, waitTimeout, func() string {
		sv := getSV(t, e, ns, "tmp")
		want := []v1alpha1.PodLargePages{{Pod: "db-0", VolumeLargePages: *applied}}
		if len(sv.Status.Targets) != 1 || fmt.Sprint(sv.Status.Targets[0].LargePages) != fmt.Sprint(want) {
			return fmt.Sprintf("targets %+v, want db with db-0 Applied only (db-1 not reported yet)", sv.Status.Targets)
		}
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionLargePages, metav1.ConditionTrue, v1alpha1.ReasonLargePagesAsRequested)
	})

	node.set(t, report("db-0", "tmp", applied), report("db-1", "tmp", refused))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionLargePages, metav1.ConditionFalse, string(v1alpha1.LargePagesUnsupported))
	})
	c := condition(t, e, ns, "tmp", v1alpha1.ConditionLargePages)
	if !strings.Contains(c.Message, "1 of 2 pod(s)") || !strings.Contains(c.Message, "db-1") || !strings.Contains(c.Message, refused.Message) {
		t.Errorf("LargePages message %q does not name db-1 and quote its agent", c.Message)
	}
	// envtest runs no StatefulSet controller, so Ready waits for the rollout; it must not be
	// large pages that it waits for.
	if r := condition(t, e, ns, "tmp", v1alpha1.ConditionReady); r.Reason == string(v1alpha1.LargePagesUnsupported) || strings.Contains(r.Message, "large pages") {
		t.Errorf("Ready = %+v: a volume without large pages works and must not make the ScratchVolume unready", r)
	}
}
