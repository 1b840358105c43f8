package gitops

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/jsondiff"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestBitnamiFirstInjectionRollsOnce applies the repository's two Bitnami StatefulSets kept on
// ExtraFlags, the one whose repository leaves the extra-flags variable unset and the one that sets
// it, lets the StatefulSet controller roll them out, and only then adds their ScratchVolume: each
// first injection is one write of the controller, moves the generation by one and makes exactly
// one new pod-template revision, so the pods roll once.
func TestBitnamiFirstInjectionRollsOnce(t *testing.T) {
	s := requireSuite(t)
	ns := s.namespace(t)
	all, err := LoadRepository(repository, ns)
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{"bitnami-mysql", "bitnami-mariadb-flags"}
	repo := slices.DeleteFunc(slices.Clone(all), func(o *unstructured.Unstructured) bool { return !slices.Contains(targets, o.GetName()) })
	flux, err := NewEngine(s.cfg, []jsondiff.IgnoreRule{extraFlagsRule(t, repo, "bitnami-mariadb-flags", "MARIADB_EXTRA_FLAGS")})
	if err != nil {
		t.Fatal(err)
	}
	if cs := reconcile(t, flux, repo); count(cs, ssa.CreatedAction) != len(repo) {
		t.Fatalf("the first interval created %d of %d objects:\n%s", count(cs, ssa.CreatedAction), len(repo), cs)
	}
	testenv.Eventually(t, settleTimeout, func() string {
		for _, name := range targets {
			if why := rolledOutAsIs(testenv.Get[appsv1.StatefulSet](t, s.admin, ns, name)); why != "" {
				return why
			}
		}
		return ""
	})
	generations, revisions := map[string]int64{}, map[string][]string{}
	for _, name := range targets {
		generations[name] = testenv.Get[appsv1.StatefulSet](t, s.admin, ns, name).Generation
		revisions[name] = s.revisions(t, ns, name)
	}

	repo = append(repo, find(t, all, "ScratchVolume", "ram"))
	reconcile(t, flux, repo)
	testenv.Eventually(t, settleTimeout, func() string {
		for _, name := range targets {
			if why := rolledOut(testenv.Get[appsv1.StatefulSet](t, s.admin, ns, name), "ram"); why != "" {
				return why
			}
		}
		return s.ready(t, ns, "ram")
	})
	s.checkInjections(t, ns, targets...)
	for _, name := range targets {
		sts := testenv.Get[appsv1.StatefulSet](t, s.admin, ns, name)
		writes := s.manager.Writes.Count("statefulsets", ns, name)
		got := s.revisions(t, ns, name)
		t.Logf("%s: %d controller write, generation %d to %d, pod-template revisions %d to %d",
			name, writes, generations[name], sts.Generation, len(revisions[name]), len(got))
		if writes != 1 {
			t.Errorf("%s: the controller wrote %d times to inject it, want 1", name, writes)
		}
		if d := sts.Generation - generations[name]; d != 1 {
			t.Errorf("%s: the first injection moved the generation by %d, want 1", name, d)
		}
		if len(got) != len(revisions[name])+1 {
			t.Errorf("%s: the first injection made %d new pod-template revisions, want exactly 1 (before %v, after %v)",
				name, len(got)-len(revisions[name]), revisions[name], got)
		}
	}
	s.quietIntervals(t, ns, flux, repo, intervals/4)
}

// rolledOutAsIs says why a StatefulSet without an injection has not rolled out its current
// generation yet, "" when it has.
func rolledOutAsIs(sts *appsv1.StatefulSet) string {
	st := sts.Status
	if st.ObservedGeneration != sts.Generation || st.UpdatedReplicas != *sts.Spec.Replicas || st.ReadyReplicas != *sts.Spec.Replicas ||
		st.CurrentRevision != st.UpdateRevision {
		return fmt.Sprintf("StatefulSet %s rolls out: generation %d observed %d, %d updated, %d ready of %d, revision %s to %s",
			sts.Name, sts.Generation, st.ObservedGeneration, st.UpdatedReplicas, st.ReadyReplicas, *sts.Spec.Replicas, st.CurrentRevision, st.UpdateRevision)
	}
	return ""
}
