package upgrade_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/test/testenv"
	"github.com/dbtune/scratch-operator/test/testmanager"
)

// nextVersion is the version the manager under test reports, told apart from the recorded ones.
const nextVersion = "v-next"

// cluster is an API server that a release's CRDs were installed in.
type cluster struct {
	client client.Client
	env    *envtest.Environment
}

// startWith starts an API server with rel's CRDs and rel's fleet stored in it, then installs this
// build's CRDs over them, as an upgrade of the manager does.
func startWith(ctx context.Context, t *testing.T, rel *release) *cluster {
	t.Helper()
	e := testenv.Require(t, env) // the shared one proves the binaries are there, or skips
	te := &envtest.Environment{
		BinaryAssetsDirectory: os.Getenv(testenv.AssetsEnv), CRDDirectoryPaths: []string{rel.crdDir()},
		ErrorIfCRDPathMissing: true, Scheme: e.Scheme,
	}
	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		t.Fatalf("failed to start an API server with the CRDs of %s: %v", rel.dir, err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	rel.restore(ctx, t, c)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatalf("failed to install this build's CRDs over those of %s: %v", rel.dir, err)
	}
	te.Config = cfg
	return &cluster{client: c, env: te}
}

// TestUpgradeWritesNothing adopts each recorded release's fleet with this build's manager: it
// must write no StatefulSet and no ConfigMap, keep every ScratchVolume Ready, and find nothing to
// hold back, since it renders every target as the release did.
func TestUpgradeWritesNothing(t *testing.T) {
	for _, rel := range releases(t) {
		t.Run(filepath.Base(rel.dir), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cl := startWith(ctx, t, rel)
			servedAndValid(ctx, t, cl.client, rel)
			generations := statefulSetGenerations(ctx, t, cl.client)

			writes := testmanager.Run(t, cl.env.Config, cl.client.Scheme(), func(r *controllers.ScratchVolumeReconciler) { r.Version = nextVersion }).Writes
			testenv.Eventually(t, time.Minute, func() string { return notAdopted(ctx, t, cl.client) })
			testenv.Consistently(t, 3*time.Second, func() string {
				if why := nothingWritten(ctx, t, cl.client, writes, generations); why != "" {
					return why
				}
				for _, sv := range scratchVolumes(ctx, t, cl.client) {
					if why := conditionIs(sv, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady); why != "" {
						return why
					}
					if why := conditionIs(sv, v1alpha1.ConditionChangesPending, metav1.ConditionFalse, v1alpha1.ReasonNoPendingChanges); why != "" {
						return why
					}
				}
				return ""
			})
		})
	}
}

// nothingWritten says what the manager wrote, "" when it wrote no StatefulSet and no ConfigMap
// and every StatefulSet is at the generation it had.
func nothingWritten(ctx context.Context, t *testing.T, c client.Client, writes *testmanager.Writes, generations map[string]int64) string {
	t.Helper()
	if w := writes.Of("statefulsets", fleetNamespace); len(w) > 0 {
		return fmt.Sprintf("the manager wrote StatefulSets: %v", w)
	}
	if w := writes.Of("configmaps", fleetNamespace); len(w) > 0 {
		return fmt.Sprintf("the manager wrote ConfigMaps: %v", w)
	}
	if now := statefulSetGenerations(ctx, t, c); !equalMaps(now, generations) {
		return fmt.Sprintf("StatefulSet generations moved: %v, were %v", now, generations)
	}
	return ""
}

// servedAndValid reads back every ScratchVolume stored under the release's CRDs and has the API
// server validate each spec under this build's (a dry-run create, which no ratcheting of
// unchanged fields lets through).
func servedAndValid(ctx context.Context, t *testing.T, c client.Client, rel *release) {
	t.Helper()
	for _, recorded := range rel.ScratchVolumes {
		sv := &v1alpha1.ScratchVolume{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: fleetNamespace, Name: recorded.Name}, sv); err != nil {
			t.Fatalf("ScratchVolume %s stored under the CRDs of %s is not served: %v", recorded.Name, rel.dir, err)
		}
		again := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: sv.Name + "-again"}, Spec: sv.Spec}
		if err := c.Create(ctx, again, client.DryRunAll); err != nil {
			t.Errorf("ScratchVolume %s of %s is refused by this build's schema: %v", sv.Name, rel.dir, err)
		}
	}
}

