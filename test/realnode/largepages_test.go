//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// pagesDeadline is how soon after the database container starts its scratch volume must run with
// large pages: the agent samples every second and sets the option at the first sample.
const pagesDeadline = 10 * time.Second

// spillRows are the rows of the sort that runs on the large-page tmpdir.
const spillRows = 20000

// assertLargePages checks, inside the rolled container, that the scratch tmpfs runs with
// huge=within_size, that the ScratchVolume's status says so for the pod with a time within
// pagesDeadline of the container's start, and that a sort merging through files in tmpdir runs
// on it.
func (p *product) assertLargePages(ctx context.Context, t *testing.T, sc serverCase, pod *corev1.Pod) {
	t.Helper()
	waitFor(t, time.Minute, sc.name+": the scratch tmpfs with huge=within_size in the container's /proc/mounts", func() (bool, string) {
		opts := p.scratchOptions(ctx, t, pod)
		return strings.Contains(opts, "huge=within_size"), opts
	})
	r := p.waitPodPages(ctx, t, sc.name, pod.Name, v1alpha1.LargePagesApplied)
	started := containerStart(pod)
	switch {
	case r.Huge != "within_size" || r.Time == nil:
		t.Errorf("%s: status.targets[].largePages says %+v, want within_size with a time", sc.name, r)
	case started.IsZero():
		t.Errorf("%s: pod %s has no running container start time", sc.name, pod.Name)
	case r.Time.Sub(started) > pagesDeadline:
		t.Errorf("%s: large pages were set %s after the container started, want at most %s", sc.name, r.Time.Sub(started), pagesDeadline)
	default:
		t.Logf("%s: large pages set %s after the container started (the status's times are whole seconds)", sc.name, r.Time.Sub(started).Round(time.Second))
	}

	// A sort with a 32 KiB buffer that fits the volume: merge passes through files in the RAM
	// tmpdir, and an answer. MySQL's sort keys of the VARCHAR(200) are several times the
	// payload, so the rows are few enough for its files too.
	out := p.serverSQL(ctx, t, sc, pod, fmt.Sprintf("SET SESSION sort_buffer_size = 32768;"+
		" SELECT id FROM kept.rows WHERE id <= %d ORDER BY payload DESC LIMIT 1 OFFSET %d;"+
		" SHOW SESSION STATUS LIKE 'Sort_merge_passes'", spillRows, spillRows-1))
	lines := strings.Split(out, "\n")
	passes := strings.Fields(lines[len(lines)-1])
	if n, err := strconv.Atoi(passes[len(passes)-1]); len(lines) != 2 || err != nil || n == 0 {
		t.Errorf("%s: the spilling sort answered %q, want a row and Sort_merge_passes above 0", sc.name, out)
	} else {
		t.Logf("%s: a sort of %d rows merged %d times through the large-page tmpdir", sc.name, spillRows, n)
	}
}

