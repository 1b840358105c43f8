//go:build realnode

package realnode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// helmRelease is the release name docs/install.md installs the chart as.
const helmRelease = "dbtune-scratch-operator"

// productCRDs are the CRDs the chart installs and keeps.
var productCRDs = []string{"scratchvolumes.dbtune.io", "nodeioprofiles.dbtune.io", "readaheadpolicies.dbtune.io"}

// helmCLI is the helm command built from the Helm Go module test/helm pins (`go tool helm` there),
// with its own configuration, cache and data directories, and the chart archive of `make chart`.
type helmCLI struct {
	bin, chart, kubeconfig, home string
}

// newHelm builds helm and packages the chart, as docs/install.md's user does.
func newHelm(ctx context.Context, t *testing.T, root, kubeconfig string) *helmCLI {
	t.Helper()
	h := &helmCLI{bin: filepath.Join(t.TempDir(), "helm"), kubeconfig: kubeconfig, home: t.TempDir()}
	build := exec.CommandContext(ctx, "go", "-C", filepath.Join(root, "test", "helm"), "build", "-o", h.bin, "helm.sh/helm/v4/cmd/helm")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building helm from test/helm's module: %v\n%s", err, out)
	}
	out, err := makeIn(ctx, root, "-s", "chart").CombinedOutput()
	if err != nil {
		t.Fatalf("make chart: %v\n%s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 || !strings.HasSuffix(lines[len(lines)-1], ".tgz") {
		t.Fatalf("make chart printed no archive: %s", out)
	}
	if h.chart = lines[len(lines)-1]; !filepath.IsAbs(h.chart) {
		h.chart = filepath.Join(root, h.chart)
	}
	return h
}

