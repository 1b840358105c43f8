//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/realnode"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// What config/default installs, by name.
const (
	installNamespace = "dbtune-system"
	managerName      = "dbtune-scratch-operator"
	agentName        = "dbtune-node-agent"
	leaderLease      = "scratch-operator.dbtune.io"
)

// productHostPaths are the host paths the installed node agent creates (its hostPath volumes of type
// DirectoryOrCreate): removed with the node, like the node's own.
var productHostPaths = []string{"/var/lib/dbtune-node-agent", "/run/dbtune-node-agent"}

// product is the installed product on a real node, and a user's MariaDB beside it.
type product struct {
	c    *localcluster.Cluster
	node *realnode.Node
	cs   kubernetes.Interface
	cl   client.Client
	cfg  *rest.Config
	// ns is the user's namespace, with the MariaDB StatefulSet.
	ns string
}

// TestInstalledProduct installs config/default as a user would (`kubectl apply --server-side -k`,
// with an overlay that only forbids pulling the images imported from `make images`) on a cluster
// whose only node is a real kubelet, then drives it as a user would: a MariaDB StatefulSet and a
// ScratchVolume, and what follows.
func TestInstalledProduct(t *testing.T) {
	ctx := signalContext(t)
	p, e, servers := setUpProduct(ctx, t)
	start := time.Now()
	p.install(ctx, t, e)
	p.waitInstalled(ctx, t)
	t.Logf("installed and running %s after kubectl apply", time.Since(start).Round(time.Millisecond))

	t.Run("node-agent-probes-its-node", p.testAgentProbe)
	t.Run("node-agent-applies-and-reverts-read-ahead", p.testReadAhead)
	m := p.startMariaDB(ctx, t)
	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"scratchvolume-ready-and-full-volume-fails-queries", p.testScratchVolume},
		{"memory-check-refuses-and-ignore-oom-kills", p.testMemoryCheck},
		{"deletion-reverts", p.testRevert(m)},
		{"manager-killed-mid-rollout", p.testManagerKilledMidRollout},
		{"manager-upgrade-restarts-no-database", p.testUpgrade(e)},
		{"mysql-9.7-and-mariadb-11.8", p.testServers(servers)},
		{"pod-level-resources-and-namespace-rules", p.testNamespaceRules},
	}
	ranAll := true
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			ranAll = false
			break
		}
	}
	t.Run("containers-run-as-declared", p.testContainersAsDeclared)
	t.Run("permissions-used-and-sufficient", p.testPermissions(ranAll))
}

// setUpProduct starts what an installed product runs on: a control plane that issues service
// account tokens and audits their requests, a real node, and the product's and database images
// imported into the node. It returns the product before its install, the environment and the
// database images by their hack/images name.
func setUpProduct(ctx context.Context, t *testing.T) (*product, env, map[string]string) {
	t.Helper()
	e := requireEnv(t)
	requireDatabaseImageParts(t)
	absent := realnode.AbsentHostPaths(productHostPaths...)

	start := time.Now()
	images, servers := buildProductImages(ctx, t, e.root)
	t.Logf("images built in %s", time.Since(start).Round(time.Millisecond))

	nodeDir := ""
	t.Cleanup(func() {
		// Runs last, after the node and the cluster stopped.
		if nodeDir != "" {
			assertRestored(t, env{sysctls: e.sysctls, absent: absent}, nodeDir)
		}
	})
	c := startClusterWith(ctx, t, e, t.TempDir(), func(o *localcluster.Options) {
		o.Nodes = []localcluster.NodeSpec{}
		o.ServiceAccountTokens = true
		o.AuditServiceAccounts = true
	})
	node := startNodeWith(ctx, t, e, c, t.TempDir(), func(o *realnode.Options) { o.PodHostPaths = productHostPaths })
	nodeDir = node.Dir()
	start = time.Now()
	for _, image := range images {
		if err := node.ImportImage(ctx, image); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("images imported in %s", time.Since(start).Round(time.Millisecond))

	log.SetLogger(logr.Discard())
	p := &product{c: c, node: node, cfg: c.Config()}
	var err error
	if p.cs, err = kubernetes.NewForConfig(p.cfg); err != nil {
		t.Fatal(err)
	}
	if p.cl, err = client.New(p.cfg, client.Options{Scheme: testenv.Scheme()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			p.dumpInstalledPods(t)
		}
	})
	return p, e, servers
}

