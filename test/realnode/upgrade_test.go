//go:build realnode

package realnode_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// upgradeVersion is the version of the manager image the upgrade installs.
const upgradeVersion = "v-next"

// testUpgrade upgrades the installed manager, as a user applies a new release, while the MariaDB
// target is Ready with its RAM volume: the new manager takes over and checks every target, and the
// database pod is the same pod, not restarted, its StatefulSet not written.
func (p *product) testUpgrade(e env) func(*testing.T) {
	return func(t *testing.T) {
		ctx := t.Context()
		sv := p.waitScratchVolume(ctx, t, v1alpha1.ConditionReady, metav1.ConditionTrue)
		before, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := p.databasePod(ctx, t)
		restarts := restartCount(pod)

		dir := t.TempDir()
		build := exec.CommandContext(ctx, "go", "-C", filepath.Join(e.root, "hack", "images"), "run", ".", "-repo", "../..", "-out", dir,
			"-version", upgradeVersion, "-registry", "dbtune", "-platforms", "linux/amd64", "-revision", "upgrade-test")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the %s manager image: %v\n%s", upgradeVersion, err, out)
		}
		if err := p.node.ImportImage(ctx, filepath.Join(dir, "manager.tar")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p.installWith(ctx, t, e, "images:\n  - name: dbtune/scratch-operator\n    newTag: "+upgradeVersion+"\n")
		waitFor(t, 4*time.Minute, "every manager replica running "+upgradeVersion, func() (bool, string) {
			pods, err := p.installedPods(ctx, "app.kubernetes.io/component=manager")
			if err != nil {
				return false, err.Error()
			}
			upgraded := 0
			for _, m := range pods {
				if m.DeletionTimestamp == nil && strings.HasSuffix(m.Spec.Containers[0].Image, ":"+upgradeVersion) && podReady(&m) {
					upgraded++
				}
			}
			return upgraded == len(pods) && upgraded == 2, p.podsSummary(ctx, "app.kubernetes.io/component=manager")
		})
		waitFor(t, 2*time.Minute, "the upgraded manager reporting on the target", func() (bool, string) {
			if err := p.cl.Get(ctx, client.ObjectKeyFromObject(sv), sv); err != nil {
				return false, err.Error()
			}
			if len(sv.Status.Targets) != 1 || sv.Status.Targets[0].Applied == nil {
				return false, fmt.Sprintf("targets %+v", sv.Status.Targets)
			}
			return sv.Status.Targets[0].Applied.Version == upgradeVersion, "applied by " + sv.Status.Targets[0].Applied.Version
		})
		t.Logf("upgraded to %s and adopted in %s", upgradeVersion, time.Since(start).Round(time.Millisecond))

		after, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.Generation != before.Generation {
			t.Errorf("the upgrade wrote the StatefulSet: generation %d → %d", before.Generation, after.Generation)
		}
		now, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if now.UID != pod.UID || restartCount(now) != restarts {
			t.Errorf("the upgrade restarted the database: pod %s uid %s → %s, restarts %d → %d", pod.Name, pod.UID, now.UID, restarts, restartCount(now))
		}
		for _, c := range []struct {
			typ    string
			status metav1.ConditionStatus
		}{{v1alpha1.ConditionReady, metav1.ConditionTrue}, {v1alpha1.ConditionChangesPending, metav1.ConditionFalse}} {
			if got := meta.FindStatusCondition(sv.Status.Conditions, c.typ); got == nil || got.Status != c.status {
				t.Errorf("after the upgrade %s should be %s: %+v", c.typ, c.status, got)
			}
		}
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
