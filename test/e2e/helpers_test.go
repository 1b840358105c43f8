package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// Samples the tests apply, as a user would.
const (
	statefulSetSample   = "mariadb-statefulset.yaml"
	scratchVolumeSample = "dbtune_v1alpha1_scratchvolume.yaml"
	selectorSample      = "dbtune_v1alpha1_scratchvolume_selector.yaml"
)

const (
	// waitTimeout bounds each wait on the cluster. A rollout takes seconds; a restarted manager
	// first waits out the 15 s lease of the one it replaces.
	waitTimeout = 90 * time.Second
	// quietPeriod is how long a StatefulSet must stay unchanged to count as settled.
	quietPeriod = 5 * time.Second
)

func (s *suite) sample(name string) string { return filepath.Join(s.root, "config", "samples", name) }

// readManifest decodes a one-object YAML file.
func readManifest[T any](t *testing.T, path string) *T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := new(T)
	if err := yaml.Unmarshal(data, obj); err != nil {
		t.Fatalf("failed to read %s: %v", path, err)
	}
	return obj
}

// writeStatefulSet writes sts as a manifest into t's temporary directory and returns the path. The
// fields a user never writes (status, creation timestamps) are left out, so that kubectl's
// last-applied annotation holds only what a manifest in Git would.
func writeStatefulSet(t *testing.T, name string, sts *appsv1.StatefulSet) string {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sts)
	if err != nil {
		t.Fatal(err)
	}
	delete(obj, "status")
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj, "spec", "template", "metadata", "creationTimestamp")
	if claims, ok, _ := unstructured.NestedSlice(obj, "spec", "volumeClaimTemplates"); ok {
		for _, c := range claims {
			if claim, ok := c.(map[string]any); ok {
				delete(claim, "status")
				unstructured.RemoveNestedField(claim, "metadata", "creationTimestamp")
			}
		}
		if err := unstructured.SetNestedSlice(obj, claims, "spec", "volumeClaimTemplates"); err != nil {
			t.Fatal(err)
		}
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// namespace creates a namespace of its own for t. It is left in place: the cluster goes away with
// the suite, and a failed test's objects are worth keeping until then.
func (s *suite) namespace(t *testing.T) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(strings.TrimPrefix(t.Name(), "Test")))
	if len(name) > 40 {
		name = name[:40]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-" + name + "-"}}
	if err := s.admin.Create(t.Context(), ns); err != nil {
		t.Fatalf("failed to create a namespace: %v", err)
	}
	return ns.Name
}

// kubectl runs kubectl as the cluster's admin and logs its output.
func (s *suite) kubectl(t *testing.T, args ...string) {
	t.Helper()
	out, err := s.runKubectl(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl %s\n%s", strings.Join(args, " "), bytes.TrimSpace(out))
}

func (s *suite) runKubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), s.cluster.KubeconfigEnv())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out.Bytes())
	}
	return out.Bytes(), nil
}

// eventually polls check until it reports true, and fails t with the last state it reported when
// waitTimeout passes first (testenv.Eventually).
func eventually(t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
		if ok, state := check(); !ok {
			return "waiting for " + what + "; last seen: " + state
		}
		return ""
	})
}

func (s *suite) statefulSet(t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	return testenv.Get[appsv1.StatefulSet](t, s.admin, ns, name)
}

func (s *suite) scratchVolume(t *testing.T, ns, name string) *v1alpha1.ScratchVolume {
	t.Helper()
	return testenv.Get[v1alpha1.ScratchVolume](t, s.admin, ns, name)
}

// applyStatefulSet applies a StatefulSet manifest with kubectl and waits until its pods run.
func (s *suite) applyStatefulSet(t *testing.T, ns, path string) *appsv1.StatefulSet {
	t.Helper()
	manifest := readManifest[appsv1.StatefulSet](t, path)
	s.kubectl(t, "apply", "-n", ns, "-f", path)
	return s.waitRolledOut(t, ns, manifest.Name, nil)
}

// applyScratchVolume applies a ScratchVolume manifest with kubectl and returns it as stored, with
// the schema's defaults.
func (s *suite) applyScratchVolume(t *testing.T, ns, path string) *v1alpha1.ScratchVolume {
	t.Helper()
	manifest := readManifest[v1alpha1.ScratchVolume](t, path)
	s.kubectl(t, "apply", "-n", ns, "-f", path)
	return s.scratchVolume(t, ns, manifest.Name)
}

