package gitops

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// TestRepositoryTargets checks, without a cluster, that the repository holds exactly the
// StatefulSets the engine test expects and that each one is selected by the ScratchVolume the test
// expects to inject it, and by no other: the intervals then prove what the test says for each image.
func TestRepositoryTargets(t *testing.T) {
	repo, err := LoadRepository(repository, "ns")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range repo {
		if o.GetKind() != "StatefulSet" {
			continue
		}
		names = append(names, o.GetName())
		var selecting []string
		for _, svObj := range repo {
			if svObj.GetKind() != "ScratchVolume" {
				continue
			}
			var sv v1alpha1.ScratchVolume
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(svObj.Object, &sv); err != nil {
				t.Fatal(err)
			}
			sel, err := sv.Spec.Target.Selector.AsSelector()
			if err != nil {
				t.Fatal(err)
			}
			if sel.Matches(labels.Set(o.GetLabels())) {
				selecting = append(selecting, sv.Name)
			}
		}
		if want := injections[o.GetName()].scratchVolume; !slices.Equal(selecting, []string{want}) {
			t.Errorf("StatefulSet %s is selected by %v, want %s alone", o.GetName(), selecting, want)
		}
	}
	if want := slices.Sorted(maps.Keys(injections)); !slices.Equal(slices.Sorted(slices.Values(names)), want) {
		t.Errorf("the repository's StatefulSets are %v, want %v", names, want)
	}
	if rule := extraFlagsRule(t, repo, "bitnami-mariadb-flags", "MARIADB_EXTRA_FLAGS"); rule.Paths[0] != "/spec/template/spec/containers/0/env/4/value" {
		t.Errorf("the ignore rule's pointer is %s, not the one docs/gitops.md shows", rule.Paths[0])
	}
}
