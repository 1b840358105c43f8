package fleetcache

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

func decisionFixture() (*appsv1.StatefulSet, []*v1alpha1.ScratchVolume) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "sts-1", ResourceVersion: "10", Generation: 4}}
	sv := func(name string, uid types.UID) *v1alpha1.ScratchVolume {
		return &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, Generation: 1, ResourceVersion: "7"}}
	}
	return sts, []*v1alpha1.ScratchVolume{sv("old", "sv-1"), sv("new", "sv-2")}
}

func decidedFor(svs []*v1alpha1.ScratchVolume) map[string]*decide.Outcome {
	return map[string]*decide.Outcome{
		svs[0].Name: {SV: svs[0], State: decide.Injected{Plan: &inject.Plan{
			ScratchVolume: svs[0].Name, Hash: "h0", ConfigKey: "k", ConfigData: "[mysqld]", Init: &corev1.Container{Name: "init"},
		}, Hash: "h0", Container: &corev1.Container{Name: "db", Args: []string{"--innodb-buffer-pool-size=1G"}}}},
		svs[1].Name: {SV: svs[1], State: decide.Blocked{Problem: &inject.Problem{Reason: v1alpha1.ReasonScratchVolumeConflict}, Kept: true}},
	}
}

// TestDecisionReuse checks that a decision is reused only for the very inputs it was made from:
// any change of the StatefulSet's spec or controller, of a selecting ScratchVolume's spec, or of
// which ScratchVolumes select it and in what order, plans again; a status write to either, or a
// label change of the StatefulSet, does not.
func TestDecisionReuse(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "db"}
	tests := []struct {
		name   string
		change func(sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume
		reused bool
	}{
		{"nothing changed", func(_ *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume { return svs }, true},
		{"a ScratchVolume's status was written", func(_ *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			svs[0].ResourceVersion = "8"
			return svs
		}, true},
		{"the StatefulSet's status, labels or managedFields changed", func(sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			sts.ResourceVersion = "11"
			sts.Labels = map[string]string{"touched": "yes"}
			sts.Status.ReadyReplicas = 2
			return svs
		}, true},
		{"the StatefulSet's spec changed", func(sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			sts.ResourceVersion, sts.Generation = "11", 5
			return svs
		}, false},
		{"the StatefulSet got a controller", func(sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			sts.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Cluster", Name: "c", UID: "c-1", Controller: ptr.To(true)}}
			return svs
		}, false},
		{"the StatefulSet was replaced", func(sts *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			sts.UID = "sts-2"
			return svs
		}, false},
		{"a ScratchVolume's spec changed", func(_ *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			svs[1].Generation = 2
			return svs
		}, false},
		{"a ScratchVolume was replaced", func(_ *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			svs[1].UID = "sv-3"
			return svs
		}, false},
		{"the conflict order changed", func(_ *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			return []*v1alpha1.ScratchVolume{svs[1], svs[0]}
		}, false},
		{"a ScratchVolume no longer selects it", func(_ *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			return svs[:1]
		}, false},
		{"another ScratchVolume selects it", func(_ *appsv1.StatefulSet, svs []*v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
			extra := *svs[1]
			extra.Name, extra.UID = "newer", "sv-4"
			return append(svs, &extra)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Decisions
			sts, svs := decisionFixture()
			decided := decidedFor(svs)
			s.Remember(key, InputsOf(sts, svs, ""), decided)
			svs = tt.change(sts, svs)
			got, ok := s.Reuse(key, InputsOf(sts, svs, ""), svs)
			if ok != tt.reused {
				t.Fatalf("reused = %v, want %v", ok, tt.reused)
			}
			if !ok {
				return
			}
			for i := range svs {
				o := got[svs[i].Name]
				if o == nil || o.SV != svs[i] {
					t.Fatalf("outcome of %s does not carry the ScratchVolume read now", svs[i].Name)
				}
				want := decided[svs[i].Name]
				switch w := want.State.(type) {
				case decide.Injected:
					s, ok := o.Injecting()
					if !ok || !reflect.DeepEqual(s.Container, w.Container) {
						t.Errorf("outcome of %s = %+v, want %+v", svs[i].Name, o.State, w)
					} else if s.Hash != w.Hash || s.Plan.ConfigData != w.Plan.ConfigData || s.Plan.Init != nil {
						t.Errorf("plan of %s kept as %+v: want its hash and drop-in, not the entries to write", svs[i].Name, *s.Plan)
					}
				case decide.Blocked:
					if s, ok := o.State.(decide.Blocked); !ok || s.Problem != w.Problem || s.Kept != w.Kept {
						t.Errorf("outcome of %s = %+v, want %+v", svs[i].Name, o.State, w)
					}
				}
				if o == want {
					t.Errorf("outcome of %s is the remembered one, which concurrent syncs would share", svs[i].Name)
				}
			}
		})
	}
}

// TestDecisionForgetting checks that decisions go with their StatefulSet and their ScratchVolumes,
// and that the store stays bounded.
func TestDecisionForgetting(t *testing.T) {
	sts, svs := decisionFixture()
	in := InputsOf(sts, svs, "")
	var s Decisions
	db, other := types.NamespacedName{Namespace: "ns", Name: "db"}, types.NamespacedName{Namespace: "ns", Name: "other"}
	elsewhere := types.NamespacedName{Namespace: "ns2", Name: "db"}
	for _, k := range []types.NamespacedName{db, other, elsewhere} {
		s.Remember(k, in, decidedFor(svs))
	}
	s.Forget(other)
	if _, ok := s.Reuse(other, in, svs); ok {
		t.Error("the decision on a deleted StatefulSet was kept")
	}
	s.ForgetScratchVolume(types.NamespacedName{Namespace: "ns", Name: "new"})
	if _, ok := s.Reuse(db, in, svs); ok {
		t.Error("a decision a deleted ScratchVolume took part in was kept")
	}
	if _, ok := s.Reuse(elsewhere, in, svs); !ok {
		t.Error("a ScratchVolume of the same name in another namespace took a decision with it")
	}

	for i := range maxDecisions + 10 {
		s.Remember(types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("sts-", i)}, in, decidedFor(svs))
	}
	if n := s.Len(); n != maxDecisions {
		t.Errorf("%d decisions kept, want the bound %d", n, maxDecisions)
	}
}

