package e2e

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestInjectionRollsPodsOntoTheNewTemplate applies the MariaDB sample and then its ScratchVolume
// with kubectl, and follows the change down to the pods: the StatefulSet gets the injection once,
// in one write, and the StatefulSet controller replaces every pod with one that has the RAM volume.
func TestInjectionRollsPodsOntoTheNewTemplate(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	before := s.applyStatefulSet(t, ns, s.sample(statefulSetSample))
	sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))

	sv = s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	sts := s.waitRolledOut(t, ns, before.Name, runsScratchVolume(sv))
	assertInjectedOnce(t, &sts.Spec.Template, sv)
	if sts.Generation != before.Generation+1 {
		t.Errorf("the injection took the StatefulSet from generation %d to %d; want one write", before.Generation, sts.Generation)
	}
	if len(sv.Status.Targets) != 1 || sv.Status.InjectedTargets != 1 || sv.Status.Targets[0].UpdatedReplicas != replicas(sts) {
		t.Errorf("the status does not report one injected, rolled-out target: %+v", sv.Status)
	}
	cm := testenv.Get[corev1.ConfigMap](t, s.admin, ns, sv.ConfigMapName(sts.Name))
	if data := cm.Data[mysql.DropInFileName]; !strings.Contains(data, "tmpdir") || !strings.Contains(data, sv.EffectiveMountPath()) {
		t.Errorf("the drop-in ConfigMap does not point tmpdir at %s:\n%s", sv.EffectiveMountPath(), data)
	}
}

// TestDeletionRevertsToTheOriginalTemplate deletes an injected ScratchVolume: the finalizer holds it
// until the StatefulSet is back to the template it had before, in one write, and the pods roll back.
func TestDeletionRevertsToTheOriginalTemplate(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	original := s.applyStatefulSet(t, ns, s.sample(statefulSetSample))
	sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))
	s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	injected := s.waitRolledOut(t, ns, original.Name, runsScratchVolume(sv))

	s.kubectl(t, "delete", "-n", ns, "scratchvolume", sv.Name, "--wait=true", "--timeout=60s")
	reverted := s.waitRolledOut(t, ns, original.Name, lacksScratchVolume(sv))
	assertReverted(t, original, reverted)
	if reverted.Generation != injected.Generation+1 {
		t.Errorf("the revert took the StatefulSet from generation %d to %d; want one write", injected.Generation, reverted.Generation)
	}
	if err := s.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: sv.ConfigMapName(original.Name)}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the drop-in ConfigMap %s outlived its ScratchVolume (get: %v)", sv.ConfigMapName(original.Name), err)
	}
	if settled := s.settle(t, ns, original.Name); settled.Generation != reverted.Generation {
		t.Errorf("the StatefulSet kept changing after the revert: generation %d, then %d", reverted.Generation, settled.Generation)
	}
}

// assertReverted compares the pod templates before the injection and after the revert.
func assertReverted(t *testing.T, original, reverted *appsv1.StatefulSet) {
	t.Helper()
	if !equality.Semantic.DeepEqual(original.Spec.Template, reverted.Spec.Template) {
		t.Errorf("the revert did not restore the original pod template (-original +reverted):\n%s",
			cmp.Diff(original.Spec.Template, reverted.Spec.Template))
	}
}

// TestSelectorTunesAStatefulSetCreatedLater applies the fleet sample, which selects by label (and
// reserves the volume's memory), before any StatefulSet matches it. A StatefulSet the selector
// excludes stays untouched; one created afterwards is tuned and is restored exactly when the
// ScratchVolume goes.
func TestSelectorTunesAStatefulSetCreatedLater(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	sv := s.applyScratchVolume(t, ns, s.sample(selectorSample))
	if sv.Spec.Target.Selector == nil {
		t.Fatalf("%s no longer selects by label", selectorSample)
	}
	s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionTargetFound, metav1.ConditionFalse)

	// The MariaDB sample carries the fleet label but its name is excluded by the selector.
	excluded := s.applyStatefulSet(t, ns, s.sample(statefulSetSample))

	manifest := fleetMember(t, s.sample(statefulSetSample), "orders")
	original := manifest.DeepCopy()
	original.Namespace = ns
	// A server-side dry run returns the template with the API server's defaults, as it will be
	// stored, before the controller can touch it.
	if err := s.admin.Create(t.Context(), original, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	s.kubectl(t, "apply", "-n", ns, "-f", writeStatefulSet(t, "orders.yaml", manifest))

	sv = s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	if sv.Status.InjectedTargets != 1 {
		t.Errorf("%d StatefulSets injected, want 1 (orders)", sv.Status.InjectedTargets)
	}
	sts := s.waitRolledOut(t, ns, "orders", runsScratchVolume(sv))
	assertInjectedOnce(t, &sts.Spec.Template, sv)
	assertMemory(t, original, sts, sv)
	if after := s.statefulSet(t, ns, excluded.Name); after.Generation != excluded.Generation || ownEntries(after) != "" {
		t.Errorf("the StatefulSet the selector excludes was changed: generation %d -> %d; managers: %s",
			excluded.Generation, after.Generation, managers(after))
	}

	s.kubectl(t, "delete", "-n", ns, "scratchvolume", sv.Name, "--wait=true", "--timeout=60s")
	assertReverted(t, original, s.waitRolledOut(t, ns, "orders", lacksScratchVolume(sv)))
}

// fleetMember turns the MariaDB sample into another database of the fleet: same labels for the
// selector, another name.
func fleetMember(t *testing.T, path, name string) *appsv1.StatefulSet {
	t.Helper()
	sts := readManifest[appsv1.StatefulSet](t, path)
	sts.Name, sts.Spec.ServiceName = name, name
	for _, labels := range []map[string]string{sts.Labels, sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels} {
		labels["app.kubernetes.io/name"] = name
	}
	return sts
}

// assertMemory checks the memory accounting: with Reserve the database container's memory request
// and limit grow by the volume's size, otherwise they stay as they were.
func assertMemory(t *testing.T, original, sts *appsv1.StatefulSet, sv *v1alpha1.ScratchVolume) {
	t.Helper()
	added := resource.Quantity{}
	if sv.Spec.Memory.Accounting == v1alpha1.MemoryReserve {
		added = sv.Spec.Size
	}
	name := sv.Status.Targets[0].Container
	before, after := findContainer(original.Spec.Template.Spec.Containers, name), findContainer(sts.Spec.Template.Spec.Containers, name)
	if before == nil || after == nil {
		t.Fatalf("container %s not found in StatefulSet %s", name, sts.Name)
	}
	for _, res := range []struct {
		what          string
		before, after corev1.ResourceList
	}{{"request", before.Resources.Requests, after.Resources.Requests}, {"limit", before.Resources.Limits, after.Resources.Limits}} {
		want := res.before.Memory().DeepCopy()
		want.Add(added)
		if got := res.after.Memory(); got.Cmp(want) != 0 {
			t.Errorf("container %s has a memory %s of %s, want %s + %s (accounting %s)", name, res.what, got.String(),
				res.before.Memory().String(), added.String(), sv.Spec.Memory.Accounting)
		}
	}
}
