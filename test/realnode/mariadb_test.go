//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/realnode"
	"github.com/dbtune/scratch-operator/test/testenv"
)

const (
	// rootPassword goes to the image's start script, which sets it when it initializes the data
	// directory; every query here logs in with it.
	rootPassword = "realnode-Secret'1"
	mariadbName  = "db"
	mariadbClass = "realnode-local"
	dataPath     = "/var/lib/mysql"
	localPVName  = "realnode-mariadb"
)

// TestMariaDBInjectedOnRealNode runs MariaDB (Debian's packages, hack/images -database mariadb) as a
// StatefulSet on the real node, on a local PersistentVolume, then applies what the controller would
// (inject.NewPlan and inject.Inject, and the drop-in ConfigMap of ensureConfigMap) without the
// manager, and checks inside the rolled container that tmpdir is a tmpfs of the size the kubelet
// must give it while the directories that must survive stay on the data volume.
func TestMariaDBInjectedOnRealNode(t *testing.T) {
	e := requireEnv(t)
	images := filepath.Join(e.root, "bin", "images")
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		if !testenv.CachedRootfs("mariadb") {
			testenv.SkipOrFail(t, "mmdebstrap is not installed and no MariaDB root file system is cached: apt-get install mmdebstrap")
		}
	}
	ctx := signalContext(t)
	start := time.Now()
	image, err := realnode.BuildMariaDBImage(ctx, e.root, images)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MariaDB image built in %s", time.Since(start).Round(time.Millisecond))
	c := startCluster(ctx, t, e, t.TempDir())
	node := startNode(ctx, t, e, c, t.TempDir())
	start = time.Now()
	if err := node.ImportImage(ctx, image); err != nil {
		t.Fatal(err)
	}
	t.Logf("MariaDB image imported in %s", time.Since(start).Round(time.Millisecond))
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	ns := createNamespace(ctx, t, cs)
	createLocalPV(ctx, t, cs, node, localPVName)

	sts, err := cs.AppsV1().StatefulSets(ns).Create(ctx, mariadbStatefulSet(node.Name()), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	pod := waitRolledOut(ctx, t, cs, sts)
	tmpdir := queryUntilAnswered(ctx, t, c.Config(), cs, pod, "SELECT @@tmpdir")
	t.Logf("MariaDB answered %s after the StatefulSet was created: @@tmpdir = %s", time.Since(start).Round(time.Millisecond), tmpdir)
	assertLocalPV(ctx, t, cs, ns)
	if _, err := execInPod(ctx, c.Config(), cs, pod, "mariadb", "-uroot", "-p"+rootPassword, "-e",
		"CREATE DATABASE kept; CREATE TABLE kept.t (i INT) ENGINE=InnoDB; INSERT INTO kept.t VALUES (42)"); err != nil {
		t.Fatalf("failed to write a row before the injection: %v", err)
	}
	if out, err := execInPod(ctx, c.Config(), cs, pod, "mariadb", "-uroot", "-e", "SELECT 1"); err == nil {
		t.Errorf("root logged in without the password MARIADB_ROOT_PASSWORD set: %s", out)
	}

	// What the controller would do, without the manager, twice: the kubelet sizes the tmpfs by the
	// sizeLimit when the pod's memory limit is larger, and by the limit when it is smaller (possible
	// only with spec.memory.accounting: Ignore).
	cases := []struct {
		name        string
		size        string
		accounting  v1alpha1.MemoryAccounting
		memoryLimit string
		wantKiB     int64
	}{
		{name: "size-below-memory-limit", size: "128Mi", accounting: v1alpha1.MemoryValidate, memoryLimit: "1Gi", wantKiB: 128 * 1024},
		{name: "memory-limit-below-size", size: "512Mi", accounting: v1alpha1.MemoryIgnore, memoryLimit: "384Mi", wantKiB: 384 * 1024},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			injectAndCheck(ctx, t, c.Config(), cs, ns, tc.size, tc.accounting, tc.memoryLimit, tc.wantKiB)
		})
	}
}