// notAdopted says which ScratchVolume the new manager has not reported on yet: each target's
// status names the version that last checked it, or the version that wants a change.
func notAdopted(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	for _, sv := range scratchVolumes(ctx, t, c) {
		if len(sv.Status.Targets) == 0 {
			return sv.Name + " has no targets in its status"
		}
		for _, ts := range sv.Status.Targets {
			if (ts.Applied == nil || ts.Applied.Version != nextVersion) && (ts.PendingChange == nil || ts.PendingChange.WantedBy != nextVersion) {
				return fmt.Sprintf("the new manager has not reported target %s of %s yet: %+v; conditions %+v", ts.Name, sv.Name, ts, sv.Status.Conditions)
			}
		}
	}
	return ""
}

// TestRenderingChangeWaitsForTheUser adopts a fleet whose configuration an earlier release
// rendered otherwise than this build (a drop-in line less): the change waits, reported, until it
// is approved or a maintenance window opens, and then it is written, once per StatefulSet.
func TestRenderingChangeWaitsForTheUser(t *testing.T) {
	all := releases(t)
	rel := renderedOtherwise(t, all[len(all)-1], "mariadb", "pool")
	removed := removedLine(all[len(all)-1], "mariadb")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := startWith(ctx, t, rel)
	generations := statefulSetGenerations(ctx, t, cl.client)
	writes := testmanager.Run(t, cl.env.Config, cl.client.Scheme(), func(r *controllers.ScratchVolumeReconciler) { r.Version = nextVersion }).Writes
	testenv.Eventually(t, time.Minute, func() string { return notAdopted(ctx, t, cl.client) })

	// Held back and reported, nothing written.
	testenv.Consistently(t, 3*time.Second, func() string { return nothingWritten(ctx, t, cl.client, writes, generations) })
	mariadb := scratchVolume(t, cl.client, "mariadb")
	if why := conditionIs(mariadb, v1alpha1.ConditionChangesPending, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval); why != "" {
		t.Fatal(why)
	}
	if why := conditionIs(mariadb, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady); why != "" {
		t.Errorf("a target keeping its working configuration stays Ready: %s", why)
	}
	change := mariadb.Status.Targets[0].PendingChange
	if change == nil || mariadb.Status.PendingChanges != 1 || change.WantedBy != nextVersion ||
		!slices.ContainsFunc(change.Changes, func(s string) bool {
			return strings.Contains(s, ": + ") && strings.HasSuffix(s, removed)
		}) {
		t.Fatalf("the pending change should name the drop-in line it adds back (%q): %+v", removed, change)
	}
	pool := scratchVolume(t, cl.client, "pool")
	if pool.Status.PendingChanges != 3 {
		t.Fatalf("each of the pool's 3 StatefulSets has the change pending: %d", pool.Status.PendingChanges)
	}
	for _, ts := range pool.Status.Targets {
		if ts.PendingChange == nil || ts.PendingChange.ID != pool.Status.Targets[0].PendingChange.ID {
			t.Errorf("targets given the same change share its ID: %s has %+v", ts.Name, ts.PendingChange)
		}
	}

	// Approved: written once, the pending change gone, an Event saying why.
	annotate(ctx, t, cl.client, mariadb, v1alpha1.ApproveChangeAnnotation, change.ID)
	testenv.Eventually(t, 30*time.Second, func() string {
		sts := statefulSet(t, cl.client, "mariadb")
		if got := sts.Spec.Template.Annotations[mariadb.InjectionAnnotation()]; got != change.ConfigHash {
			return fmt.Sprintf("the approved change is not written yet: hash %s, want %s", got, change.ConfigHash)
		}
		return conditionIs(scratchVolume(t, cl.client, "mariadb"), v1alpha1.ConditionChangesPending, metav1.ConditionFalse, v1alpha1.ReasonNoPendingChanges)
	})
	if w := writes.Of("statefulsets", fleetNamespace); w["mariadb"] != 1 || len(w) != 1 {
		t.Errorf("the approval should bring one write, of StatefulSet mariadb: %v", w)
	}
	expectEvent(ctx, t, cl.client, "mariadb", "approved with "+v1alpha1.ApproveChangeAnnotation+"="+change.ID)

	// A window that is not open keeps the pool waiting, and says when the next one opens.
	now := time.Now().UTC()
	tomorrow := v1alpha1.Weekday(now.AddDate(0, 0, 1).Weekday().String()[:3])
	setWindows(ctx, t, cl.client, "pool", v1alpha1.MaintenanceWindow{Days: []v1alpha1.Weekday{tomorrow}, Start: "03:00", Duration: metav1.Duration{Duration: time.Hour}})
	testenv.Eventually(t, 30*time.Second, func() string {
		return conditionIs(scratchVolume(t, cl.client, "pool"), v1alpha1.ConditionChangesPending, metav1.ConditionTrue, v1alpha1.ReasonAwaitingWindow)
	})
	if next := scratchVolume(t, cl.client, "pool").Status.Targets[0].PendingChange.NextWindow; next == nil || next.Weekday().String()[:3] != string(tomorrow) || next.Hour() != 3 {
		t.Errorf("the next window opens tomorrow at 03:00 UTC: %v", next)
	}
	if w := writes.Of("statefulsets", fleetNamespace); len(w) != 1 {
		t.Errorf("an edit of spec.changes alone is no edit of the configuration, and wrote: %v", w)
	}
	// An open one lets the change through, a StatefulSet at a time.
	open := now.Add(-time.Minute)
	setWindows(ctx, t, cl.client, "pool", v1alpha1.MaintenanceWindow{Start: open.Format("15:04"), Duration: metav1.Duration{Duration: time.Hour}})
	testenv.Eventually(t, 30*time.Second, func() string {
		return conditionIs(scratchVolume(t, cl.client, "pool"), v1alpha1.ConditionChangesPending, metav1.ConditionFalse, v1alpha1.ReasonNoPendingChanges)
	})
	w := writes.Of("statefulsets", fleetNamespace)
	for _, name := range []string{"pool-a", "pool-b", "pool-c"} {
		if w[name] != 1 {
			t.Errorf("StatefulSet %s should be written once in the window: %v", name, w)
		}
	}
	expectEvent(ctx, t, cl.client, "pool", "in the maintenance window")
}

