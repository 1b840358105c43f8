//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
	"github.com/dbtune/scratch-operator/test/realnode"
)

// scratchPath is where the test pods mount their memory-backed emptyDir.
const scratchPath = "/scratch"

// TestMemoryEmptyDirIsSizedTmpfs proves on a real kubelet what the operator relies on: a
// `medium: Memory` emptyDir is a tmpfs inside the container, sized by the kubelet as the smallest of
// its sizeLimit, the pod's memory limit (the sum of its containers' limits) and the node's
// allocatable memory (pkg/volume/emptydir calculateEmptyDirMemorySize, kubelet v1.37). Then it stops
// the node and checks that the machine is as before.
func TestMemoryEmptyDirIsSizedTmpfs(t *testing.T) {
	e := requireEnv(t)
	ctx := signalContext(t)
	c := startCluster(ctx, t, e, t.TempDir())
	start := time.Now()
	node := startNode(ctx, t, e, c, t.TempDir())
	t.Logf("node %s Ready %s after Start", node.Name(), time.Since(start).Round(time.Millisecond))

	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the real node and both fake nodes Ready", func() (bool, string) {
		ready, all, err := nodesReady(ctx, cs)
		if err != nil {
			return false, err.Error()
		}
		return len(ready) == 3 && len(all) == 3, "Ready: " + joinNames(ready) + " of " + joinNames(all)
	})
	ns := createNamespace(ctx, t, cs)

	n, err := cs.CoreV1().Nodes().Get(ctx, node.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allocatable := n.Status.Allocatable[corev1.ResourceMemory]
	// The kernel sizes a tmpfs in whole pages and prints the size in KiB.
	allocatableKiB := (allocatable.Value() + 4095) / 4096 * 4
	cases := []struct {
		name, sizeLimit, memoryLimit string
		wantKiB                      int64
	}{
		// 96Mi sizeLimit < 256Mi limit: the sizeLimit.
		{name: "size-limit-below-memory-limit", sizeLimit: "96Mi", memoryLimit: "256Mi", wantKiB: 96 * 1024},
		// 64Mi limit < 96Mi sizeLimit: the pod could never fill more than its limit anyway.
		{name: "memory-limit-below-size-limit", sizeLimit: "96Mi", memoryLimit: "64Mi", wantKiB: 64 * 1024},
		// No memory limit and a sizeLimit beyond the node: the node's allocatable memory.
		{name: "node-allocatable-below-size-limit", sizeLimit: fmt.Sprint(allocatable.Value() + 1<<30), wantKiB: allocatableKiB},
	}
	t.Logf("node %s: %s of allocatable memory (a tmpfs of %d KiB)", node.Name(), allocatable.String(), allocatableKiB)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := runTmpfsPod(ctx, t, cs, ns, node.Name(), tc.name, tc.sizeLimit, tc.memoryLimit)
			pid, err := node.ContainerPID(pod.Status.ContainerStatuses[0].ContainerID)
			if err != nil {
				t.Fatal(err)
			}
			assertTmpfs(t, fmt.Sprintf("/proc/%d/mountinfo", pid), scratchPath, tc.wantKiB)
			hostDir := filepath.Join(node.KubeletRoot(), "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
			assertTmpfs(t, "/proc/self/mountinfo", hostDir, tc.wantKiB)
			if tc.memoryLimit != "" {
				limit := resource.MustParse(tc.memoryLimit)
				assertMemoryLimit(t, pid, limit.Value())
			}
			assertThroughKubelet(ctx, t, c.Config(), pod, tc.wantKiB)
			deletePod(ctx, t, cs, pod)
		})
	}
	assertHostChanged(t, e)

	nodeDir := node.Dir()
	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	assertRestored(t, e, nodeDir)
}

func createNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "realnode-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// tmpfsPod is a pod on the real node whose container sleeps with a memory-backed emptyDir of the
// given sizeLimit and the given memory limit (none when empty). It prints a line first, for the logs
// check.
func tmpfsPod(name, nodeName, size, memoryLimit string) *corev1.Pod {
	sizeLimit := resource.MustParse(size)
	limits := corev1.ResourceList{}
	if memoryLimit != "" {
		limits[corev1.ResourceMemory] = resource.MustParse(memoryLimit)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": nodeName},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "app", Image: realnode.PauseImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "echo started; exec sleep 3600"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi"), corev1.ResourceCPU: resource.MustParse("10m")},
					Limits:   limits,
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: scratchPath}},
			}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &sizeLimit},
			}}},
		},
	}
}

// runTmpfsPod creates the pod and waits until its container runs.
func runTmpfsPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, nodeName, name, sizeLimit, memoryLimit string) *corev1.Pod {
	t.Helper()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, tmpfsPod(name, nodeName, sizeLimit, memoryLimit), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	waitFor(t, 2*time.Minute, "pod "+name+" running on "+nodeName, func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return podRunning(p), podSummary(p)
	})
	return pod
}

func podRunning(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 &&
		p.Status.ContainerStatuses[0].State.Running != nil && p.Status.ContainerStatuses[0].ContainerID != ""
}

func podSummary(p *corev1.Pod) string {
	s := fmt.Sprintf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			s += fmt.Sprintf("; %s: %s", c.Type, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			s += fmt.Sprintf("; %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
	}
	return s
}

// assertTmpfs checks that mountPoint in the mount table at path is a tmpfs of wantKiB, from the
// superblock's size= option, which the kernel always prints in KiB.
func assertTmpfs(t *testing.T, path, mountPoint string, wantKiB int64) {
	t.Helper()
	entries, err := mountinfo.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var found *mountinfo.Entry
	for i := range entries {
		if entries[i].MountPoint == mountPoint {
			found = &entries[i] // the last one is on top
		}
	}
	if found == nil {
		t.Fatalf("%s is not a mount point in %s", mountPoint, path)
	}
	if found.FSType != "tmpfs" {
		t.Fatalf("%s in %s is %s, want tmpfs", mountPoint, path, found.FSType)
	}
	size, ok := tmpfsSizeKiB(found.SuperOptions)
	if !ok || size != wantKiB {
		t.Errorf("%s in %s: tmpfs options %q, want size=%dk", mountPoint, path, found.SuperOptions, wantKiB)
		return
	}
	t.Logf("%s in %s: tmpfs of %d KiB (%s)", mountPoint, path, size, found.SuperOptions)
}

func tmpfsSizeKiB(superOptions string) (int64, bool) {
	for opt := range strings.SplitSeq(superOptions, ",") {
		if v, ok := strings.CutPrefix(opt, "size="); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(v, "k"), 10, 64)
			return n, err == nil && strings.HasSuffix(v, "k")
		}
	}
	return 0, false
}

// assertMemoryLimit checks the container's memory cgroup (v1) limit, which is what makes the
// tmpfs's pages count against the container.
func assertMemoryLimit(t *testing.T, pid int, want int64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			raw, err := os.ReadFile("/sys/fs/cgroup/memory" + parts[2] + "/memory.limit_in_bytes")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(raw)); got != strconv.FormatInt(want, 10) {
				t.Errorf("memory cgroup %s: limit %s, want %d", parts[2], got, want)
			}
			return
		}
	}
	t.Errorf("process %d is in no memory cgroup: %s", pid, data)
}

// deletePod deletes the pod and waits until the kubelet has confirmed that it stopped.
func deletePod(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	if err := cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "pod "+pod.Name+" gone", func() (bool, string) {
		_, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprint(err)
	})
}

// assertHostChanged logs the kernel settings the running node changed and checks that the bridge
// exists: what assertRestored later finds undone was really done.
func assertHostChanged(t *testing.T, e env) {
	t.Helper()
	now, err := realnode.ReadKernelSettings()
	if err != nil {
		t.Fatal(err)
	}
	for name, before := range e.sysctls {
		if now[name] != before {
			t.Logf("the node changed sysctl %s from %s to %s", name, before, now[name])
		}
	}
	if ok, err := realnode.BridgeExists(); err != nil || !ok {
		t.Errorf("the CNI bridge %s does not exist while pods ran (%v)", realnode.BridgeName, err)
	}
}
