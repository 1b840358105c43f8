package scratchusage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pod is a pod of node, running, with the given annotations and volumes.
func pod(name, node string, annotations map[string]string, volumes ...corev1.Volume) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: node, Volumes: volumes},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func emptyDir(name string, medium corev1.StorageMedium) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}
}

func TestDiscover(t *testing.T) {
	injected := map[string]string{"scratch.dbtune.io/tmp": "hash", "state.scratch.dbtune.io/tmp": "{}"}
	ram := emptyDir("dbtune-scratch-tmp", corev1.StorageMediumMemory)
	pending := pod("pending", "node-a", injected, ram)
	pending.Status.Phase = corev1.PodPending
	pods := []corev1.Pod{
		pod("db-0", "node-a", injected, ram, emptyDir("data", "")),
		pod("two-0", "node-a", map[string]string{"scratch.dbtune.io/a": "h", "scratch.dbtune.io/b": "h"},
			emptyDir("dbtune-scratch-b", corev1.StorageMediumMemory), emptyDir("dbtune-scratch-a", corev1.StorageMediumMemory)),
		pod("elsewhere-0", "node-b", injected, ram),
		pending,
		pod("annotation-only-0", "node-a", injected),
		pod("volume-only-0", "node-a", nil, ram),
		pod("disk-0", "node-a", injected, emptyDir("dbtune-scratch-tmp", "")),
	}
	want := []Volume{
		{Namespace: "db", Pod: "db-0", PodUID: "uid-db-0", ScratchVolume: "tmp", Name: "dbtune-scratch-tmp"},
		{Namespace: "db", Pod: "two-0", PodUID: "uid-two-0", ScratchVolume: "a", Name: "dbtune-scratch-a"},
		{Namespace: "db", Pod: "two-0", PodUID: "uid-two-0", ScratchVolume: "b", Name: "dbtune-scratch-b"},
	}
	if diff := cmp.Diff(want, Discover(pods, "node-a")); diff != "" {
		t.Errorf("Discover (-want +got):\n%s", diff)
	}
}

func TestVolumeDir(t *testing.T) {
	v := Volume{PodUID: "0b6c", Name: "dbtune-scratch-tmp"}
	if got, want := v.Dir("/host/kubelet"), "/host/kubelet/pods/0b6c/volumes/kubernetes.io~empty-dir/dbtune-scratch-tmp"; got != want {
		t.Errorf("Dir = %q, want %q", got, want)
	}
}

// TestTrimPodKeepsWhatDiscoverReads: a pod trimmed for the cache is discovered as the whole one.
func TestTrimPodKeepsWhatDiscoverReads(t *testing.T) {
	full := pod("db-0", "node-a", map[string]string{"scratch.dbtune.io/tmp": "h", "other": "x"},
		emptyDir("dbtune-scratch-tmp", corev1.StorageMediumMemory), emptyDir("data", ""))
	full.Spec.Containers = []corev1.Container{{Name: "mysql", Image: "mysql:8.4"}}
	trimmed, err := trimPod(&full)
	if err != nil {
		t.Fatal(err)
	}
	tp := trimmed.(*corev1.Pod)
	if diff := cmp.Diff(Discover([]corev1.Pod{full}, "node-a"), Discover([]corev1.Pod{*tp}, "node-a")); diff != "" {
		t.Errorf("discovered from the trimmed pod (-full +trimmed):\n%s", diff)
	}
	if len(tp.Spec.Containers) != 0 || len(tp.Spec.Volumes) != 1 || len(tp.Annotations) != 1 {
		t.Errorf("trimmed pod keeps %d containers, %d volumes, %d annotations; want 0, 1, 1", len(tp.Spec.Containers), len(tp.Spec.Volumes), len(tp.Annotations))
	}
}