// waitCondition waits until the ScratchVolume's condition has the status, for its current generation.
func (s *suite) waitCondition(t *testing.T, ns, name, condition string, status metav1.ConditionStatus) *v1alpha1.ScratchVolume {
	t.Helper()
	var sv *v1alpha1.ScratchVolume
	eventually(t, fmt.Sprintf("ScratchVolume %s/%s to be %s=%s", ns, name, condition, status), func() (bool, string) {
		sv = s.scratchVolume(t, ns, name)
		c := meta.FindStatusCondition(sv.Status.Conditions, condition)
		switch {
		case c == nil:
			return false, "no " + condition + " condition yet"
		case c.ObservedGeneration != sv.Generation:
			return false, fmt.Sprintf("%s describes generation %d, not %d", condition, c.ObservedGeneration, sv.Generation)
		}
		return c.Status == status, fmt.Sprintf("%s=%s reason %s: %s", condition, c.Status, c.Reason, c.Message)
	})
	return sv
}

// waitRolledOut waits until the StatefulSet controller has rolled every pod onto the current
// template and the pods are Running and Ready; podCheck, when given, says what else is wrong with a
// pod. It returns the StatefulSet as it then is.
func (s *suite) waitRolledOut(t *testing.T, ns, name string, podCheck func(*corev1.Pod) string) *appsv1.StatefulSet {
	t.Helper()
	var sts *appsv1.StatefulSet
	eventually(t, fmt.Sprintf("StatefulSet %s/%s to roll out", ns, name), func() (bool, string) {
		sts = &appsv1.StatefulSet{}
		if err := s.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, sts); err != nil {
			return false, err.Error()
		}
		if why := rolloutPending(sts); why != "" {
			return false, why
		}
		pods := &corev1.PodList{}
		sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.admin.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err.Error()
		}
		return podsOnRevision(sts, pods.Items, podCheck)
	})
	return sts
}

func replicas(sts *appsv1.StatefulSet) int32 {
	if sts.Spec.Replicas == nil {
		return 1
	}
	return *sts.Spec.Replicas
}

func rolloutPending(sts *appsv1.StatefulSet) string {
	want, st := replicas(sts), sts.Status
	switch {
	case st.ObservedGeneration < sts.Generation:
		return fmt.Sprintf("the StatefulSet controller has not observed generation %d yet", sts.Generation)
	case st.Replicas != want || st.UpdatedReplicas != want || st.ReadyReplicas != want:
		return fmt.Sprintf("%d pods, %d updated, %d ready, want %d", st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, want)
	case st.CurrentRevision != st.UpdateRevision:
		return fmt.Sprintf("current revision %s, update revision %s", st.CurrentRevision, st.UpdateRevision)
	}
	return ""
}

