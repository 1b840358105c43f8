package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// TestReappliesByOtherManagersSettle re-applies the StatefulSet of an injected database the ways
// people and GitOps tools do: kubectl's client-side apply of the unchanged and of an edited
// manifest, then a forced server-side apply by another field manager (Argo CD with
// --server-side --force-conflicts), twice. Each must keep the injection, change the generation only
// when the manifest changed, and settle: a fight between the two managers would never stop writing.
// The controller itself must not write at all, which its managedFields entry proves.
func TestReappliesByOtherManagersSettle(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	manifest := s.sample(statefulSetSample)
	sts := s.applyStatefulSet(t, ns, manifest)
	sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))
	s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	s.waitRolledOut(t, ns, sts.Name, runsScratchVolume(sv))
	prev := s.settle(t, ns, sts.Name)
	ours := ownEntries(prev)
	if ours == "" {
		t.Fatalf("the controller owns no fields of the injected StatefulSet; managers: %s", managers(prev))
	}

	edited := writeStatefulSet(t, "edited.yaml", withExtraArg(t, manifest, "--max-connections=500"))
	ssa := []string{"apply", "-n", ns, "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", manifest}
	for _, step := range []struct {
		name    string
		kubectl []string
		// generations is how much the step moves the generation: one for a changed manifest.
		generations int64
	}{
		{"kubectl apply of the unchanged manifest", []string{"apply", "-n", ns, "-f", manifest}, 0},
		{"kubectl apply of an edited manifest", []string{"apply", "-n", ns, "-f", edited}, 1},
		{"forced server-side apply of the original by another manager", ssa, 1},
		{"the same forced server-side apply again", ssa, 0},
	} {
		s.kubectl(t, step.kubectl...)
		cur := s.settle(t, ns, sts.Name)
		if cur.Generation != prev.Generation+step.generations {
			t.Errorf("%s: generation %d -> %d, want +%d; managers: %s", step.name, prev.Generation, cur.Generation, step.generations, managers(cur))
		}
		if got := ownEntries(cur); got != ours {
			t.Errorf("%s: the controller wrote to the StatefulSet; its entries went from\n%s\nto\n%s", step.name, ours, got)
		}
		assertInjectedOnce(t, &cur.Spec.Template, sv)
		s.waitRolledOut(t, ns, sts.Name, runsScratchVolume(sv))
		s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
		prev = cur
	}
}

// withExtraArg returns the manifest with one more argument to its first container, an edit that
// rolls the pods.
func withExtraArg(t *testing.T, path, arg string) *appsv1.StatefulSet {
	t.Helper()
	sts := readManifest[appsv1.StatefulSet](t, path)
	c := &sts.Spec.Template.Spec.Containers[0]
	c.Args = append(c.Args, arg)
	return sts
}

// TestReplaceLoopIsNotFought replaces the StatefulSet with its manifest every two seconds, as a CI
// job or an Update-based operator does, which removes the injection each time. The manager, a
// separate process with the product's default rule, restores it at most 3 times, then stops
// writing with FightingAnotherWriter, and the StatefulSet's generation stays put while the
// replaces go on.
func TestReplaceLoopIsNotFought(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	manifest := s.sample(statefulSetSample)
	sts := s.applyStatefulSet(t, ns, manifest)
	sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))
	s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionInjected, metav1.ConditionTrue)
	replace := func() {
		// kubectl replace reads the current resourceVersion and sends it with the object: a write
		// in between (the manager's restore, the StatefulSet controller's status) makes it a
		// conflict, which such a loop meets and tries again.
		args := []string{"replace", "-n", ns, "--field-manager=other-operator", "-f", manifest}
		for attempt := 1; ; attempt++ {
			out, err := s.runKubectl(t.Context(), args...)
			if err == nil {
				t.Logf("kubectl %s\n%s", strings.Join(args, " "), bytes.TrimSpace(out))
				break
			}
			if attempt == 5 || !strings.Contains(string(out), "(Conflict)") {
				t.Fatal(err)
			}
			t.Logf("kubectl replace met a conflict (attempt %d), trying again", attempt)
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
	}
	eventually(t, "the controller to stop restoring", func() (bool, string) {
		replace()
		c := meta.FindStatusCondition(s.scratchVolume(t, ns, sv.Name).Status.Conditions, v1alpha1.ConditionInjected)
		if c == nil {
			return false, "no Injected condition"
		}
		return c.Reason == v1alpha1.ReasonFightingAnotherWriter, c.Reason + ": " + c.Message
	})
	held := s.scratchVolume(t, ns, sv.Name)
	if n := len(held.Status.Targets[0].Restores); n > 3 {
		t.Errorf("%d restores before the controller stopped, want at most 3", n)
	}
	if war := held.Status.Targets[0].WriteWar; war == nil || len(war.Candidates) == 0 {
		t.Errorf("status.targets[0].writeWar = %+v, want the other field managers named", war)
	}
	generation := s.statefulSet(t, ns, sts.Name).Generation
	for range 3 {
		replace()
	}
	if g := s.statefulSet(t, ns, sts.Name).Generation; g != generation {
		t.Errorf("the StatefulSet's generation moved from %d to %d while the controller held off", generation, g)
	}
	s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionFalse)
}
