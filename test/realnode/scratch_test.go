//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// scratchName is the user's ScratchVolume.
const scratchName = "tmp"

// Fill queries: a GROUP BY on a generated column of random-looking 192-byte strings, pushed into an
// on-disk internal temporary table (Aria, in tmpdir) by tiny in-memory limits, and counted so that
// only one number comes back. fillQuery(n) writes about n × 200 bytes of temporary table.
const spillSession = "SET SESSION tmp_table_size = 1024, max_heap_table_size = 16384, sort_buffer_size = 32768"

func fillQuery(rows int) string {
	return fmt.Sprintf("%s; SELECT COUNT(*) FROM (SELECT REPEAT(MD5(seq), 6) AS p, COUNT(*) FROM kept.seq_1_to_%d GROUP BY p) AS d", spillSession, rows)
}

// mariadb is the user's StatefulSet on the real node and what the tests learned about it.
type mariadb struct {
	sts *appsv1.StatefulSet
	// tmpdir is the server's own @@tmpdir, before any ScratchVolume.
	tmpdir string
	// volumes are the pod template's volume names before any ScratchVolume.
	volumes []string
}

// startMariaDB creates the user's namespace, a local PersistentVolume and the MariaDB StatefulSet,
// waits until it answers, and writes a row that must survive every roll, and a table that fills
// the buffer pool when read.
func (p *product) startMariaDB(ctx context.Context, t *testing.T) *mariadb {
	t.Helper()
	p.ns = createNamespace(ctx, t, p.cs)
	createLocalPV(ctx, t, p.cs, p.node, localPVName)
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Create(ctx, mariadbStatefulSet(p.node.Name()), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := &mariadb{sts: sts}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		m.volumes = append(m.volumes, v.Name)
	}
	pod := waitRolledOut(ctx, t, p.cs, sts)
	m.tmpdir = queryUntilAnswered(ctx, t, p.cfg, p.cs, pod, "SELECT @@tmpdir")
	p.sql(ctx, t, pod, "CREATE DATABASE kept; CREATE TABLE kept.t (i INT) ENGINE=InnoDB; INSERT INTO kept.t VALUES (42);"+
		" CREATE TABLE kept.warm (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB;"+
		" INSERT INTO kept.warm SELECT seq, REPEAT(MD5(seq), 6) FROM kept.seq_1_to_250000")
	t.Logf("MariaDB runs with its own @@tmpdir %s", m.tmpdir)
	return m
}

// sql runs statements as root in the database container and fails the test when they fail.
func (p *product) sql(ctx context.Context, t *testing.T, pod *corev1.Pod, statements string) string {
	t.Helper()
	out, err := p.trySQL(ctx, pod, statements)
	if err != nil {
		t.Fatalf("%s: %v", statements, err)
	}
	return out
}

func (p *product) trySQL(ctx context.Context, pod *corev1.Pod, statements string) (string, error) {
	out, err := execInPod(ctx, p.cfg, p.cs, pod, "mariadb", "-uroot", "-p"+rootPassword, "-N", "-B", "-e", statements)
	return strings.TrimSpace(out), err
}

// applyScratchVolume creates or updates the user's ScratchVolume as kubectl apply would.
func (p *product) applyScratchVolume(ctx context.Context, t *testing.T, size string, accounting v1alpha1.MemoryAccounting, injection v1alpha1.InjectionMode) {
	t.Helper()
	var mysql *v1alpha1.MySQLSpec
	if injection != "" {
		mysql = &v1alpha1.MySQLSpec{Injection: injection}
	}
	sv := &v1alpha1.ScratchVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScratchVolume"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: scratchName},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: mariadbName},
			Size:    resource.MustParse(size),
			Purpose: v1alpha1.PurposeMySQLTmpdir,
			Memory:  v1alpha1.MemorySpec{Accounting: accounting},
			MySQL:   mysql,
		},
	}
	//nolint:staticcheck // Apply with an unstructured-free typed object is what kubectl apply does.
	if err := p.cl.Patch(ctx, sv, client.Apply, client.FieldOwner("user"), client.ForceOwnership); err != nil {
		t.Fatalf("failed to apply ScratchVolume %s: %v", scratchName, err)
	}
}

// waitScratchVolume waits until the ScratchVolume's status describes its current generation and
// its condition ctype has the wanted status, and returns it.
func (p *product) waitScratchVolume(ctx context.Context, t *testing.T, ctype string, want metav1.ConditionStatus) *v1alpha1.ScratchVolume {
	t.Helper()
	return p.waitScratchVolumeOf(ctx, t, scratchName, ctype, want)
}