func podsOnRevision(sts *appsv1.StatefulSet, pods []corev1.Pod, podCheck func(*corev1.Pod) string) (bool, string) {
	if int32(len(pods)) != replicas(sts) {
		return false, fmt.Sprintf("%d pods, want %d", len(pods), replicas(sts))
	}
	for i := range pods {
		p := &pods[i]
		switch {
		case p.DeletionTimestamp != nil:
			return false, "pod " + p.Name + " is terminating"
		case p.Status.Phase != corev1.PodRunning || !podReady(p):
			return false, fmt.Sprintf("pod %s is %s", p.Name, p.Status.Phase)
		case p.Labels[appsv1.ControllerRevisionHashLabelKey] != sts.Status.UpdateRevision:
			return false, fmt.Sprintf("pod %s runs revision %s, not %s", p.Name, p.Labels[appsv1.ControllerRevisionHashLabelKey], sts.Status.UpdateRevision)
		}
		if podCheck != nil {
			if why := podCheck(p); why != "" {
				return false, why
			}
		}
	}
	return true, ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runsScratchVolume checks that a pod has sv's RAM volume and annotation.
func runsScratchVolume(sv *v1alpha1.ScratchVolume) func(*corev1.Pod) string {
	return func(p *corev1.Pod) string {
		v := findVolume(p.Spec.Volumes, sv.VolumeName())
		switch {
		case v == nil || v.EmptyDir == nil:
			return fmt.Sprintf("pod %s has no emptyDir %s", p.Name, sv.VolumeName())
		case v.EmptyDir.Medium != corev1.StorageMediumMemory:
			return fmt.Sprintf("pod %s has volume %s on medium %q, want Memory", p.Name, v.Name, v.EmptyDir.Medium)
		case v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Cmp(sv.Spec.Size) != 0:
			return fmt.Sprintf("pod %s has volume %s with sizeLimit %v, want %s", p.Name, v.Name, v.EmptyDir.SizeLimit, sv.Spec.Size.String())
		case p.Annotations[sv.InjectionAnnotation()] == "":
			return fmt.Sprintf("pod %s lacks the annotation %s", p.Name, sv.InjectionAnnotation())
		}
		return ""
	}
}

// lacksScratchVolume checks that a pod has nothing of sv.
func lacksScratchVolume(sv *v1alpha1.ScratchVolume) func(*corev1.Pod) string {
	return func(p *corev1.Pod) string {
		if findVolume(p.Spec.Volumes, sv.VolumeName()) != nil || p.Annotations[sv.InjectionAnnotation()] != "" {
			return fmt.Sprintf("pod %s still runs with %s", p.Name, sv.VolumeName())
		}
		return ""
	}
}

func findVolume(vols []corev1.Volume, name string) *corev1.Volume {
	for i := range vols {
		if vols[i].Name == name {
			return &vols[i]
		}
	}
	return nil
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// assertInjectedOnce checks that a pod template carries sv exactly once: one RAM volume, mounted
// once, one init container for a MySQL tmpdir, and the annotation. A repeated or half-finished
// injection fails it.
func assertInjectedOnce(t *testing.T, tmpl *corev1.PodTemplateSpec, sv *v1alpha1.ScratchVolume) {
	t.Helper()
	volumes, mounts, inits := 0, 0, 0
	for _, v := range tmpl.Spec.Volumes {
		if v.Name == sv.VolumeName() {
			volumes++
		}
	}
	for _, c := range tmpl.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == sv.VolumeName() {
				mounts++
			}
		}
	}
	for _, c := range tmpl.Spec.InitContainers {
		if c.Name == sv.InitContainerName() {
			inits++
		}
	}
	wantInits := 0
	if sv.Spec.Purpose == v1alpha1.PurposeMySQLTmpdir {
		wantInits = 1
	}
	if volumes != 1 || mounts != 1 || inits != wantInits || tmpl.Annotations[sv.InjectionAnnotation()] == "" {
		t.Errorf("want ScratchVolume %s injected exactly once (1 volume %s, 1 mount, %d init container %s, annotation %s); "+
			"got %d volumes, %d mounts, %d init containers, annotation %q",
			sv.Name, sv.VolumeName(), wantInits, sv.InitContainerName(), sv.InjectionAnnotation(),
			volumes, mounts, inits, tmpl.Annotations[sv.InjectionAnnotation()])
	}
}

// ownEntries describes what the controller's field manager owns on an object and when it last
// wrote it. It is the same string exactly when the controller has not written in between.
func ownEntries(obj client.Object) string {
	var entries []string
	for _, e := range obj.GetManagedFields() {
		if e.Manager != v1alpha1.FieldManager {
			continue
		}
		fields := ""
		if e.FieldsV1 != nil {
			fields = e.FieldsV1.GetRawString()
		}
		entries = append(entries, fmt.Sprintf("%s %s %s %s", e.Operation, e.Subresource, e.Time, fields))
	}
	sort.Strings(entries)
	return strings.Join(entries, "\n")
}

// managers lists every field manager of an object with its last write, for messages.
func managers(obj client.Object) string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, fmt.Sprintf("%s/%s@%s", e.Manager, e.Operation, e.Time.UTC().Format(time.RFC3339)))
	}
	return strings.Join(out, ", ")
}

// settle waits until the StatefulSet's generation and resourceVersion have not changed for
// quietPeriod, and returns it. A write loop between managers never gets there.
func (s *suite) settle(t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	last := s.statefulSet(t, ns, name)
	changed, changes := time.Now(), 0
	deadline := changed.Add(waitTimeout)
	for time.Since(changed) < quietPeriod {
		if time.Now().After(deadline) {
			t.Fatalf("StatefulSet %s/%s did not settle within %s: %d changes, now at generation %d, resourceVersion %s; managers: %s",
				ns, name, waitTimeout, changes, last.Generation, last.ResourceVersion, managers(last))
		}
		time.Sleep(200 * time.Millisecond)
		cur := s.statefulSet(t, ns, name)
		if cur.Generation != last.Generation || cur.ResourceVersion != last.ResourceVersion {
			changed, changes = time.Now(), changes+1
		}
		last = cur
	}
	return last
}
