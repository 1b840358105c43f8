package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// k8sNamespace is containerd's namespace for everything the CRI plugin (the kubelet) runs.
const k8sNamespace = "k8s.io"

// startContainerd writes containerd's and CNI's configuration, starts containerd and waits until
// it answers on its socket.
func (n *Node) startContainerd(ctx context.Context) error {
	l := n.layout
	for _, dir := range []string{RuntimeDir, l.containerdRoot(), l.containerdState(), l.containerdOpt(), l.cdiDir(), l.cniConfDir(), l.cniIPAMDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	conflist, err := cniConfList(l, n.opts.PodSubnet)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.cniConfDir(), "10-"+cniNetwork+".conflist"), conflist, 0o644); err != nil {
		return fmt.Errorf("failed to write the CNI configuration: %w", err)
	}
	config := containerdConfig(l, n.opts.Runc, n.opts.CNIBinDir)
	if err := os.WriteFile(l.containerdConfig(), []byte(config), 0o644); err != nil {
		return fmt.Errorf("failed to write containerd's configuration: %w", err)
	}
	if err := n.startProcess("containerd", filepath.Join(n.opts.ContainerdDir, "containerd"), []string{"--config", l.containerdConfig()}); err != nil {
		return err
	}
	return n.poll(ctx, "containerd to answer on "+containerdSocket, func(ctx context.Context) bool {
		_, err := n.ctr(ctx, "version")
		return err == nil
	})
}

// importPause imports the pause image and checks that it is there under the name containerd pins:
// without it no pod sandbox starts, and the kubelet only says so when the first pod fails.
func (n *Node) importPause(ctx context.Context) error {
	if err := n.ImportImage(ctx, n.opts.PauseImage); err != nil {
		return err
	}
	out, err := n.ctr(ctx, "images", "ls", "-q")
	if err != nil {
		return err
	}
	if !slices.Contains(strings.Fields(out), PauseImage) {
		return fmt.Errorf("%s does not hold %s (containerd has: %s); rebuild it with BuildPauseImage", n.opts.PauseImage, PauseImage, strings.Join(strings.Fields(out), ", "))
	}
	return nil
}

// ImportImage imports an image tarball (docker save layout, as hack/images writes) into the
// kubelet's namespace, for pods that run it with imagePullPolicy Never or IfNotPresent.
func (n *Node) ImportImage(ctx context.Context, tarball string) error {
	n.opts.Logf("importing %s", filepath.Base(tarball))
	if _, err := n.ctr(ctx, "images", "import", tarball); err != nil {
		return fmt.Errorf("failed to import %s: %w", tarball, err)
	}
	return nil
}

// ctr runs containerd's client against the node's containerd, in the kubelet's namespace, and
// returns its output.
func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	args = append([]string{"--address", containerdSocket, "--namespace", k8sNamespace}, args...)
	out, err := exec.CommandContext(ctx, filepath.Join(n.opts.ContainerdDir, "ctr"), args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args[4:], " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ContainerPID returns the host PID of a running container's first process, from the bundle the
// runc shim keeps in containerd's state directory. containerID is a pod status's containerID, with
// or without its containerd:// prefix.
func (n *Node) ContainerPID(containerID string) (int, error) {
	id := strings.TrimPrefix(containerID, "containerd://")
	data, err := os.ReadFile(filepath.Join(n.layout.taskDir(k8sNamespace, id), "init.pid"))
	if err != nil {
		return 0, fmt.Errorf("container %s has no running task: %w", id, err)
	}
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil {
		return 0, fmt.Errorf("failed to read the pid of container %s: %w", id, err)
	}
	return pid, nil
}