// run runs helm against the cluster in the install namespace and fails the test when it fails.
func (h *helmCLI) run(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--kubeconfig", h.kubeconfig, "--namespace", installNamespace)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"), "HELM_DATA_HOME="+filepath.Join(h.home, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// install runs docs/install.md's command, with the images imported into the node, never pulled.
func (h *helmCLI) install(ctx context.Context, t *testing.T) {
	t.Helper()
	h.run(ctx, t, "install", helmRelease, h.chart, "--create-namespace", "--wait", "--timeout", "5m",
		"--set", "manager.image.pullPolicy=Never", "--set", "nodeAgent.image.pullPolicy=Never")
}

// revision is the release's current revision and status, from `helm list`.
func (h *helmCLI) revision(ctx context.Context, t *testing.T) (int, string) {
	t.Helper()
	var releases []struct {
		Name     string `json:"name"`
		Revision string `json:"revision"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal([]byte(h.run(ctx, t, "list", "--output", "json")), &releases); err != nil {
		t.Fatal(err)
	}
	for _, r := range releases {
		if r.Name == helmRelease {
			var n int
			_, _ = fmt.Sscan(r.Revision, &n)
			return n, r.Status
		}
	}
	return 0, "not installed"
}

// TestHelmInstalledProduct installs the product from the chart archive with helm, as
// docs/install.md says, on a cluster whose only node is a real kubelet: the manager and the agent
// run in their pods as with kustomize, and a ScratchVolume turns a MariaDB's tmpdir into RAM. Then
// `helm upgrade` with changed values, and `helm uninstall`, which keeps the CRDs, the
// ScratchVolume and its injected StatefulSet and restarts no database; installing again adopts
// them, and deleting the ScratchVolume reverts the StatefulSet.
func TestHelmInstalledProduct(t *testing.T) {
	ctx := signalContext(t)
	p, e, _ := setUpProduct(ctx, t)
	h := newHelm(ctx, t, e.root, p.c.Kubeconfig())

	start := time.Now()
	h.install(ctx, t)
	p.waitInstalled(ctx, t)
	t.Logf("installed from %s and running %s after helm install", filepath.Base(h.chart), time.Since(start).Round(time.Millisecond))

	m := p.startMariaDB(ctx, t)
	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"node-agent-probes-its-node", p.testAgentProbe},
		{"node-agent-applies-and-reverts-read-ahead", p.testReadAhead},
		{"scratchvolume-ready", p.testHelmScratchVolume},
		{"containers-run-as-declared", p.testContainersAsDeclared},
		{"upgrade-with-changed-values-restarts-no-database", p.testHelmUpgrade(h)},
		{"uninstall-keeps-crds-scratchvolumes-and-databases", p.testHelmUninstall(h)},
		{"install-again-adopts-and-deletion-reverts", p.testHelmReinstall(h, m)},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			break
		}
	}
	t.Run("permissions-sufficient", p.testPermissions(false))
}

// testHelmScratchVolume applies a ScratchVolume to the MariaDB StatefulSet: the chart's manager
// injects it and the rolled pod's server keeps its temporary files on a tmpfs of the size.
func (p *product) testHelmScratchVolume(t *testing.T) {
	ctx := t.Context()
	p.applyScratchVolume(ctx, t, "128Mi", v1alpha1.MemoryValidate, v1alpha1.InjectionConfigFile)
	p.waitScratchVolume(ctx, t, v1alpha1.ConditionReady, metav1.ConditionTrue)
	pod := p.databasePod(ctx, t)
	assertInjected(ctx, t, p.cfg, p.cs, pod, v1alpha1.DefaultMySQLTmpdirMountPath, 128<<20, 128<<10)
}

// databaseState is what must not change when only the operator's install changes.
type databaseState struct {
	generation int64
	pod        *corev1.Pod
	restarts   int32
}

func (p *product) databaseState(ctx context.Context, t *testing.T) databaseState {
	t.Helper()
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := p.databasePod(ctx, t)
	return databaseState{generation: sts.Generation, pod: pod, restarts: restartCount(pod)}
}

// assertUntouched fails when the StatefulSet was written or its pod replaced or restarted since
// before, and returns the StatefulSet as it is now.
func (p *product) assertUntouched(ctx context.Context, t *testing.T, what string, before databaseState) *appsv1.StatefulSet {
	t.Helper()
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, mariadbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sts.Generation != before.generation {
		t.Errorf("%s wrote the database's StatefulSet: generation %d → %d", what, before.generation, sts.Generation)
	}
	now, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, before.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.UID != before.pod.UID || restartCount(now) != before.restarts {
		t.Errorf("%s restarted the database: pod %s uid %s → %s, restarts %d → %d", what, now.Name, before.pod.UID, now.UID, before.restarts, restartCount(now))
	}
	return sts
}

// assertScratchVolumeSettled checks that the ScratchVolume is Ready with no change pending.
func assertScratchVolumeSettled(t *testing.T, what string, sv *v1alpha1.ScratchVolume) {
	t.Helper()
	for _, c := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{{v1alpha1.ConditionReady, metav1.ConditionTrue}, {v1alpha1.ConditionChangesPending, metav1.ConditionFalse}} {
		if got := meta.FindStatusCondition(sv.Status.Conditions, c.typ); got == nil || got.Status != c.status {
			t.Errorf("%s: %s should be %s: %+v", what, c.typ, c.status, got)
		}
	}
}

// testHelmUpgrade upgrades the release with changed values — one manager replica with an extra
// argument, the agent without read-ahead —: the manager and the agent are replaced as the values
// say, and the database is neither written nor restarted.
func (p *product) testHelmUpgrade(h *helmCLI) func(*testing.T) {
	return func(t *testing.T) {
		ctx := t.Context()
		before := p.databaseState(ctx, t)
		start := time.Now()
		h.run(ctx, t, "upgrade", helmRelease, h.chart, "--reuse-values", "--wait", "--timeout", "5m",
			"--set", "manager.replicas=1", "--set", "manager.extraArgs={--max-in-flight=50%}", "--set", "nodeAgent.readAhead=false")
		if rev, status := h.revision(ctx, t); rev != 2 || status != "deployed" {
			t.Errorf("after helm upgrade the release is revision %d, %s; want 2, deployed", rev, status)
		}
		p.waitInstalled(ctx, t)
		managers := p.waitPodsSettled(ctx, t, "app.kubernetes.io/component=manager", 1)
		if args := managers[0].Spec.Containers[0].Args; !slices.Contains(args, "--max-in-flight=50%") {
			t.Errorf("the upgraded manager runs with %v, want --max-in-flight=50%% appended", args)
		}
		p.waitLeader(ctx, t, managers[0].Name)
		if _, err := p.cs.PolicyV1().PodDisruptionBudgets(installNamespace).Get(ctx, managerName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("with one replica the PodDisruptionBudget should be gone: %v", err)
		}
		agent := p.waitPodsSettled(ctx, t, "app.kubernetes.io/component=node-agent", 1)[0]
		if v := envValue(agent.Spec.Containers[0].Env, "DBTUNE_READ_AHEAD"); v != "false" {
			t.Errorf("the upgraded agent runs with DBTUNE_READ_AHEAD=%q, want false", v)
		}
		for _, v := range agent.Spec.Volumes {
			if v.HostPath != nil && strings.HasPrefix(v.HostPath.Path, "/sys") {
				t.Errorf("the agent without read-ahead still mounts %s from the host", v.HostPath.Path)
			}
		}
		t.Logf("upgraded, the new pods running and leading %s after helm upgrade", time.Since(start).Round(time.Millisecond))
		sv := p.waitScratchVolume(ctx, t, v1alpha1.ConditionReady, metav1.ConditionTrue)
		assertScratchVolumeSettled(t, "after helm upgrade", sv)
		p.assertUntouched(ctx, t, "helm upgrade", before)
	}
}

// testHelmUninstall uninstalls the release as docs/install.md describes: the operator and the
// agent go with their RBAC; the CRDs stay, and so do the ScratchVolume with its finalizer and the
// injected StatefulSet, whose database runs on with its RAM tmpdir.
func (p *product) testHelmUninstall(h *helmCLI) func(*testing.T) {
	return func(t *testing.T) {
		ctx := t.Context()
		before := p.databaseState(ctx, t)
		h.run(ctx, t, "uninstall", helmRelease, "--wait", "--timeout", "3m")
		waitFor(t, 2*time.Minute, "no pod of the product left", func() (bool, string) {
			pods, err := p.installedPods(ctx, "")
			if err != nil {
				return false, err.Error()
			}
			return len(pods) == 0, p.podsSummary(ctx, "")
		})
		if _, err := p.cs.AppsV1().Deployments(installNamespace).Get(ctx, managerName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the manager's Deployment should be gone: %v", err)
		}
		p.assertNoClusterObjectsOfTheRelease(ctx, t)
		for _, name := range productCRDs {
			crd := &metav1.PartialObjectMetadata{}
			crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			if err := p.cl.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				t.Errorf("helm uninstall should keep CRD %s: %v", name, err)
			} else if crd.DeletionTimestamp != nil {
				t.Errorf("CRD %s is being deleted", name)
			}
		}
		sv := &v1alpha1.ScratchVolume{}
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: scratchName}, sv); err != nil {
			t.Fatalf("helm uninstall should keep the ScratchVolume: %v", err)
		}
		if sv.DeletionTimestamp != nil || !slices.Contains(sv.Finalizers, v1alpha1.ScratchVolumeFinalizer) {
			t.Errorf("the kept ScratchVolume should keep its finalizer and not be deleted: finalizers %v, deleted %v", sv.Finalizers, sv.DeletionTimestamp)
		}
		p.assertUntouched(ctx, t, "helm uninstall", before)
		assertInjected(ctx, t, p.cfg, p.cs, before.pod, v1alpha1.DefaultMySQLTmpdirMountPath, 128<<20, 128<<10)
	}
}

// assertNoClusterObjectsOfTheRelease fails when a cluster-scoped object of the release other than
// a kept CRD is left: ClusterRoles, their bindings, the PriorityClass.
func (p *product) assertNoClusterObjectsOfTheRelease(ctx context.Context, t *testing.T) {
	t.Helper()
	ofRelease := client.MatchingLabels{"app.kubernetes.io/managed-by": "Helm"}
	lists := []client.ObjectList{&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &schedulingv1.PriorityClassList{}}
	for _, list := range lists {
		if err := p.cl.List(ctx, list, ofRelease); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			o := item.(client.Object)
			if o.GetAnnotations()["meta.helm.sh/release-name"] == helmRelease {
				t.Errorf("helm uninstall left %T %s", o, o.GetName())
			}
		}
	}
}

// testHelmReinstall installs the chart again over what the uninstall kept: the kept CRDs are
// adopted, the new operator takes the ScratchVolume up without writing the StatefulSet, and
// deleting the ScratchVolume reverts it.
func (p *product) testHelmReinstall(h *helmCLI, m *mariadb) func(*testing.T) {
	return func(t *testing.T) {
		ctx := t.Context()
		before := p.databaseState(ctx, t)
		h.install(ctx, t)
		if rev, status := h.revision(ctx, t); rev != 1 || status != "deployed" {
			t.Errorf("installed again, the release is revision %d, %s; want 1, deployed", rev, status)
		}
		p.waitInstalled(ctx, t)
		sv := p.waitScratchVolume(ctx, t, v1alpha1.ConditionReady, metav1.ConditionTrue)
		assertScratchVolumeSettled(t, "installed again", sv)
		p.assertUntouched(ctx, t, "installing again", before)
		p.testRevert(m)(t)
	}
}

// waitPodsSettled waits until exactly n pods match selector, none of them terminating, all ready,
// and returns them.
func (p *product) waitPodsSettled(ctx context.Context, t *testing.T, selector string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, 3*time.Minute, fmt.Sprintf("%d ready pods of %s", n, selector), func() (bool, string) {
		var err error
		if pods, err = p.installedPods(ctx, selector); err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range pods {
			if pods[i].DeletionTimestamp == nil && podReady(&pods[i]) {
				ready++
			}
		}
		return ready == n && len(pods) == n, p.podsSummary(ctx, selector)
	})
	return pods
}

// waitLeader waits until the pod holds the leader Lease.
func (p *product) waitLeader(ctx context.Context, t *testing.T, pod string) {
	t.Helper()
	waitFor(t, 2*time.Minute, pod+" holding the leader Lease", func() (bool, string) {
		l, err := p.cs.CoordinationV1().Leases(installNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return strings.HasPrefix(holder, pod), "holder " + holder
	})
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
