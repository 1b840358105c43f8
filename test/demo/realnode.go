package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/realnode"
)

// The demo adds a real node (containerd, runc and a kubelet) beside the fake ones when everything it
// needs is already on the machine, and runs the sample MariaDB StatefulSet there; otherwise kwok plays
// the kubelet, as everywhere else. It never builds the node's binaries or the MariaDB image itself:
// that takes minutes the first time, which a demo should not spend unasked.

// realNodeSample is where the real-node variant of the sample StatefulSet is written, for the user
// to read: only its images and node change.
const realNodeSample = "mariadb-statefulset-realnode.yaml"

// realNodeMissing returns what keeps a real node out of the demo, empty when it can join, and the
// containerd directory.
func (d *demo) realNodeMissing() (missing []string, containerdDir string) {
	if os.Geteuid() != 0 {
		return []string{"root"}, ""
	}
	_, containerdDir, err := realnode.DefaultDirs(d.root)
	if err != nil {
		return []string{err.Error()}, ""
	}
	for _, name := range realnode.KubeletBinaries {
		if _, err := os.Stat(filepath.Join(d.binDir, name)); err != nil {
			missing = append(missing, name+" (make k8s-binaries-node)")
		}
	}
	for _, name := range realnode.ContainerdBinaries {
		if _, err := os.Stat(filepath.Join(containerdDir, name)); err != nil {
			missing = append(missing, name+" (make k8s-binaries-node)")
			break
		}
	}
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc (apt-get install runc)")
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		missing = append(missing, "the CNI plugins (apt-get install containernetworking-plugins)")
	}
	if _, err := os.Stat(realnode.DefaultBusybox); err != nil {
		missing = append(missing, "busybox (apt-get install busybox-static)")
	}
	if _, err := os.Stat(d.mariadbImage()); err != nil {
		missing = append(missing, "the MariaDB image (make images-mariadb)")
	}
	return missing, containerdDir
}

func (d *demo) mariadbImage() string { return filepath.Join(d.root, "bin", "images", "mariadb.tar") }

// startRealNode starts the node in the demo's cluster, left running like the cluster, and imports
// the MariaDB image.
func (d *demo) startRealNode(ctx context.Context, c *localcluster.Cluster, containerdDir string) (*realnode.Node, error) {
	d.step("building the pause image from busybox…")
	pause, err := realnode.BuildPauseImage(ctx, d.root, realnode.DefaultBusybox, filepath.Join(d.stateDir, "images"))
	if err != nil {
		return nil, err
	}
	d.step("starting a real node: containerd, runc and a kubelet (the machine's changes are undone by make demo-down)")
	n, err := realnode.Start(ctx, realnode.Options{
		Cluster: c, BinDir: d.binDir, ContainerdDir: containerdDir, PauseImage: pause,
		Logf: func(format string, args ...any) { d.step("  "+format, args...) },
	})
	if err != nil {
		return nil, err
	}
	d.step("importing %s into the node", d.rel(d.mariadbImage()))
	if err := n.ImportImage(ctx, d.mariadbImage()); err != nil {
		return nil, errors.Join(err, n.Stop())
	}
	return n, nil
}

// writeRealNodeSample writes the sample StatefulSet as it runs on the real node: MariaDB from the
// image built here (no registry is reachable) with a root that has no password instead of a random
// one, the exporter sidecar replaced by the pause image, and the pods on the real node. Everything
// else is the sample's.
func (d *demo) writeRealNodeSample(nodeName string) (string, error) {
	data, err := os.ReadFile(filepath.Join(d.root, "config", "samples", "mariadb-statefulset.yaml"))
	if err != nil {
		return "", err
	}
	var sts appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(data, &sts); err != nil {
		return "", fmt.Errorf("the sample StatefulSet: %w", err)
	}
	spec := &sts.Spec.Template.Spec
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.ImagePullPolicy = corev1.PullNever
		if c.Name == statefulSet {
			c.Image = realnode.MariaDBImage
			// The demo asks the server through kubectl exec, as root without a password.
			c.Env = []corev1.EnvVar{{Name: "MARIADB_ALLOW_EMPTY_ROOT_PASSWORD", Value: "1"}}
		} else {
			c.Image = realnode.PauseImage
		}
	}
	if !slices.ContainsFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == statefulSet }) {
		return "", fmt.Errorf("the sample StatefulSet has no container %q", statefulSet)
	}
	spec.NodeSelector = map[string]string{corev1.LabelHostname: nodeName}
	out, err := yaml.Marshal(&sts)
	if err != nil {
		return "", err
	}
	path := filepath.Join(d.stateDir, realNodeSample)
	header := "# config/samples/mariadb-statefulset.yaml for the demo's real node: local images, pods on the real node.\n"
	return path, os.WriteFile(path, append([]byte(header), out...), 0o644)
}

