package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

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
// image built here (no registry is reachable), the exporter sidecar replaced by the pause image, and
// the pods on the real node. Everything else is the sample's.
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

// cleanupRealNode undoes what a real node of the demo changed on the machine, once its processes
// are stopped (localcluster.Down stops them with the cluster's). Without root there was none.
func cleanupRealNode() error {
	if os.Geteuid() != 0 {
		return nil
	}
	return realnode.Cleanup(nil)
}