// injectAndCheck sets the database container's memory limit as a user would, applies what the
// controller would for a ScratchVolume of the given size and accounting (the drop-in ConfigMap of
// ensureConfigMap, the template of inject.Inject), waits for the rolled pod and checks inside it.
func injectAndCheck(ctx context.Context, t *testing.T, cfg *rest.Config, cs kubernetes.Interface, ns, size string, accounting v1alpha1.MemoryAccounting, memoryLimit string, wantKiB int64) {
	sv := &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tmp", UID: "realnode-test"},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: mariadbName},
			Size:    resource.MustParse(size),
			Purpose: v1alpha1.PurposeMySQLTmpdir,
			MySQL:   &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionConfigFile, InnoDBTmpdir: v1alpha1.InnoDBTmpdirDisk},
			Memory:  v1alpha1.MemorySpec{Accounting: accounting},
		},
	}
	sts, err := cs.AppsV1().StatefulSets(ns).Get(ctx, mariadbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse(memoryLimit)
	plan, err := inject.NewPlan(sv, sts, inject.Namespace{})
	if err != nil {
		t.Fatalf("inject.NewPlan: %v", err)
	}
	if plan.ConfigVolume == nil {
		t.Fatal("the plan has no drop-in file, want ConfigFile injection")
	}
	t.Logf("plan: scratch %s at %s, drop-in %s in %s:\n%s", plan.Volume.Name, plan.Mount.MountPath, plan.ConfigKey, plan.ConfigMount.MountPath, plan.ConfigData)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: sv.ConfigMapName(sts.Name), Namespace: ns,
			Labels:      map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ScratchVolumeLabel: sv.Name},
			Annotations: map[string]string{v1alpha1.TargetAnnotation: sts.Name},
		},
		Data: map[string]string{plan.ConfigKey: plan.ConfigData},
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	sts.Spec.Template = inject.Inject(sts.Spec.Template, []*inject.Plan{plan})
	if sts, err = cs.AppsV1().StatefulSets(ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pod := waitRolledOut(ctx, t, cs, sts)
	t.Logf("the injected pod is running %s after the update", time.Since(start).Round(time.Millisecond))
	assertInjected(ctx, t, cfg, cs, pod, plan.Mount.MountPath, sv.Spec.Size.Value(), wantKiB)
}

// assertInjected checks inside the database container of pod that @@tmpdir is mountPath, a tmpfs of
// wantKiB (the smaller of size and the pod's memory limit, as the kubelet sizes it), that the load
// and InnoDB temporary directories are on the data volume, and that the row written before the
// injection is still there.
func assertInjected(ctx context.Context, t *testing.T, cfg *rest.Config, cs kubernetes.Interface, pod *corev1.Pod, mountPath string, size, wantKiB int64) {
	t.Helper()
	got := queryUntilAnswered(ctx, t, cfg, cs, pod, "SELECT @@tmpdir, @@slave_load_tmpdir, @@innodb_tmpdir, (SELECT i FROM kept.t)")
	t.Logf("the injected pod answers: %s", got)
	fields := strings.Split(got, "\t")
	if len(fields) != 4 {
		t.Fatalf("the query answered %q, want 4 tab-separated fields", got)
	}
	if fields[0] != mountPath {
		t.Errorf("@@tmpdir is %s, want the scratch mount %s", fields[0], mountPath)
	}
	if fields[3] != "42" {
		t.Errorf("the row written before the injection reads %s, want 42: the data volume did not survive the roll", fields[3])
	}

	mounts, err := execInPod(ctx, cfg, cs, pod, "cat", "/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	limit := podMemoryLimit(&pod.Spec)
	if want := min(size, limit) / 1024; want != wantKiB {
		t.Errorf("the pod's memory limit %d and the size %d give %d KiB, the case expects %d", limit, size, want, wantKiB)
	}
	m := mountOf(mounts, fields[0])
	if m == nil || m.fsType != "tmpfs" {
		t.Errorf("@@tmpdir %s is %v in the container, want a tmpfs", fields[0], m)
	} else if got, ok := tmpfsSizeKiB(m.options); !ok || got != wantKiB {
		t.Errorf("@@tmpdir %s: tmpfs options %q, want size=%dk (min of sizeLimit %d and memory limit %d)", fields[0], m.options, wantKiB, size, limit)
	} else {
		t.Logf("@@tmpdir %s: tmpfs of %d KiB (%s); sizeLimit %d, memory limit %d", fields[0], got, m.options, size, limit)
	}
	for i, name := range map[int]string{1: "@@slave_load_tmpdir", 2: "@@innodb_tmpdir"} {
		dir := fields[i]
		if dir == "" || dir == "NULL" {
			t.Errorf("%s is %q, want a directory on the data volume", name, dir)
			continue
		}
		if !strings.HasPrefix(dir+"/", dataPath+"/") {
			t.Errorf("%s is %s, want it under the data volume %s", name, dir, dataPath)
		}
		if m := mountOf(mounts, dir); m == nil || m.fsType == "tmpfs" {
			t.Errorf("%s %s is on %v, want the data volume (not tmpfs)", name, dir, m)
		} else {
			t.Logf("%s %s is on %s (%s), mounted at %s", name, dir, m.device, m.fsType, m.point)
		}
	}
}

// createLocalPV creates a local PersistentVolume on a directory of the node's, pinned to the node,
// for a StatefulSet's volumeClaimTemplate, and the StorageClass without a provisioner it belongs
// to when no test made it yet.
func createLocalPV(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node, name string) {
	t.Helper()
	dir := filepath.Join(node.Dir(), "local-pv", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: mariadbClass},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
	}
	switch _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); {
	case err == nil:
		t.Cleanup(func() {
			_ = cs.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
		})
	case !apierrors.IsAlreadyExists(err):
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              mariadbClass,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node.Name()},
				}},
			}}}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
}