// testLargePagesLive turns large pages off and on again for a running server and restarts the
// node agent: each change reaches the mount within seconds, restarts no database, and a restarted
// agent finds the option set and reconfigures nothing.
func (p *product) testLargePagesLive(ctx context.Context, t *testing.T, sc serverCase, pod *corev1.Pod) {
	t.Helper()
	restarts := restartCount(pod)
	for _, step := range []struct {
		policy  v1alpha1.LargePagesPolicy
		state   v1alpha1.LargePagesState
		mounted func(string) bool
	}{
		{v1alpha1.LargePagesNever, v1alpha1.LargePagesDefault, func(o string) bool { return !strings.Contains(o, "huge=") }},
		{v1alpha1.LargePagesWithinSize, v1alpha1.LargePagesApplied, func(o string) bool { return strings.Contains(o, "huge=within_size") }},
	} {
		start := time.Now()
		p.setLargePages(ctx, t, sc.name, step.policy)
		waitFor(t, 30*time.Second, fmt.Sprintf("%s: the scratch tmpfs as spec.largePages %s asks", sc.name, step.policy), func() (bool, string) {
			opts := p.scratchOptions(ctx, t, pod)
			return step.mounted(opts), opts
		})
		t.Logf("%s: spec.largePages %s reached the container's mount %s after the edit", sc.name, step.policy, time.Since(start).Round(100*time.Millisecond))
		p.waitPodPages(ctx, t, sc.name, pod.Name, step.state)
	}

	agents, err := p.installedPods(ctx, "app.kubernetes.io/component=node-agent")
	if err != nil || len(agents) != 1 {
		t.Fatalf("the node agent's pods: %d, %v", len(agents), err)
	}
	old := agents[0]
	if err := p.cs.CoreV1().Pods(installNamespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var agent corev1.Pod
	waitFor(t, 3*time.Minute, "a new node agent pod ready", func() (bool, string) {
		pods, err := p.installedPods(ctx, "app.kubernetes.io/component=node-agent")
		if err != nil {
			return false, err.Error()
		}
		for _, a := range pods {
			if a.UID != old.UID && podReady(&a) {
				agent = a
				return true, ""
			}
		}
		return false, p.podsSummary(ctx, "app.kubernetes.io/component=node-agent")
	})
	var log string
	waitFor(t, time.Minute, "the new agent's word on "+pod.Name+"'s volume", func() (bool, string) {
		raw, err := p.cs.CoreV1().Pods(installNamespace).GetLogs(agent.Name, &corev1.PodLogOptions{Container: "node-agent"}).DoRaw(ctx)
		log = string(raw)
		return err == nil && strings.Contains(log, `"pod":"`+pod.Name+`"`), fmt.Sprint(err)
	})
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"pod":"`+pod.Name+`"`) && !strings.Contains(line, "Found a scratch volume's tmpfs as its ScratchVolume asks") {
			t.Errorf("the restarted agent, finding huge=within_size set on %s's volume, said: %s", pod.Name, line)
		}
	}
	if opts := p.scratchOptions(ctx, t, pod); !strings.Contains(opts, "huge=within_size") {
		t.Errorf("%s: after the agent restart the scratch tmpfs has %q", sc.name, opts)
	}
	if got := p.serverSQL(ctx, t, sc, pod, "SELECT i FROM kept.t"); got != "42" {
		t.Errorf("%s: after the agent restart the server answers %q, want 42", sc.name, got)
	}
	after, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if restartCount(after) != restarts {
		t.Errorf("%s: the database restarted while its pages changed (restarts %d → %d)", sc.name, restarts, restartCount(after))
	}
}

// scratchOptions are the options of the scratch tmpfs in the database container's /proc/mounts.
func (p *product) scratchOptions(ctx context.Context, t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	mounts, err := execInPod(ctx, p.cfg, p.cs, pod, "cat", "/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	m := mountOf(mounts, v1alpha1.DefaultMySQLTmpdirMountPath)
	if m == nil || m.point != v1alpha1.DefaultMySQLTmpdirMountPath {
		t.Fatalf("no mount at %s in the container: %+v", v1alpha1.DefaultMySQLTmpdirMountPath, m)
	}
	return m.options
}

// waitPodPages waits until the ScratchVolume's status reports state for pod, and returns it.
func (p *product) waitPodPages(ctx context.Context, t *testing.T, sv, pod string, state v1alpha1.LargePagesState) v1alpha1.PodLargePages {
	t.Helper()
	var got v1alpha1.PodLargePages
	waitFor(t, time.Minute, fmt.Sprintf("ScratchVolume %s reporting %s's pages %s", sv, pod, state), func() (bool, string) {
		var s v1alpha1.ScratchVolume
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: sv}, &s); err != nil {
			return false, err.Error()
		}
		for _, target := range s.Status.Targets {
			for _, lp := range target.LargePages {
				if lp.Pod == pod {
					got = lp
					return lp.State == state, fmt.Sprintf("%+v", lp)
				}
			}
		}
		return false, fmt.Sprintf("targets %+v", s.Status.Targets)
	})
	return got
}

// setLargePages applies spec.largePages as the user who owns the ScratchVolume.
func (p *product) setLargePages(ctx context.Context, t *testing.T, name string, policy v1alpha1.LargePagesPolicy) {
	t.Helper()
	var sv v1alpha1.ScratchVolume
	if err := p.cl.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: name}, &sv); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(sv.DeepCopy())
	sv.Spec.LargePages = policy
	if err := p.cl.Patch(ctx, &sv, patch); err != nil {
		t.Fatalf("failed to set spec.largePages of %s: %v", name, err)
	}
}

// containerStart is when the pod's first container last started running.
func containerStart(pod *corev1.Pod) time.Time {
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Running != nil {
			return s.State.Running.StartedAt.Time
		}
	}
	return time.Time{}
}
