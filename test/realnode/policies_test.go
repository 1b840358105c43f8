//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// rulesScratchSize is the RAM volume of the namespace-rules cases.
const rulesScratchSize = 64 << 20

func quantities(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// testNamespaceRules runs MariaDB on the real node the way policed namespaces and pod-level
// resources have it: the kubelet's cgroups must hold what the status says, and the injected pods
// must be admitted where the database's own were, or the change refused before it is written.
func (p *product) testNamespaceRules(t *testing.T) {
	t.Run("pod-level-limit", func(t *testing.T) {
		t.Parallel()
		p.testPodLevelLimit(t)
	})
	t.Run("limitrange-and-quota", func(t *testing.T) {
		t.Parallel()
		p.testLimitRangeAndQuota(t)
	})
}

// ruledStatefulSet is the MariaDB StatefulSet of mariadbStatefulSet named name in namespace ns,
// on a local volume of its own.
func (p *product) ruledStatefulSet(ctx context.Context, t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	createLocalPV(ctx, t, p.cs, p.node, "realnode-"+name)
	sts := mariadbStatefulSet(p.node.Name())
	sts.Namespace, sts.Name = ns, name
	labels := map[string]string{"app.kubernetes.io/name": name}
	sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels = labels, labels
	return sts
}

// testPodLevelLimit gives a MariaDB pod a pod-level memory limit and none of the container's: under
// Validate the volume goes in within the pod's limit, which the pod's cgroup holds; under Reserve
// the pod's limit grows by the volume, in the template and in the cgroup; the deletion gives the
// pod its own limit back.
func (p *product) testPodLevelLimit(t *testing.T) {
	ctx := t.Context()
	sts := p.ruledStatefulSet(ctx, t, p.ns, "podlevel")
	sts.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	sts.Spec.Template.Spec.Resources = &corev1.ResourceRequirements{Requests: quantities("cpu", "100m", "memory", "512Mi"), Limits: quantities("memory", "1Gi")}
	created, err := p.cs.AppsV1().StatefulSets(p.ns).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := waitRolledOut(ctx, t, p.cs, created)
	keepARow(ctx, t, p, pod)
	p.assertPodCgroupLimit(t, pod, 1<<30)

	p.applyRuledScratchVolume(ctx, t, p.ns, sts.Name, v1alpha1.MemoryValidate)
	sv := p.waitRuled(ctx, t, p.ns, sts.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	budget := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionMemoryBudget)
	t.Logf("Validate under a pod-level 1Gi limit: MemoryBudget %s: %s", budget.Reason, budget.Message)
	if budget.Reason != v1alpha1.ReasonMemoryBudgetCovered || !strings.Contains(budget.Message, "the pod's 1Gi memory limit leaves container mariadb") {
		t.Errorf("MemoryBudget does not say the pod's limit covers the volume: %s: %s", budget.Reason, budget.Message)
	}
	pod = p.rolledPod(ctx, t, p.ns, sts.Name)
	p.assertPodCgroupLimit(t, pod, 1<<30)
	assertInjected(ctx, t, p.cfg, p.cs, pod, v1alpha1.DefaultMySQLTmpdirMountPath, rulesScratchSize, rulesScratchSize>>10)

	p.applyRuledScratchVolume(ctx, t, p.ns, sts.Name, v1alpha1.MemoryReserve)
	waitFor(t, 3*time.Minute, "MemoryBudget MemoryReserved", func() (bool, string) {
		sv = p.waitRuled(ctx, t, p.ns, sts.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
		c := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionMemoryBudget)
		return c.Reason == v1alpha1.ReasonMemoryReserved, c.Reason + ": " + c.Message
	})
	budget = meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionMemoryBudget)
	t.Logf("Reserve under a pod-level limit: %s", budget.Message)
	if !strings.Contains(budget.Message, "of the pod") {
		t.Errorf("MemoryBudget does not say the pod's limit was raised: %s", budget.Message)
	}
	injected, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, sts.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(1<<30 + rulesScratchSize)
	if got := injected.Spec.Template.Spec.Resources.Limits[corev1.ResourceMemory]; got.Value() != want {
		t.Errorf("the pod-level limit is %s after Reserve, want %d", got.String(), want)
	}
	pod = p.rolledPod(ctx, t, p.ns, sts.Name)
	p.assertPodCgroupLimit(t, pod, want)

	p.deleteRuled(ctx, t, p.ns, sts.Name)
	reverted, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, sts.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := reverted.Spec.Template.Spec.Resources.Limits[corev1.ResourceMemory]; got.Value() != 1<<30 {
		t.Errorf("the pod-level limit is %s after the deletion, want the user's 1Gi back", got.String())
	}
	pod = p.rolledPod(ctx, t, p.ns, sts.Name)
	p.assertPodCgroupLimit(t, pod, 1<<30)
}