// requireDatabaseImageParts skips (fails in strict mode) when the database images cannot be built:
// without mmdebstrap, each needs its root file system in hack/images' cache.
func requireDatabaseImageParts(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("mmdebstrap"); err == nil {
		return
	}
	for _, database := range []string{"mariadb", "mariadb-sid", "mysql-sid"} {
		if !testenv.CachedRootfs(database) {
			testenv.SkipOrFail(t, "mmdebstrap is not installed and no %s root file system is cached: apt-get install mmdebstrap", database)
		}
	}
}

// buildProductImages runs `make images` for this machine's platform, as a user building the
// images would, and the database images: it returns the tarballs to import, and the references of
// the database images other than MariaDB 10.11 by their hack/images name. They are built once for
// all the tests of a run: each imports the same files into a node of its own.
func buildProductImages(ctx context.Context, t *testing.T, root string) (tarballs []string, refs map[string]string) {
	t.Helper()
	productImages.once.Do(func() { productImages.tarballs, productImages.refs, productImages.err = makeProductImages(ctx, root) })
	if productImages.err != nil {
		t.Fatal(productImages.err)
	}
	return productImages.tarballs, productImages.refs
}

// productImages are the images buildProductImages built.
var productImages struct {
	once     sync.Once
	tarballs []string
	refs     map[string]string
	err      error
}

func makeProductImages(ctx context.Context, root string) (tarballs []string, refs map[string]string, err error) {
	cmd := makeIn(ctx, root, "images", "PLATFORMS=linux/amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("make images: %w\n%s", err, out)
	}
	dir := filepath.Join(root, "bin", "images")
	tarballs = []string{filepath.Join(dir, "manager.tar"), filepath.Join(dir, "node-agent.tar")}
	refs = map[string]string{}
	for _, database := range []string{"mariadb", "mariadb-sid", "mysql-sid"} {
		tarball, ref, err := realnode.BuildDatabaseImage(ctx, root, dir, database)
		if err != nil {
			return nil, nil, err
		}
		tarballs = append(tarballs, tarball)
		refs[database] = ref
	}
	return tarballs, refs, nil
}

// makeIn is make run in the repository root as a user runs it from a shell: without the flags
// and level of the make that may run these tests (make test runs them beside another lane, with
// -j2), which would make it print its directories and warn about the job server.
func makeIn(ctx context.Context, root string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "make", append([]string{"-C", root}, args...)...)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// startNodeWith is startNode with options changed by change.
func startNodeWith(ctx context.Context, t *testing.T, e env, c *localcluster.Cluster, imageDir string, change func(*realnode.Options)) *realnode.Node {
	t.Helper()
	pause, err := realnode.BuildPauseImage(ctx, e.root, realnode.DefaultBusybox, imageDir)
	if err != nil {
		t.Fatal(err)
	}
	opts := realnode.Options{
		Cluster: c, BinDir: e.binDir, ContainerdDir: e.containerdDir, PauseImage: pause, Logf: t.Logf,
	}
	if change != nil {
		change(&opts)
	}
	n, err := realnode.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("failed to stop the real node: %v", err)
		}
	})
	return n
}

// localImagesOverlay is the one change to config/default for this node: its images are imported,
// not pulled, so the pods must never try a registry.
const localImagesOverlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
patches:
  - target: {group: apps, kind: Deployment, name: %s}
    patch: &never |-
      - op: replace
        path: /spec/template/spec/containers/0/imagePullPolicy
        value: Never
  - target: {group: apps, kind: DaemonSet, name: %s}
    patch: *never