// renderedOtherwise is rel with the configuration of the targets of the named ScratchVolumes as an
// earlier release would have rendered it: the drop-in's last line missing and another hash.
func renderedOtherwise(t *testing.T, rel *release, svs ...string) *release {
	t.Helper()
	out := *rel
	out.StatefulSets = slices.Clone(rel.StatefulSets)
	out.ConfigMaps = slices.Clone(rel.ConfigMaps)
	out.ScratchVolumes = slices.Clone(rel.ScratchVolumes)
	for i := range out.ScratchVolumes {
		sv := out.ScratchVolumes[i].DeepCopy()
		if !slices.Contains(svs, sv.Name) {
			continue
		}
		for j := range sv.Status.Targets {
			ts := &sv.Status.Targets[j]
			old := "0ld" + ts.ConfigHash[3:]
			for k := range out.StatefulSets {
				if s := &out.StatefulSets[k]; s.Name == ts.Name {
					s = s.DeepCopy()
					s.Spec.Template.Annotations[sv.InjectionAnnotation()] = old
					out.StatefulSets[k] = *s
				}
			}
			for k := range out.ConfigMaps {
				if cm := &out.ConfigMaps[k]; cm.Name == sv.ConfigMapName(ts.Name) {
					cm = cm.DeepCopy()
					for key, data := range cm.Data {
						lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
						cm.Data[key] = strings.Join(lines[:len(lines)-1], "\n") + "\n"
					}
					out.ConfigMaps[k] = *cm
				}
			}
			ts.ConfigHash = old
		}
		out.ScratchVolumes[i] = *sv
	}
	return &out
}