// testLimitRangeAndQuota runs MariaDB in a namespace with a LimitRange of defaults and
// limit-to-request ratios and a quota on every request and limit: the injected pod is admitted and
// comes back with the volume; a Reserve the quota has no room for is refused, and nothing rolls.
func (p *product) testLimitRangeAndQuota(t *testing.T) {
	ctx := t.Context()
	ns := "ruled"
	if err := p.cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: quantities("cpu", "500m", "memory", "512Mi"), DefaultRequest: quantities("cpu", "250m", "memory", "256Mi"),
		MaxLimitRequestRatio: quantities("cpu", "4", "memory", "2"),
	}}}}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compute"}, Spec: corev1.ResourceQuotaSpec{
		Hard: quantities("requests.cpu", "2", "requests.memory", "4Gi", "limits.cpu", "4", "limits.memory", "8Gi")}}
	for _, o := range []client.Object{lr, quota} {
		if err := p.cl.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	p.waitQuotaCounted(ctx, t, ns, "compute")
	sts := p.ruledStatefulSet(ctx, t, ns, "ruled")
	sts.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: quantities("cpu", "250m", "memory", "768Mi"), Limits: quantities("cpu", "500m", "memory", "1Gi")}
	created, err := p.cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := waitRolledOut(ctx, t, p.cs, created)
	keepARow(ctx, t, p, before)

	p.applyRuledScratchVolume(ctx, t, ns, sts.Name, v1alpha1.MemoryValidate)
	start := time.Now()
	p.waitRuled(ctx, t, ns, sts.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	pod := p.rolledPod(ctx, t, ns, sts.Name)
	t.Logf("in a namespace with a LimitRange and a quota the injected pod %s runs %s after the ScratchVolume was applied", pod.Name, time.Since(start).Round(time.Millisecond))
	if pod.UID == before.UID {
		t.Fatal("the pod did not roll")
	}
	var init *corev1.Container
	for i := range pod.Spec.InitContainers {
		if strings.HasPrefix(pod.Spec.InitContainers[i].Name, "dbtune-") {
			init = &pod.Spec.InitContainers[i]
		}
	}
	if init == nil {
		t.Fatalf("the injected pod has no init container of the operator: %+v", pod.Spec.InitContainers)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := init.Resources.Requests[r], init.Resources.Limits[r]
		if req.IsZero() || req.Cmp(lim) != 0 {
			t.Errorf("the init container's %s request %s and limit %s, want them set and equal", r, req.String(), lim.String())
		}
	}
	t.Logf("the init container runs with %v", init.Resources)
	assertInjected(ctx, t, p.cfg, p.cs, pod, v1alpha1.DefaultMySQLTmpdirMountPath, rulesScratchSize, rulesScratchSize>>10)

	// Leave the quota 32Mi of memory requests: a Reserve of 64Mi cannot be admitted.
	p.waitQuotaCounted(ctx, t, ns, "compute")
	cur := &corev1.ResourceQuota{}
	if err := p.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "compute"}, cur); err != nil {
		t.Fatal(err)
	}
	tight := cur.Status.Used[corev1.ResourceRequestsMemory]
	tight.Add(resource.MustParse("32Mi"))
	cur.Spec.Hard[corev1.ResourceRequestsMemory] = tight
	if err := p.cl.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the quota's new limit counted", func() (bool, string) {
		got := &corev1.ResourceQuota{}
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "compute"}, got); err != nil {
			return false, err.Error()
		}
		h := got.Status.Hard[corev1.ResourceRequestsMemory]
		return h.Cmp(tight) == 0, h.String()
	})
	rolled, err := p.cs.AppsV1().StatefulSets(ns).Get(ctx, sts.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.applyRuledScratchVolume(ctx, t, ns, sts.Name, v1alpha1.MemoryReserve)
	waitFor(t, 2*time.Minute, "the Reserve refused for the quota", func() (bool, string) {
		sv := &v1alpha1.ScratchVolume{}
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: sts.Name}, sv); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionInjected)
		if c == nil || sv.Status.ObservedGeneration != sv.Generation {
			return false, "not observed yet"
		}
		return c.Reason == v1alpha1.ReasonResourceQuota && strings.Contains(c.Message, "ResourceQuota compute"), c.Reason + ": " + c.Message
	})
	time.Sleep(5 * time.Second)
	after, err := p.cs.AppsV1().StatefulSets(ns).Get(ctx, sts.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != rolled.Generation {
		t.Errorf("the StatefulSet was written (generation %d to %d) with a Reserve the quota cannot hold", rolled.Generation, after.Generation)
	}
	if still := p.rolledPod(ctx, t, ns, sts.Name); still.UID != pod.UID {
		t.Errorf("the pod restarted for a Reserve that was refused")
	}
	p.deleteRuled(ctx, t, ns, sts.Name)
}

