package gitops

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/jsondiff"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

const (
	// repository is the Git repository the Kustomization applies.
	repository = "testdata/repository"
	// intervals is how many reconcile intervals the engine runs once everything is injected and
	// rolled out, and interval how long one lasts (kustomize-controller's are minutes long: what
	// counts is that every one of them finds nothing to do).
	intervals = 20
	interval  = time.Second
	// settleTimeout bounds the first injection and rollout of every StatefulSet, one at a time.
	settleTimeout = 4 * time.Minute
)

// injections is what each StatefulSet of the repository must get: its ScratchVolume and the
// injection that ScratchVolume renders for its image.
var injections = map[string]struct {
	scratchVolume string
	injection     v1alpha1.InjectionMode
}{
	"mysql":                 {"ram", v1alpha1.InjectionConfigFile},
	"mariadb":               {"ram", v1alpha1.InjectionConfigFile},
	"bitnami-mysql":         {"ram", v1alpha1.InjectionExtraFlags},
	"bitnami-mariadb-flags": {"ram", v1alpha1.InjectionExtraFlags},
	"bitnami-mariadb-conf":  {"ram-include", v1alpha1.InjectionConfigFile},
}

// TestFluxEngineAndControllerLeaveEachOtherAlone applies the repository with Flux's engine, lets
// the controller inject every StatefulSet, then runs reconcile intervals: in each, the engine's
// drift detection finds nothing and its apply sends nothing, no StatefulSet's generation moves,
// the controller writes nothing and every ScratchVolume stays Ready. Each change of one StatefulSet
// in the repository then rolls it exactly once, and the intervals after it are as quiet.
func TestFluxEngineAndControllerLeaveEachOtherAlone(t *testing.T) {
	s := requireSuite(t)
	ns := s.namespace(t)
	repo, err := LoadRepository(repository, ns)
	if err != nil {
		t.Fatal(err)
	}
	flux, err := NewEngine(s.cfg, []jsondiff.IgnoreRule{extraFlagsRule(t, repo, "bitnami-mariadb-flags", "MARIADB_EXTRA_FLAGS")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cs := reconcile(t, flux, repo)
	if n := count(cs, ssa.CreatedAction); n != len(repo) {
		t.Fatalf("the first interval created %d of %d objects:\n%s", n, len(repo), cs)
	}
	s.waitSettled(t, ns)
	s.checkInjections(t, ns)
	base := s.observe(t, ns, flux)
	t.Logf("injected and rolled out in %s; the engine wrote %d times, the controller %v",
		time.Since(start).Round(time.Second), base.engineWrites, base.controllerWrites)

	s.quietIntervals(t, ns, flux, repo, intervals)
	s.expectUnchanged(t, ns, base, s.observe(t, ns, flux))
	t.Logf("%d reconcile intervals: no drift, no write of the engine or the controller, every ScratchVolume Ready", intervals)

	// Without the drift ignore rule the engine sees the flags the controller added to the
	// repository's MARIADB_EXTRA_FLAGS, and nothing else, as drift.
	plain, err := NewEngine(s.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	drift, err := plain.Drift(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	flagsSubject := "StatefulSet/" + ns + "/bitnami-mariadb-flags"
	if got := slices.Sorted(maps.Keys(drift)); !slices.Equal(got, []string{flagsSubject}) || !strings.Contains(drift[flagsSubject], "--tmpdir=") {
		t.Errorf("without the ignore rule the engine reports drift on %v, want on %s's extra flags alone:\n%v", got, flagsSubject, drift)
	}

	for i := range repositoryChanges {
		s.changeOneStatefulSet(t, ns, flux, repo, i)
	}
}

// repositoryChanges are edits of one StatefulSet each, the kind a repository sees every week: a
// server setting, and a chart upgrade's new resources on a Bitnami StatefulSet without and with
// the extra-flags variable in the repository. None touches what a ScratchVolume's plan depends on.
var repositoryChanges = []struct {
	statefulSet string
	what        string
	edit        func(container map[string]any)
}{
	{"mysql", "one more connection allowed", func(c map[string]any) { c["args"] = []any{"--max-connections=400"} }},
	{"bitnami-mysql", "a larger CPU request", func(c map[string]any) { setCPU(c, "500m") }},
	{"bitnami-mariadb-flags", "a larger CPU request", func(c map[string]any) { setCPU(c, "500m") }},
}

func setCPU(c map[string]any, cpu string) {
	c["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] = cpu
}

// changeOneStatefulSet makes a change of repositoryChanges in the repository and checks the roll
// that follows: one engine write, one new generation and one new revision of the pod template, no
// write of the controller to the StatefulSet (the design allows one re-injection, for an edit that
// changes the plan), the injection still there, every ScratchVolume Ready again, then quiet
// intervals.
func (s *suite) changeOneStatefulSet(t *testing.T, ns string, flux *Engine, repo []*unstructured.Unstructured, i int) {
	t.Helper()
	change := repositoryChanges[i]
	name := change.statefulSet
	sts := find(t, repo, "StatefulSet", name)
	containers, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "containers")
	change.edit(containers[0].(map[string]any))
	if err := unstructured.SetNestedSlice(sts.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	before := s.observe(t, ns, flux)
	revisions := s.revisions(t, ns, name)
	cs := reconcile(t, flux, repo)
	if configured := entries(cs, ssa.ConfiguredAction); !slices.Equal(configured, []string{"StatefulSet/" + ns + "/" + name}) {
		t.Fatalf("the engine configured %v after the repository changed StatefulSet %s alone:\n%s", configured, name, cs)
	}
	s.waitSettled(t, ns)
	after := s.observe(t, ns, flux)
	key := "statefulsets/" + name
	if d := after.generations[name] - before.generations[name]; d != 1 {
		t.Errorf("%s: the generation moved by %d, want 1", name, d)
	}
	if d := after.controllerWrites[key] - before.controllerWrites[key]; d > 1 {
		t.Errorf("%s: the controller wrote %d times to the changed StatefulSet, at most one re-injection is allowed", name, d)
	}
	if got := s.revisions(t, ns, name); len(got) != len(revisions)+1 {
		t.Errorf("%s: the change made %d new pod-template revisions, want exactly 1 roll (before %v, after %v)",
			name, len(got)-len(revisions), revisions, got)
	}
	if d := after.engineWrites - before.engineWrites; d != 1 {
		t.Errorf("%s: the engine wrote %d times to apply the change, want 1", name, d)
	}
	for other, g := range before.generations {
		if other != name && after.generations[other] != g {
			t.Errorf("StatefulSet %s went from generation %d to %d, though the repository changed %s", other, g, after.generations[other], name)
		}
	}
	s.checkInjections(t, ns)
	t.Logf("%s, %s: %d engine write, generation %d to %d, %d controller writes to it, pod-template revisions %d to %d",
		name, change.what, after.engineWrites-before.engineWrites, before.generations[name], after.generations[name],
		after.controllerWrites[key]-before.controllerWrites[key], len(revisions), len(s.revisions(t, ns, name)))
	s.quietIntervals(t, ns, flux, repo, intervals/4)
	s.expectUnchanged(t, ns, after, s.observe(t, ns, flux))
}

// quietIntervals runs n reconcile intervals, each of which must find no drift, apply nothing and
// find every ScratchVolume Ready.
func (s *suite) quietIntervals(t *testing.T, ns string, flux *Engine, repo []*unstructured.Unstructured, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		drift, err := flux.Drift(t.Context(), repo)
		if err != nil {
			t.Fatal(err)
		}
		for subject, d := range drift {
			t.Errorf("interval %d: the engine reports drift on %s: %s", i, subject, d)
		}
		cs := reconcile(t, flux, repo)
		if n := count(cs, ssa.UnchangedAction); n != len(repo) {
			t.Errorf("interval %d: the engine changed %d objects:\n%s", i, len(repo)-n, cs)
		}
		for _, sv := range scratchVolumes(repo) {
			if why := s.ready(t, ns, sv); why != "" {
				t.Errorf("interval %d: %s", i, why)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		time.Sleep(interval)
	}
}

// observation is what must not move while nothing changes in the repository.
type observation struct {
	generations map[string]int64
	// controllerWrites counts the controller's writes in the namespace, by "resource/name"
	// ("scratchvolumes/ram/status" for a status write).
	controllerWrites map[string]int
	engineWrites     int64
}

func (s *suite) observe(t *testing.T, ns string, flux *Engine) observation {
	t.Helper()
	o := observation{generations: map[string]int64{}, controllerWrites: map[string]int{}, engineWrites: flux.Writes()}
	for name := range injections {
		o.generations[name] = testenv.Get[appsv1.StatefulSet](t, s.admin, ns, name).Generation
	}
	for _, resource := range []string{"statefulsets", "configmaps", "scratchvolumes"} {
		for name, n := range s.manager.Writes.Of(resource, ns) {
			o.controllerWrites[resource+"/"+name] = n
		}
	}
	return o
}

// expectUnchanged fails t when a generation, a controller write count or the engine's write count
// moved between before and after.
func (s *suite) expectUnchanged(t *testing.T, ns string, before, after observation) {
	t.Helper()
	for name, g := range before.generations {
		if after.generations[name] != g {
			t.Errorf("StatefulSet %s/%s went from generation %d to %d", ns, name, g, after.generations[name])
		}
	}
	for key := range merged(before.controllerWrites, after.controllerWrites) {
		if a, b := before.controllerWrites[key], after.controllerWrites[key]; a != b {
			t.Errorf("the controller wrote %d times to %s during the intervals", b-a, key)
		}
	}
	if d := after.engineWrites - before.engineWrites; d != 0 {
		t.Errorf("the engine wrote %d times during the intervals", d)
	}
}

func merged(a, b map[string]int) map[string]int {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// waitSettled waits until every ScratchVolume is Ready and every StatefulSet carries its injection
// and has rolled out its current generation.
func (s *suite) waitSettled(t *testing.T, ns string) {
	t.Helper()
	testenv.Eventually(t, settleTimeout, func() string {
		for name, want := range injections {
			sts := testenv.Get[appsv1.StatefulSet](t, s.admin, ns, name)
			if why := rolledOut(sts, want.scratchVolume); why != "" {
				return why
			}
		}
		for _, sv := range []string{"ram", "ram-include"} {
			if why := s.ready(t, ns, sv); why != "" {
				return why
			}
		}
		return ""
	})
}

func rolledOut(sts *appsv1.StatefulSet, scratchVolume string) string {
	key := v1alpha1.InjectionAnnotationPrefix + scratchVolume
	st := sts.Status
	switch {
	case sts.Spec.Template.Annotations[key] == "":
		return fmt.Sprintf("StatefulSet %s has no %s annotation yet", sts.Name, key)
	case st.ObservedGeneration != sts.Generation:
		return fmt.Sprintf("StatefulSet %s: generation %d not observed yet (%d)", sts.Name, sts.Generation, st.ObservedGeneration)
	case st.UpdatedReplicas != *sts.Spec.Replicas || st.ReadyReplicas != *sts.Spec.Replicas || st.CurrentRevision != st.UpdateRevision:
		return fmt.Sprintf("StatefulSet %s rolls out: %d updated, %d ready of %d, revision %s to %s",
			sts.Name, st.UpdatedReplicas, st.ReadyReplicas, *sts.Spec.Replicas, st.CurrentRevision, st.UpdateRevision)
	}
	return ""
}

// ready says why the ScratchVolume is not Ready, "" when it is.
func (s *suite) ready(t *testing.T, ns, name string) string {
	t.Helper()
	sv := testenv.Get[v1alpha1.ScratchVolume](t, s.admin, ns, name)
	c := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case c == nil:
		return fmt.Sprintf("ScratchVolume %s has no Ready condition", name)
	case c.Status != metav1.ConditionTrue || c.ObservedGeneration != sv.Generation:
		return fmt.Sprintf("ScratchVolume %s is not Ready: %s: %s", name, c.Reason, c.Message)
	}
	return ""
}

// checkInjections checks that each StatefulSet got the injection the test says it has, so that
// the intervals prove what the test claims for each kind of image; only, when given, limits the
// check to those StatefulSets (and their ScratchVolumes).
func (s *suite) checkInjections(t *testing.T, ns string, only ...string) {
	t.Helper()
	checked := func(name string) bool { return len(only) == 0 || slices.Contains(only, name) }
	got := map[string]v1alpha1.InjectionMode{}
	for name, want := range injections {
		if !checked(name) {
			continue
		}
		for _, target := range testenv.Get[v1alpha1.ScratchVolume](t, s.admin, ns, want.scratchVolume).Status.Targets {
			got[target.Name] = target.Injection
		}
	}
	for name, want := range injections {
		if checked(name) && got[name] != want.injection {
			t.Errorf("StatefulSet %s got injection %q, want %q", name, got[name], want.injection)
		}
	}
	if checked("bitnami-mariadb-conf") {
		conf := testenv.Get[appsv1.StatefulSet](t, s.admin, ns, "bitnami-mariadb-conf")
		if !mounts(conf, "mariadb", "/opt/bitnami/mariadb/conf/bitnami/zz-dbtune-scratch.cnf") {
			t.Errorf("bitnami-mariadb-conf has no drop-in in the directory its my.cnf includes: %+v", conf.Spec.Template.Spec.Containers[0].VolumeMounts)
		}
	}
	if checked("bitnami-mysql") {
		bitnami := testenv.Get[appsv1.StatefulSet](t, s.admin, ns, "bitnami-mysql")
		if v := envValue(bitnami, "mysql", "MYSQL_EXTRA_FLAGS"); !strings.HasPrefix(v, "--tmpdir=") {
			t.Errorf("bitnami-mysql's MYSQL_EXTRA_FLAGS is %q, want the ScratchVolume's flags", v)
		}
	}
	if checked("bitnami-mariadb-flags") {
		flags := testenv.Get[appsv1.StatefulSet](t, s.admin, ns, "bitnami-mariadb-flags")
		if v := envValue(flags, "mariadb", "MARIADB_EXTRA_FLAGS"); !strings.HasPrefix(v, "--max-connections=200 --log-bin=mysql-bin --tmpdir=") {
			t.Errorf("bitnami-mariadb-flags's MARIADB_EXTRA_FLAGS is %q, want the repository's flags, then the ScratchVolume's", v)
		}
	}
}

func mounts(sts *appsv1.StatefulSet, container, path string) bool {
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if c.Name == container && m.MountPath == path {
				return true
			}
		}
	}
	return false
}

func envValue(sts *appsv1.StatefulSet, container, name string) string {
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if c.Name == container && e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}

// revisions lists the names of the pod-template revisions (ControllerRevisions) the StatefulSet
// controller made for a StatefulSet: one per distinct template, so one per roll.
func (s *suite) revisions(t *testing.T, ns, name string) []string {
	t.Helper()
	sts := testenv.Get[appsv1.StatefulSet](t, s.admin, ns, name)
	var list appsv1.ControllerRevisionList
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.admin.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range list.Items {
		if metav1.IsControlledBy(&r, sts) {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return out
}

// extraFlagsRule is the drift ignore rule docs/gitops.md gives for a Bitnami StatefulSet whose
// repository sets the extra-flags variable: the JSON pointer of that variable's value in the
// manifest, for the Kustomization's spec.driftIgnoreRules.
func extraFlagsRule(t *testing.T, repo []*unstructured.Unstructured, name, variable string) jsondiff.IgnoreRule {
	t.Helper()
	var sts appsv1.StatefulSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, repo, "StatefulSet", name).Object, &sts); err != nil {
		t.Fatal(err)
	}
	for i, c := range sts.Spec.Template.Spec.Containers {
		for j, e := range c.Env {
			if e.Name == variable {
				return jsondiff.IgnoreRule{
					Paths:    []string{fmt.Sprintf("/spec/template/spec/containers/%d/env/%d/value", i, j)},
					Selector: &jsondiff.Selector{Kind: "StatefulSet", Name: name},
				}
			}
		}
	}
	t.Fatalf("StatefulSet %s of the repository sets no %s", name, variable)
	return jsondiff.IgnoreRule{}
}

func reconcile(t *testing.T, flux *Engine, repo []*unstructured.Unstructured) *ssa.ChangeSet {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := flux.Reconcile(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func count(cs *ssa.ChangeSet, action ssa.Action) int { return len(entries(cs, action)) }

func entries(cs *ssa.ChangeSet, action ssa.Action) []string {
	var out []string
	for _, e := range cs.Entries {
		if e.Action == action {
			out = append(out, e.Subject)
		}
	}
	return out
}

func find(t *testing.T, repo []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range repo {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("the repository has no %s %s", kind, name)
	return nil
}

func scratchVolumes(repo []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range repo {
		if o.GetKind() == "ScratchVolume" {
			out = append(out, o.GetName())
		}
	}
	return out
}
