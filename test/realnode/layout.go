package realnode

import "path/filepath"

// layout names the node's files. Everything the node writes lives under its directory, apart from
// RuntimeDir (socket path limits) and what kubelet and containerd insist on writing to fixed
// host paths (hostPaths), which the host state records and restore removes.
type layout struct{ dir string }

func (l layout) stateFile() string        { return filepath.Join(l.dir, "state.json") }
func (l layout) containerdConfig() string { return filepath.Join(l.dir, "containerd", "config.toml") }
func (l layout) containerdRoot() string   { return filepath.Join(l.dir, "containerd", "root") }
func (l layout) containerdState() string  { return filepath.Join(l.dir, "containerd", "state") }
func (l layout) containerdOpt() string    { return filepath.Join(l.dir, "containerd", "opt") }
func (l layout) cdiDir() string           { return filepath.Join(l.dir, "containerd", "cdi") }
func (l layout) cniConfDir() string       { return filepath.Join(l.dir, "cni", "net.d") }
func (l layout) cniIPAMDir() string       { return filepath.Join(l.dir, "cni", "ipam") }
func (l layout) kubeletRoot() string      { return filepath.Join(l.dir, "kubelet") }
func (l layout) kubeletCertDir() string   { return filepath.Join(l.dir, "kubelet-pki") }
func (l layout) podLogsDir() string       { return filepath.Join(l.dir, "pod-logs") }
func (l layout) kubeletConfig() string    { return filepath.Join(l.dir, "kubelet-config.yaml") }
func (l layout) kubeletKubeconfig() string {
	return filepath.Join(l.dir, "kubelet.kubeconfig")
}

// The runtime directory's contents: containerd's API sockets, the shims' sockets, runc's state.
const (
	containerdSocket = RuntimeDir + "/containerd.sock"
	shimSocketDir    = RuntimeDir + "/s"
	runcRoot         = RuntimeDir + "/runc"
)

// taskDir is where containerd keeps a running container's bundle, with the pid of its first process.
func (l layout) taskDir(namespace, containerID string) string {
	return filepath.Join(l.containerdState(), "io.containerd.runtime.v2.task", namespace, containerID)
}

// mountRoots are the directories under which the node mounts things: container root file
// systems, volumes, network namespaces, the kubelet's bind mount of its root onto itself.
func (l layout) mountRoots() []string {
	return []string{l.dir, RuntimeDir}
}