%s`

// install applies config/default through the overlay with kubectl, as the install guide says.
func (p *product) install(ctx context.Context, t *testing.T, e env) { p.installWith(ctx, t, e, "") }

// installWith is install with more of the overlay: an images list, as an upgrade changes it.
func (p *product) installWith(ctx context.Context, t *testing.T, e env, more string) {
	t.Helper()
	dir := t.TempDir()
	base, err := filepath.Rel(dir, filepath.Join(e.root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := fmt.Sprintf(localImagesOverlay, base, managerName, agentName, more)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	p.kubectl(ctx, t, e, "apply", "--server-side", "-k", dir)
}

// kubectl runs the pinned kubectl against the cluster and fails the test when it fails.
func (p *product) kubectl(ctx context.Context, t *testing.T, e env, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubectl"), append([]string{"--kubeconfig", p.c.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitInstalled waits until both manager replicas are available, one of them holds the leader
// Lease, and the agent's pod on the node is ready.
func (p *product) waitInstalled(ctx context.Context, t *testing.T) {
	t.Helper()
	waitFor(t, 4*time.Minute, "the manager Deployment available with both replicas", func() (bool, string) {
		d, err := p.cs.AppsV1().Deployments(installNamespace).Get(ctx, managerName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		want := *d.Spec.Replicas
		return d.Status.AvailableReplicas == want && d.Status.UpdatedReplicas == want,
			fmt.Sprintf("%d of %d available; %s", d.Status.AvailableReplicas, want, p.podsSummary(ctx, "app.kubernetes.io/component=manager"))
	})
	waitFor(t, 2*time.Minute, "a manager pod holding the leader Lease", func() (bool, string) {
		l, err := p.cs.CoordinationV1().Leases(installNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return strings.HasPrefix(holder, managerName+"-"), "holder " + holder
	})
	waitFor(t, 3*time.Minute, "the node agent's pod ready on the node", func() (bool, string) {
		ds, err := p.cs.AppsV1().DaemonSets(installNamespace).Get(ctx, agentName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ds.Status.DesiredNumberScheduled == 1 && ds.Status.NumberReady == 1,
			fmt.Sprintf("%d of %d ready; %s", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled, p.podsSummary(ctx, "app.kubernetes.io/component=node-agent"))
	})
}

// installedPods lists the pods of the install namespace with a label selector.
func (p *product) installedPods(ctx context.Context, selector string) ([]corev1.Pod, error) {
	pods, err := p.cs.CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return pods.Items, nil
}

func (p *product) podsSummary(ctx context.Context, selector string) string {
	pods, err := p.installedPods(ctx, selector)
	if err != nil {
		return err.Error()
	}
	out := make([]string, 0, len(pods))
	for i := range pods {
		out = append(out, pods[i].Name+": "+podSummary(&pods[i]))
	}
	return strings.Join(out, "; ")
}

// dumpInstalledPods logs the state and the end of the log of every pod of the install namespace.
func (p *product) dumpInstalledPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := p.installedPods(ctx, "")
	if err != nil {
		t.Logf("failed to list the installed pods: %v", err)
		return
	}
	tail := int64(40)
	for i := range pods {
		pod := &pods[i]
		t.Logf("pod %s: %s", pod.Name, podSummary(pod))
		for _, c := range pod.Spec.Containers {
			logs, err := p.cs.CoreV1().Pods(installNamespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail}).DoRaw(ctx)
			t.Logf("the end of %s/%s's log (%v):\n%s", pod.Name, c.Name, err, logs)
		}
	}
}

// testAgentProbe checks that the agent, from its pod, probed the node's memory-backed emptyDir and
// its hostPath directory on the disk and published them in the node's NodeIOProfile.
func (p *product) testAgentProbe(t *testing.T) {
	ctx := t.Context()
	var profile v1alpha1.NodeIOProfile
	waitFor(t, 3*time.Minute, "the node's NodeIOProfile with both targets probed", func() (bool, string) {
		if err := p.cl.Get(ctx, client.ObjectKey{Name: p.node.Name()}, &profile); err != nil {
			return false, err.Error()
		}
		probed := meta.FindStatusCondition(profile.Status.Conditions, v1alpha1.ConditionProbed)
		if probed == nil || probed.Status != metav1.ConditionTrue {
			return false, fmt.Sprintf("Probed: %+v", probed)
		}
		return len(profile.Status.Targets) == 2, fmt.Sprintf("%d targets", len(profile.Status.Targets))
	})
	if got := p.agentMetric(ctx, t, "dbtune_build_info", map[string]string{"component": "node-agent", "version": "dev"}); got != 1 {
		t.Errorf("the agent's dbtune_build_info{component=node-agent,version=dev} is %v, want 1 (make images builds VERSION=dev)", got)
	}
	for _, target := range profile.Status.Targets {
		if target.Error != "" {
			t.Errorf("target %s failed: %s", target.Name, target.Error)
			continue
		}
		fs := target.Provenance.FilesystemType
		switch target.Name {
		case "tmpfs":
			if fs != "tmpfs" || target.Path != "/probe/tmpfs" {
				t.Errorf("target tmpfs is %s at %s, want the tmpfs emptyDir at /probe/tmpfs", fs, target.Path)
			}
		case "disk":
			if fs == "" || fs == "tmpfs" || target.Path != "/probe/disk" {
				t.Errorf("target disk is %q at %s, want the node's disk file system at /probe/disk", fs, target.Path)
			}
		default:
			t.Errorf("unexpected target %s", target.Name)
		}
		if target.SequentialWrite == nil || target.SequentialWrite.BufferedBytesPerSecond <= 0 {
			t.Errorf("target %s has no sequential write result: %+v", target.Name, target.SequentialWrite)
			continue
		}
		t.Logf("target %s (%s on %s): buffered writes %d MiB/s", target.Name, fs, target.Provenance.Device, target.SequentialWrite.BufferedBytesPerSecond>>20)
		p.assertTempFiles(t, target)
	}
	c := profile.Status.Comparison
	if c == nil || c.TempFileRatio == "" || c.LargePageTempFileRatio == "" {
		t.Errorf("the comparison has no temporary-file ratios: %+v", c)
	} else {
		t.Logf("temporary files, tmpfs as mounted / disk %s, with large pages / disk %s", c.TempFileRatio, c.LargePageTempFileRatio)
	}
	if thp := profile.Status.TransparentHugePages; thp == nil || thp.ShmemEnabled == "" || thp.TmpfsDefault == "" {
		t.Errorf("the profile does not record the kernel's large-page settings: %+v", thp)
	}
}

// assertTempFiles checks a target's temporary-file results: every size measured on the target
// and, on the tmpfs, on the agent's own tmpfs with huge=within_size, which needs the
// SYS_ADMIN the default install gives the agent.
func (p *product) assertTempFiles(t *testing.T, target v1alpha1.ProbeTargetResult) {
	t.Helper()
	check := func(what string, results []v1alpha1.TempFileResult, option string) {
		if len(results) == 0 {
			t.Errorf("target %s has no %s results", target.Name, what)
		}
		for _, r := range results {
			if r.Unsupported != "" || r.Files == 0 || r.BytesPerSecond <= 0 || !strings.Contains(r.MountOptions, option) {
				t.Errorf("target %s, %s of %d bytes: %+v, want files, a rate and %q among the mount options", target.Name, what, r.FileSizeBytes, r, option)
			}
		}
	}
	check("temporary-file", target.TempFiles, "")
	if target.Kind == v1alpha1.TargetTmpfs {
		check("large-page temporary-file", target.LargePageTempFiles, "huge=within_size")
	}
}