// waitScratchVolumeOf is waitScratchVolume for the ScratchVolume name.
func (p *product) waitScratchVolumeOf(ctx context.Context, t *testing.T, name, ctype string, want metav1.ConditionStatus) *v1alpha1.ScratchVolume {
	t.Helper()
	sv := &v1alpha1.ScratchVolume{}
	waitFor(t, 5*time.Minute, fmt.Sprintf("ScratchVolume %s with %s=%s", name, ctype, want), func() (bool, string) {
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: name}, sv); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(sv.Status.Conditions, ctype)
		if c == nil {
			return false, "no condition " + ctype
		}
		return sv.Status.ObservedGeneration == sv.Generation && c.Status == want,
			fmt.Sprintf("generation %d observed %d; %s=%s %s: %s", sv.Generation, sv.Status.ObservedGeneration, ctype, c.Status, c.Reason, c.Message)
	})
	return sv
}

// databasePod returns the StatefulSet's pod once it runs the update revision.
func (p *product) databasePod(ctx context.Context, t *testing.T) *corev1.Pod {
	t.Helper()
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return waitRolledOut(ctx, t, p.cs, sts)
}

// setMemoryLimit changes the database container's memory limit, as its owner would.
func (p *product) setMemoryLimit(ctx context.Context, t *testing.T, limit string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"mariadb","resources":{"limits":{"memory":%q}}}]}}}}`, limit)
	if _, err := p.cs.AppsV1().StatefulSets(p.ns).Patch(ctx, mariadbName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "user"}); err != nil {
		t.Fatal(err)
	}
}

// testScratchVolume applies a ScratchVolume for the MariaDB StatefulSet through the manager and
// checks the rolled pod inside, then fills the RAM volume: the query fails with "no space", the
// server stays up and the container is not OOM-killed, since the memory check holds.
func (p *product) testScratchVolume(t *testing.T) {
	ctx := t.Context()
	p.applyScratchVolume(ctx, t, "128Mi", v1alpha1.MemoryValidate, v1alpha1.InjectionConfigFile)
	start := time.Now()
	p.waitScratchVolume(ctx, t, v1alpha1.ConditionReady, metav1.ConditionTrue)
	t.Logf("ScratchVolume Ready %s after it was applied", time.Since(start).Round(time.Millisecond))
	pod := p.databasePod(ctx, t)
	assertInjected(ctx, t, p.cfg, p.cs, pod, v1alpha1.DefaultMySQLTmpdirMountPath, 128<<20, 128<<10)

	// Warm the buffer pool, then fill the volume: about 200 MB of temporary table for 128 MiB.
	p.sql(ctx, t, pod, "SELECT COUNT(*), SUM(LENGTH(v)) FROM kept.warm")
	restarts := restartCount(pod)
	start = time.Now()
	out, err := p.trySQL(ctx, pod, fillQuery(1_000_000))
	t.Logf("the fill query ended after %s: %q, %v", time.Since(start).Round(time.Millisecond), out, err)
	if err == nil || !volumeFull(err.Error()) {
		t.Errorf("the fill query of about 200 MB on a 128 MiB tmpdir returned %q, %v; want the server's out-of-space error", out, err)
	}
	if got := p.sql(ctx, t, pod, "SELECT i FROM kept.t"); got != "42" {
		t.Errorf("after the failed fill the server answers %q, want 42", got)
	}
	p.assertAgentSawTheFill(ctx, t, pod, 128<<20)
	after, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if restartCount(after) != restarts || oomKilled(after) {
		t.Errorf("the database container restarted during the fill (restarts %d → %d, OOM-killed: %v); the memory check should have left room", restarts, restartCount(after), oomKilled(after))
	}
}

// testMemoryCheck shows on a real memory cgroup why the check exists: with a memory limit below
// the size, Validate refuses and changes nothing; Ignore injects, the kubelet caps the tmpfs at the
// limit, and filling the volume OOM-kills the database container.
func (p *product) testMemoryCheck(t *testing.T) {
	ctx := t.Context()
	p.setMemoryLimit(ctx, t, "384Mi")
	p.databasePod(ctx, t)
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.applyScratchVolume(ctx, t, "512Mi", v1alpha1.MemoryValidate, v1alpha1.InjectionConfigFile)
	sv := p.waitScratchVolume(ctx, t, v1alpha1.ConditionMemoryBudget, metav1.ConditionFalse)
	budget := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionMemoryBudget)
	t.Logf("Validate with 512Mi over a 384Mi limit: MemoryBudget %s: %s", budget.Reason, budget.Message)
	if ready := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionReady); ready == nil || ready.Status == metav1.ConditionTrue {
		t.Errorf("Ready is %+v while the memory check refuses the size", ready)
	}
	cur, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cur.Generation != sts.Generation {
		t.Errorf("the StatefulSet changed (generation %d → %d) although the memory check refused the size", sts.Generation, cur.Generation)
	}

	p.applyScratchVolume(ctx, t, "512Mi", v1alpha1.MemoryIgnore, v1alpha1.InjectionConfigFile)
	p.waitScratchVolume(ctx, t, v1alpha1.ConditionReady, metav1.ConditionTrue)
	pod := p.databasePod(ctx, t)
	assertInjected(ctx, t, p.cfg, p.cs, pod, v1alpha1.DefaultMySQLTmpdirMountPath, 512<<20, 384<<10)
	p.sql(ctx, t, pod, "SELECT COUNT(*), SUM(LENGTH(v)) FROM kept.warm")
	restarts := restartCount(pod)
	out, err := p.trySQL(ctx, pod, fillQuery(2_500_000))
	t.Logf("the fill query of about 500 MB ended: %q, %v", out, err)
	var after *corev1.Pod
	waitFor(t, 2*time.Minute, "the database container OOM-killed and restarted", func() (bool, string) {
		if after, err = p.cs.CoreV1().Pods(p.ns).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return oomKilled(after) && restartCount(after) > restarts, fmt.Sprintf("restarts %d (were %d); %s", restartCount(after), restarts, podSummary(after))
	})
	t.Logf("with accounting Ignore the fill OOM-killed the container: %+v", after.Status.ContainerStatuses[0].LastTerminationState.Terminated)
	p.setMemoryLimit(ctx, t, "1Gi")
}

// testRevert deletes the ScratchVolume: the StatefulSet's template loses every entry the operator
// added, the pod rolls back and the server runs with its own tmpdir again, its data intact.
func (p *product) testRevert(m *mariadb) func(t *testing.T) {
	return func(t *testing.T) {
		ctx := t.Context()
		p.deleteScratchVolume(ctx, t, scratchName)
		sts, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var volumes []string
		for _, v := range sts.Spec.Template.Spec.Volumes {
			volumes = append(volumes, v.Name)
		}
		if strings.Join(volumes, ",") != strings.Join(m.volumes, ",") || len(sts.Spec.Template.Spec.InitContainers) != 0 {
			t.Errorf("after the deletion the template has volumes %v and %d init containers, want %v and none", volumes, len(sts.Spec.Template.Spec.InitContainers), m.volumes)
		}
		for k := range sts.Spec.Template.Annotations {
			if strings.Contains(k, v1alpha1.GroupVersion.Group) {
				t.Errorf("after the deletion the template keeps annotation %s", k)
			}
		}
		cms, err := p.cs.CoreV1().ConfigMaps(p.ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.ScratchVolumeLabel + "=" + scratchName})
		if err != nil {
			t.Fatal(err)
		}
		if len(cms.Items) != 0 {
			t.Errorf("after the deletion %d drop-in ConfigMaps of the ScratchVolume remain", len(cms.Items))
		}
		pod := p.databasePod(ctx, t)
		got := queryUntilAnswered(ctx, t, p.cfg, p.cs, pod, "SELECT @@tmpdir, (SELECT i FROM kept.t)")
		if want := m.tmpdir + "\t42"; got != want {
			t.Errorf("after the deletion the server answers %q, want its own tmpdir and the row: %q", got, want)
		}
	}
}

// testManagerKilledMidRollout applies the ScratchVolume again and SIGKILLs the leading manager's
// process as soon as the StatefulSet carries the injection, before its pod rolled: a manager
// (the restarted one or the other replica) takes over, the rollout completes, the ScratchVolume
// turns Ready, and the StatefulSet was written once.
func (p *product) testManagerKilledMidRollout(t *testing.T) {
	ctx := t.Context()
	before, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.applyScratchVolume(ctx, t, "128Mi", v1alpha1.MemoryValidate, "")
	waitFor(t, 2*time.Minute, "the StatefulSet carrying the injection", func() (bool, string) {
		sts, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return sts.Generation > before.Generation, fmt.Sprintf("generation %d", sts.Generation)
	})
	leader := p.killLeader(ctx, t)
	sv := p.waitScratchVolume(ctx, t, v1alpha1.ConditionReady, metav1.ConditionTrue)
	t.Logf("Ready after the leader %s was killed: %s", leader, meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionReady).Message)
	after, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation+1 {
		t.Errorf("the StatefulSet's generation went %d → %d across the kill, want one write", before.Generation, after.Generation)
	}
	pod := p.databasePod(ctx, t)
	assertInjected(ctx, t, p.cfg, p.cs, pod, v1alpha1.DefaultMySQLTmpdirMountPath, 128<<20, 128<<10)
}

// killLeader SIGKILLs the process of the manager pod holding the leader Lease, checks that the
// kubelet restarted it, and returns the pod's name.
func (p *product) killLeader(ctx context.Context, t *testing.T) string {
	t.Helper()
	l, err := p.cs.CoordinationV1().Leases(installNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		t.Fatalf("no leader: %v", err)
	}
	name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	pod, err := p.cs.CoreV1().Pods(installNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := p.node.ContainerPID(pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("failed to kill the leader %s (pid %d): %v", name, pid, err)
	}
	t.Logf("killed the leading manager %s (pid %d)", name, pid)
	restarts := restartCount(pod)
	waitFor(t, 2*time.Minute, "the killed manager restarted", func() (bool, string) {
		cur, err := p.cs.CoreV1().Pods(installNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return restartCount(cur) > restarts, podSummary(cur)
	})
	return name
}

func restartCount(pod *corev1.Pod) int32 {
	if len(pod.Status.ContainerStatuses) == 0 {
		return 0
	}
	return pod.Status.ContainerStatuses[0].RestartCount
}

func oomKilled(pod *corev1.Pod) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
			return true
		}
	}
	return false
}

// volumeFull reports whether a mariadb client error is the server's out-of-space error for a
// temporary table or file: "The table … is full" (ER_RECORD_FILE_FULL) or errno 28.
func volumeFull(msg string) bool {
	return strings.Contains(msg, "is full") || strings.Contains(msg, "No space left on device") || strings.Contains(msg, "Errcode: 28")
}

// agentMetric reads one sample of the node agent's metrics, from its pod's metrics port over the
// node's bridge: the value of the series name whose labels include every one of want, 0 when there
// is none yet.
func (p *product) agentMetric(ctx context.Context, t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	pods, err := p.installedPods(ctx, "app.kubernetes.io/component=node-agent")
	if err != nil || len(pods) != 1 || pods[0].Status.PodIP == "" {
		t.Fatalf("no agent pod with an address: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pods[0].Status.PodIP+":8080/metrics", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("failed to scrape the agent: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, name+"{") {
			continue
		}
		matches := true
		for k, v := range want {
			if !strings.Contains(series, fmt.Sprintf("%s=%q", k, v)) {
				matches = false
			}
		}
		if matches {
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// assertAgentSawTheFill reads what the agent, sampling the pod's RAM volume every second from its
// own pod, made of the query that filled it: the query's temporary table grows fastest just before
// it fails, so the sampled peak is below the size and the full moment can fall between samples; it
// is reported, not asserted. Then a file fills the volume and stays: the agent must report the size,
// a peak of all of it, and one full episode, which must end when the file goes.
func (p *product) assertAgentSawTheFill(ctx context.Context, t *testing.T, pod *corev1.Pod, size int64) {
	t.Helper()
	labels := map[string]string{"namespace": p.ns, "pod": pod.Name, "scratchvolume": scratchName}
	peakLabels := map[string]string{"namespace": p.ns, "pod": pod.Name, "scratchvolume": scratchName, "window": "pod"}
	var peak, full, volume, used float64
	waitFor(t, 30*time.Second, "the agent's figures for the volume", func() (bool, string) {
		peak = p.agentMetric(ctx, t, "dbtune_scratch_volume_peak_bytes", peakLabels)
		volume = p.agentMetric(ctx, t, "dbtune_scratch_volume_size_bytes", labels)
		return volume == float64(size) && peak > 0, fmt.Sprintf("peak %.0f, size %.0f", peak, volume)
	})
	// The server drops the failed query's temporary table; the file below starts a new full
	// episode only once a sample has seen the volume emptied in between (samples are a second
	// apart, the next statement is not).
	waitFor(t, 30*time.Second, "the agent seeing the volume emptied after the query", func() (bool, string) {
		used = p.agentMetric(ctx, t, "dbtune_scratch_volume_used_bytes", labels)
		return used < 0.5*volume, fmt.Sprintf("used %.0f of %.0f", used, volume)
	})
	fullBefore := p.agentMetric(ctx, t, "dbtune_scratch_volume_full_total", labels)
	t.Logf("sampled every second, the query's fill of %s peaked at %.0f of %.0f bytes (%.0f%%), full %.0f time(s)", pod.Name, peak, volume, 100*peak/volume, fullBefore)

	file := v1alpha1.DefaultMySQLTmpdirMountPath + "/agent-fill"
	if out, err := execInPod(ctx, p.cfg, p.cs, pod, "sh", "-c", "dd if=/dev/zero of="+file+" bs=1M 2>&1; ls -l "+file); err == nil {
		t.Logf("filling the volume: %s", out)
	}
	waitFor(t, 30*time.Second, "the agent reporting the volume full", func() (bool, string) {
		peak = p.agentMetric(ctx, t, "dbtune_scratch_volume_peak_bytes", peakLabels)
		full = p.agentMetric(ctx, t, "dbtune_scratch_volume_full_total", labels)
		used = p.agentMetric(ctx, t, "dbtune_scratch_volume_used_bytes", labels)
		return used >= 0.99*volume && peak >= used && full == fullBefore+1,
			fmt.Sprintf("used %.0f, peak %.0f, full %.0f times", used, peak, full)
	})
	p.assertStatusSawTheFill(ctx, t, pod, int64(peak), int64(full), size)
	if _, err := execInPod(ctx, p.cfg, p.cs, pod, "rm", file); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the agent reporting the volume emptied", func() (bool, string) {
		used = p.agentMetric(ctx, t, "dbtune_scratch_volume_used_bytes", labels)
		return used < 0.1*volume, fmt.Sprintf("used %.0f", used)
	})
	t.Logf("a file filling %s's volume: the agent reported %.0f of %.0f bytes used and one more full episode", pod.Name, peak, volume)
}

// assertStatusSawTheFill checks what reaches the user from the agent's figures, through the
// NodeIOProfile: the ScratchVolume's usage shows the agent's peak, Capacity is Full, the size
// recommended is twice the size (a full volume's peak only shows the size), and there is one
// ScratchVolumeFull Event for each time the agent found the volume full.
func (p *product) assertStatusSawTheFill(ctx context.Context, t *testing.T, pod *corev1.Pod, peak, episodes, size int64) {
	t.Helper()
	sv := &v1alpha1.ScratchVolume{}
	waitFor(t, 30*time.Second, "the ScratchVolume's status showing the full volume", func() (bool, string) {
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: scratchName}, sv); err != nil {
			return false, err.Error()
		}
		u, c := sv.Status.Usage, meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionCapacity)
		return u != nil && u.PeakBytes >= peak && u.PeakBytes >= size*99/100 && u.FullEpisodes == episodes && c != nil && c.Reason == v1alpha1.ReasonCapacityFull,
			fmt.Sprintf("usage %+v, Capacity %+v; want at least the agent's peak %d (99%% of %d) and %d full episode(s)", u, c, peak, size, episodes)
	})
	if got := sv.Status.RecommendedSize; got == nil || got.String() != "256Mi" {
		t.Errorf("recommended size %v for a full 128Mi volume, want 256Mi", got)
	}
	if len(sv.Status.Targets) != 1 || sv.Status.Targets[0].Usage == nil || sv.Status.Targets[0].Usage.Pods != 1 {
		t.Errorf("the target's usage is %+v, want the one pod", sv.Status.Targets)
	}
	waitFor(t, 30*time.Second, "one ScratchVolumeFull Event per full episode", func() (bool, string) {
		evs, err := p.cs.EventsV1().Events(p.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + decide.EventScratchVolumeFull})
		if err != nil {
			return false, err.Error()
		}
		var notes []string
		for _, ev := range evs.Items {
			if ev.Regarding.Name == scratchName && strings.Contains(ev.Note, pod.Name) {
				notes = append(notes, ev.Note)
			}
		}
		return int64(len(notes)) == episodes, fmt.Sprintf("%d Events %q, want %d", len(notes), notes, episodes)
	})
	c := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionCapacity)
	t.Logf("the ScratchVolume says: Capacity %s: %s", c.Reason, c.Message)
}