// assertLocalPV checks that the StatefulSet's claim is bound to the local PersistentVolume.
func assertLocalPV(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+mariadbName+"-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName != localPVName {
		t.Errorf("claim %s is %s on volume %q, want Bound to %s", pvc.Name, pvc.Status.Phase, pvc.Spec.VolumeName, localPVName)
	}
}

// mariadbStatefulSet is one MariaDB replica on the real node, its data on a claim of the local
// class, as a user would write it before any ScratchVolume. Kept apart: it builds a pod for the real
// node, pinned to it by name and running the image loaded there, never pulled.
func mariadbStatefulSet(nodeName string) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/name": mariadbName}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: mariadbName},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{"kubernetes.io/hostname": nodeName},
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					Containers: []corev1.Container{{
						Name: "mariadb", Image: realnode.MariaDBImage, ImagePullPolicy: corev1.PullNever,
						Args:  []string{"--innodb-buffer-pool-size=64M"},
						Env:   []corev1.EnvVar{{Name: "MARIADB_ROOT_PASSWORD", Value: rootPassword}},
						Ports: []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi"), corev1.ResourceCPU: resource.MustParse("100m")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: dataPath}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(mariadbClass),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

// waitRolledOut waits until the StatefulSet's pod runs its current revision on a Running
// container, and returns it.
func waitRolledOut(ctx context.Context, t *testing.T, cs kubernetes.Interface, sts *appsv1.StatefulSet) *corev1.Pod {
	t.Helper()
	name := sts.Name + "-0"
	var pod *corev1.Pod
	waitFor(t, 4*time.Minute, "pod "+name+" running the StatefulSet's update revision", func() (bool, string) {
		cur, err := cs.AppsV1().StatefulSets(sts.Namespace).Get(ctx, sts.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, err := cs.CoreV1().Pods(sts.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		rev := p.Labels[appsv1.ControllerRevisionHashLabelKey]
		ok := cur.Status.ObservedGeneration >= cur.Generation && rev == cur.Status.UpdateRevision &&
			p.DeletionTimestamp == nil && podRunning(p)
		return ok, fmt.Sprintf("revision %s (want %s); %s", rev, cur.Status.UpdateRevision, podSummary(p))
	})
	return pod
}

// queryUntilAnswered runs a query with the mariadb client in the pod until the server answers (it
// initializes its data directory first), and returns the answer without column names.
func queryUntilAnswered(ctx context.Context, t *testing.T, cfg *rest.Config, cs kubernetes.Interface, pod *corev1.Pod, query string) string {
	t.Helper()
	var answer string
	waitFor(t, 3*time.Minute, "MariaDB in "+pod.Name+" answering "+query, func() (bool, string) {
		out, err := execInPod(ctx, cfg, cs, pod, "mariadb", "-uroot", "-p"+rootPassword, "-N", "-B", "-e", query)
		if err != nil {
			return false, err.Error()
		}
		answer = strings.TrimSpace(out)
		return true, ""
	})
	return answer
}

// podMemoryLimit is the pod's memory limit as the kubelet sizes a memory emptyDir by it: the
// pod-level limit, else the sum of its containers' limits, or an init container's when larger.
func podMemoryLimit(pod *corev1.PodSpec) int64 {
	if pod.Resources != nil {
		if q, ok := pod.Resources.Limits[corev1.ResourceMemory]; ok {
			return q.Value()
		}
	}
	var sum int64
	for _, c := range pod.Containers {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return 1 << 62
		}
		sum += q.Value()
	}
	for _, c := range pod.InitContainers {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && q.Value() > sum {
			sum = q.Value()
		}
	}
	return sum
}

type mount struct{ device, point, fsType, options string }

// mountOf returns the mount in /proc/mounts text that holds path: the longest mount point above it,
// the last one mounted there.
func mountOf(procMounts, path string) *mount {
	var best *mount
	for line := range strings.SplitSeq(procMounts, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		m := mount{device: f[0], point: f[1], fsType: f[2], options: f[3]}
		if m.point != "/" && path != m.point && !strings.HasPrefix(path, m.point+"/") {
			continue
		}
		if best == nil || len(m.point) >= len(best.point) {
			best = &m
		}
	}
	return best
}