// keepARow writes the row assertInjected reads back after the roll, on the data volume.
func keepARow(ctx context.Context, t *testing.T, p *product, pod *corev1.Pod) {
	t.Helper()
	queryUntilAnswered(ctx, t, p.cfg, p.cs, pod, "CREATE DATABASE IF NOT EXISTS kept; CREATE TABLE IF NOT EXISTS kept.t (i INT PRIMARY KEY) ENGINE=InnoDB; REPLACE INTO kept.t VALUES (42)")
}

// applyRuledScratchVolume applies the ScratchVolume of target in ns, named after it, with the
// accounting given.
func (p *product) applyRuledScratchVolume(ctx context.Context, t *testing.T, ns, target string, accounting v1alpha1.MemoryAccounting) {
	t.Helper()
	sv := &v1alpha1.ScratchVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScratchVolume"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: target},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target: v1alpha1.ScratchTarget{Name: target}, Size: *resource.NewQuantity(rulesScratchSize, resource.BinarySI),
			Purpose: v1alpha1.PurposeMySQLTmpdir, Memory: v1alpha1.MemorySpec{Accounting: accounting},
		},
	}
	//nolint:staticcheck // Apply with a typed object is what kubectl apply does.
	if err := p.cl.Patch(ctx, sv, client.Apply, client.FieldOwner("user"), client.ForceOwnership); err != nil {
		t.Fatalf("failed to apply ScratchVolume %s/%s: %v", ns, target, err)
	}
}

// waitRuled waits until the ScratchVolume name in ns has the condition, for its generation.
func (p *product) waitRuled(ctx context.Context, t *testing.T, ns, name, ctype string, want metav1.ConditionStatus) *v1alpha1.ScratchVolume {
	t.Helper()
	sv := &v1alpha1.ScratchVolume{}
	waitFor(t, 5*time.Minute, fmt.Sprintf("ScratchVolume %s/%s with %s=%s", ns, name, ctype, want), func() (bool, string) {
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sv); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(sv.Status.Conditions, ctype)
		if c == nil {
			return false, "no condition " + ctype
		}
		return sv.Status.ObservedGeneration == sv.Generation && c.Status == want, fmt.Sprintf("%s=%s %s: %s", ctype, c.Status, c.Reason, c.Message)
	})
	return sv
}

// deleteRuled deletes the ScratchVolume name in ns and waits until it is gone.
func (p *product) deleteRuled(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	if err := p.cl.Delete(ctx, &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "ScratchVolume "+ns+"/"+name+" gone", func() (bool, string) {
		err := p.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ScratchVolume{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprint(err)
	})
}

// rolledPod is the StatefulSet's pod once it runs the update revision.
func (p *product) rolledPod(ctx context.Context, t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	sts, err := p.cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return waitRolledOut(ctx, t, p.cs, sts)
}

// waitQuotaCounted waits until the quota controller has counted the quota.
func (p *product) waitQuotaCounted(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	waitFor(t, time.Minute, "quota "+ns+"/"+name+" counted", func() (bool, string) {
		q := &corev1.ResourceQuota{}
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q); err != nil {
			return false, err.Error()
		}
		return len(q.Status.Hard) > 0 && len(q.Status.Used) > 0, fmt.Sprintf("%+v", q.Status)
	})
}

// assertPodCgroupLimit checks the memory limit of the pod's cgroup (v1), the parent of its
// database container's: what the kubelet gives the pod as a whole.
func (p *product) assertPodCgroupLimit(t *testing.T, pod *corev1.Pod, want int64) {
	t.Helper()
	pid, err := p.node.ContainerPID(pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] != "memory" {
			continue
		}
		dir := "/sys/fs/cgroup/memory" + parts[2]
		podDir := dir[:strings.LastIndexByte(dir, '/')]
		raw, err := os.ReadFile(podDir + "/memory.limit_in_bytes")
		if err != nil {
			t.Fatal(err)
		}
		got, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil || got != want {
			t.Errorf("pod %s: memory cgroup %s has the limit %s, want %d", pod.Name, podDir, raw, want)
		} else {
			t.Logf("pod %s: memory cgroup %s has the limit %d", pod.Name, podDir, got)
		}
		return
	}
	t.Errorf("the database process %d is in no memory cgroup: %s", pid, data)
}