// showInsideTheRealPod asks MariaDB in the first pod, through kubectl exec, where its temporary
// directories are, and shows the file systems under them.
func (d *demo) showInsideTheRealPod(ctx context.Context) {
	d.section("Inside the pod, on the real node")
	pod := statefulSet + "-0"
	d.show(ctx, "exec", "-n", demoNamespace, pod, "-c", statefulSet, "--",
		"mariadb", "-e", "SELECT @@tmpdir, @@slave_load_tmpdir, @@innodb_tmpdir")
	d.show(ctx, "exec", "-n", demoNamespace, pod, "-c", statefulSet, "--",
		"df", "-h", "--output=source,fstype,size,target", v1alpha1.DefaultMySQLTmpdirMountPath, "/var/lib/mysql")
}

// startRealNodeAgent runs a second node agent for the real node, as the DaemonSet would run one
// there: it samples the RAM volumes of the MariaDB pods under the node's kubelet root and writes
// their figures into the node's NodeIOProfile, from which the operator fills the ScratchVolume's
// usage and recommendation.
func (d *demo) startRealNodeAgent(ctx context.Context, c *localcluster.Cluster, r *results) error {
	if r.realNode == "" {
		return nil
	}
	// Directories of its own to probe, beside the other agent's.
	tmpfs, disk := filepath.Join(r.tmpfs, r.realNode), filepath.Join(r.disk, r.realNode)
	for _, dir := range []string{tmpfs, disk} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return d.startWithProbes(ctx, c, "node-agent-"+r.realNode, d.bin("node-agent"), "run",
		"--kubeconfig="+d.kubeconfig(), "--node-name="+r.realNode, "--lease-namespace="+agentNamespace,
		"--kubelet-root="+r.realNodeKubeletRoot, "--target=tmpfs="+tmpfs, "--target=disk="+disk,
		"--read-ahead-state-dir="+filepath.Join(d.stateDir, "read-ahead-state-"+r.realNode))
}

// spillQuery holds about 60 MB of temporary table in MariaDB's tmpdir for a few seconds: a
// session's temporary MyISAM table of 300 000 192-byte strings (MyISAM writes its rows to the file
// at once, where Aria would keep them in its page cache), kept while the session sleeps, so that
// the agent's one-second samples see all of it (a sort that spills and finishes within a second
// can fall between two samples).
const spillQuery = "CREATE DATABASE IF NOT EXISTS demo; " +
	"CREATE TEMPORARY TABLE demo.spill ENGINE=MyISAM AS SELECT REPEAT(MD5(seq), 6) AS p FROM mysql.seq_1_to_300000; " +
	"SELECT SLEEP(3)"

// spilledBytes is less than the spill holds, more than anything else in the volume.
const spilledBytes = 16 << 20

// spillIntoTheScratchVolume runs spillQuery in the first pod and waits until the operator reports
// the peak the node agent sampled. A query that fills the volume is a result too: the status then
// says Full and recommends more.
func (d *demo) spillIntoTheScratchVolume(ctx context.Context) error {
	d.step("a session holding a temporary table of about 60 MB in %s-0's RAM tmpdir for 3 s…", statefulSet)
	out, err := d.kubectl(ctx, "exec", "-n", demoNamespace, statefulSet+"-0", "-c", statefulSet, "--", "mariadb", "-e", spillQuery)
	switch {
	case err != nil && bytes.Contains(out, []byte("No space left on device")):
		d.step("  it filled the volume and failed with \"No space left on device\"; the status says so below")
	case err != nil:
		return err
	}
	d.step("waiting for the node agent's figures in the ScratchVolume's status…")
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := d.kubectl(ctx, "get", "scratchvolume", scratchVolume, "-n", demoNamespace, "-o", "jsonpath={.status.usage.peakBytes}")
		if peak, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && peak >= spilledBytes {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("failed to read the ScratchVolume's usage: %w", err)
			}
			return fmt.Errorf("a minute after the query the ScratchVolume's status shows a peak of %s bytes, not the spill's: see the node agent's log", strings.TrimSpace(string(out)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// showUsage shows what the node agent measured and what the operator recommends.
func (d *demo) showUsage(ctx context.Context) {
	d.section("How full the RAM volumes have been, and the size they call for")
	d.show(ctx, "get", "scratchvolume", scratchVolume, "-n", demoNamespace)
	d.show(ctx, "get", "scratchvolume", scratchVolume, "-n", demoNamespace, "-o",
		`jsonpath={.status.usage}{"\n"}{.status.recommendedSize}{"\n"}{.status.conditions[?(@.type=="Capacity")].message}{"\n"}`)
}

// cleanupRealNode undoes what a real node of the demo changed on the machine, once its processes
// are stopped (localcluster.Down stops them with the cluster's). Without root there was none.
func cleanupRealNode() error {
	if os.Geteuid() != 0 {
		return nil
	}
	return realnode.Cleanup(nil)
}