// TestRememberedPlansAreShared checks that targets planned alike but for their hash and the name
// of their drop-in volume hold one settled plan, handed out as it is, that each gets its own hash
// back, and that a different drop-in file stays its own.
func TestRememberedPlansAreShared(t *testing.T) {
	plan := func(target, hash, data string) *inject.Plan {
		// Built at run time, as planning builds them: two equal contents start as two strings.
		return &inject.Plan{ScratchVolume: "tmp", Container: "db", Hash: hash, ConfigKey: "dbtune.cnf", ConfigData: strings.Clone(data),
			ConfigVolume: &corev1.Volume{Name: "tmp-" + target}, Locations: []v1alpha1.TempLocation{{Data: v1alpha1.TempDataTmpdir}}}
	}
	svs := []*v1alpha1.ScratchVolume{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tmp", UID: "sv-1", Generation: 1}}}
	sts := func(name string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Generation: 1}}
	}
	var s Decisions
	plans := map[string]*inject.Plan{
		"a": plan("a", "ha", "[mysqld]\ntmpdir=/var/lib/mysql-tmp\n"),
		"b": plan("b", "hb", "[mysqld]\ntmpdir=/var/lib/mysql-tmp\n"),
		"c": plan("c", "hc", "[mysqld]\ntmpdir=/tmp/ram\n"),
	}
	for name, p := range plans {
		s.Remember(types.NamespacedName{Namespace: "ns", Name: name}, InputsOf(sts(name), svs, ""), map[string]*decide.Outcome{"tmp": {State: decide.Injected{Plan: p, Hash: p.Hash}}})
	}
	kept := func(name string) *inject.Plan {
		return s.decisions[types.NamespacedName{Namespace: "ns", Name: name}].states[0].(decide.Injected).Plan
	}
	if kept("a") != kept("b") {
		t.Error("two targets planned alike hold two settled plans")
	}
	if kept("a") == kept("c") || kept("c").ConfigData != "[mysqld]\ntmpdir=/tmp/ram\n" {
		t.Errorf("a different drop-in file was not kept as it is: %q", kept("c").ConfigData)
	}
	for name, want := range plans {
		got, ok := s.Reuse(types.NamespacedName{Namespace: "ns", Name: name}, InputsOf(sts(name), svs, ""), svs)
		if !ok {
			t.Fatalf("%s: no decision", name)
		}
		o, ok := got["tmp"].Injecting()
		if !ok {
			t.Fatalf("%s: reused as %T, want Injected", name, got["tmp"].State)
		}
		if p := o.Plan; o.Hash != want.Hash || p.ConfigVolume == nil || p.ConfigData != want.ConfigData || len(p.Locations) != 1 {
			t.Errorf("%s: reused hash %s and plan %+v, want the hash %s, a drop-in volume and file, the locations", name, o.Hash, *p, want.Hash)
		}
		if o.Plan != kept(name) || o.Plan.Hash != "" {
			t.Errorf("%s: the reused plan is a copy, or the shared one carries a target's hash (%q)", name, o.Plan.Hash)
		}
	}
}

// TestSettledOutcomesShareContainers checks that the outcomes a reconcile holds until its status is
// written share their settled plans and their planned containers with the other targets planned
// alike, and that a different container stays its own.
func TestSettledOutcomesShareContainers(t *testing.T) {
	container := func(args ...string) *corev1.Container {
		// Built at run time, as planning builds them: two equal containers start as two values.
		return &corev1.Container{Name: "db", Args: append([]string(nil), args...)}
	}
	outcome := func(target string, c *corev1.Container) *decide.Outcome {
		p := &inject.Plan{ScratchVolume: "tmp", Container: "db", Hash: "h-" + target, ConfigKey: "dbtune.cnf",
			ConfigData: strings.Clone("[mysqld]\ntmpdir=/var/lib/mysql-tmp\n"), Init: &corev1.Container{Name: "init"}}
		return &decide.Outcome{State: decide.Injected{Plan: p, Hash: p.Hash, Container: c}}
	}
	a := SettledOutcomes(map[string]*decide.Outcome{"tmp": outcome("a", container("--tmpdir=/var/lib/mysql-tmp"))})["tmp"].State.(decide.Injected)
	b := SettledOutcomes(map[string]*decide.Outcome{"tmp": outcome("b", container("--tmpdir=/var/lib/mysql-tmp"))})["tmp"].State.(decide.Injected)
	c := SettledOutcomes(map[string]*decide.Outcome{"tmp": outcome("c", container("--tmpdir=/tmp/ram"))})["tmp"].State.(decide.Injected)
	if a.Container != b.Container || a.Plan != b.Plan {
		t.Error("two targets planned alike hold two containers or two settled plans until the status is written")
	}
	if a.Container == c.Container || c.Container.Args[0] != "--tmpdir=/tmp/ram" {
		t.Errorf("a different container was not kept as it is: %+v", c.Container)
	}
	if a.Hash != "h-a" || b.Hash != "h-b" || a.Plan.Init != nil {
		t.Errorf("settled outcomes lost their own hashes (%s, %s) or kept the entries to write", a.Hash, b.Hash)
	}
}