// removedLine is the drop-in line renderedOtherwise took from the first target of sv.
func removedLine(rel *release, sv string) string {
	for _, s := range rel.ScratchVolumes {
		if s.Name != sv {
			continue
		}
		for _, cm := range rel.ConfigMaps {
			if cm.Name == s.ConfigMapName(s.Status.Targets[0].Name) {
				for _, data := range cm.Data {
					lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
					return lines[len(lines)-1]
				}
			}
		}
	}
	return "(no drop-in)"
}

func scratchVolumes(ctx context.Context, t *testing.T, c client.Client) []v1alpha1.ScratchVolume {
	t.Helper()
	var list v1alpha1.ScratchVolumeList
	if err := c.List(ctx, &list, client.InNamespace(fleetNamespace)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func scratchVolume(t *testing.T, c client.Client, name string) v1alpha1.ScratchVolume {
	t.Helper()
	return *testenv.Get[v1alpha1.ScratchVolume](t, c, fleetNamespace, name)
}

func statefulSet(t *testing.T, c client.Client, name string) *appsv1.StatefulSet {
	t.Helper()
	return testenv.Get[appsv1.StatefulSet](t, c, fleetNamespace, name)
}

func statefulSetGenerations(ctx context.Context, t *testing.T, c client.Client) map[string]int64 {
	t.Helper()
	var list appsv1.StatefulSetList
	if err := c.List(ctx, &list, client.InNamespace(fleetNamespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, s := range list.Items {
		out[s.Name] = s.Generation
	}
	return out
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// conditionIs returns "" when sv's condition has the status and reason and describes its
// generation, else what it has.
func conditionIs(sv v1alpha1.ScratchVolume, typ string, status metav1.ConditionStatus, reason string) string {
	c := meta.FindStatusCondition(sv.Status.Conditions, typ)
	switch {
	case c == nil:
		return fmt.Sprintf("%s has no %s condition", sv.Name, typ)
	case c.Status != status || c.Reason != reason || c.ObservedGeneration != sv.Generation:
		return fmt.Sprintf("%s: %s=%s (%s, generation %d): %s; want %s (%s, generation %d)", sv.Name, typ, c.Status, c.Reason, c.ObservedGeneration, c.Message, status, reason, sv.Generation)
	}
	return ""
}

func annotate(ctx context.Context, t *testing.T, c client.Client, sv v1alpha1.ScratchVolume, key, value string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, key, value))
	if err := c.Patch(ctx, &sv, patch); err != nil {
		t.Fatal(err)
	}
}

func setWindows(ctx context.Context, t *testing.T, c client.Client, name string, windows ...v1alpha1.MaintenanceWindow) {
	t.Helper()
	sv := scratchVolume(t, c, name)
	base := sv.DeepCopy()
	sv.Spec.Changes = &v1alpha1.ChangePolicy{MaintenanceWindows: windows}
	if err := c.Patch(ctx, &sv, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// expectEvent waits for an Event about ScratchVolume sv whose note says want.
func expectEvent(ctx context.Context, t *testing.T, c client.Client, sv, want string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, func() string {
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace(fleetNamespace)); err != nil {
			t.Fatal(err)
		}
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == sv && e.Regarding.Kind == "ScratchVolume" {
				if strings.Contains(e.Note, want) {
					return ""
				}
				notes = append(notes, e.Note)
			}
		}
		return fmt.Sprintf("no Event of %s says %q: %q", sv, want, notes)
	})
}
