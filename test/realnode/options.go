package realnode

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// Machine-wide names. Only one real node runs on a machine, so fixed names are safe, and they say
// whose they are when found on a machine.
const (
	// RuntimeDir holds containerd's sockets, the shims' sockets and runc's state. It is short on
	// purpose: a unix socket path has at most 107 bytes, and containerd refuses a shim socket
	// directory longer than 42, which a test's temporary directory easily exceeds.
	RuntimeDir = "/run/dbtune-realnode"
	// lockPath is the machine-wide lock; while a node runs it holds the node's directory, so that
	// the next Start finds what a killed run left behind.
	lockPath = "/run/dbtune-realnode.lock"
	// BridgeName is the CNI bridge; its own name so that no other bridge on the machine is touched.
	BridgeName = "dbtune-cni0"
	// cniNetwork names the CNI network, and so the files CNI keeps about it.
	cniNetwork = "dbtune-realnode"
	// PauseImage is the image hack/images -pause builds (a static busybox sleeping forever): the
	// sandbox image containerd pins, and an image test pods can run with imagePullPolicy Never.
	PauseImage = "localhost/dbtune/pause:busybox"
)

// Binaries are the files Start needs from hack/k8s-binaries.sh node: kubelet beside the control
// plane's binaries, the others in the containerd directory.
var (
	KubeletBinaries    = []string{"kubelet"}
	ContainerdBinaries = []string{"containerd", "containerd-shim-runc-v2", "ctr"}
)

// Options configure Start. Cluster, BinDir, ContainerdDir and PauseImage are required.
type Options struct {
	// Cluster is the running control plane the node joins; the node lives in a folder of its
	// directory.
	Cluster *localcluster.Cluster
	// BinDir holds kubelet (hack/k8s-binaries.sh --print-dir).
	BinDir string
	// ContainerdDir holds containerd, its runc shim and ctr (hack/k8s-binaries.sh
	// --print-containerd-dir).
	ContainerdDir string
	// PauseImage is the image tarball of PauseImage (BuildPauseImage).
	PauseImage string
	// Runc is the runc binary; empty means runc on PATH (Debian's /usr/sbin/runc).
	Runc string
	// CNIBinDir holds the CNI plugins bridge, host-local and loopback (default Debian's /usr/lib/cni).
	CNIBinDir string
	// NodeName is the node's name (default "localhost"). The API server reaches a kubelet at the
	// node's Hostname address first, and this kubelet listens on 127.0.0.1 only: "localhost" is the
	// one name that resolves there without touching /etc/hosts, so logs and exec work.
	NodeName string
	// PodSubnet is the range the pods' addresses come from (default 10.244.250.0/24: inside the
	// cluster's pod CIDR, apart from the fake nodes' ranges).
	PodSubnet string
	// PodHostPaths are host paths the pods may create (hostPath volumes of type DirectoryOrCreate);
	// those absent at Start are removed like the node's own, on Stop and after a kill.
	PodHostPaths []string
	// StartTimeout bounds each wait of Start (default 3 minutes: containerd, the kubelet and the
	// first pod sandbox on a busy two-core machine).
	StartTimeout time.Duration
	// Logf reports progress; nil discards it.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() (Options, error) {
	if o.Cluster == nil {
		return o, errors.New("no Cluster: start a localcluster first")
	}
	if err := requireFiles(o.BinDir, KubeletBinaries, "--print-dir"); err != nil {
		return o, err
	}
	if err := requireFiles(o.ContainerdDir, ContainerdBinaries, "--print-containerd-dir"); err != nil {
		return o, err
	}
	if _, err := os.Stat(o.PauseImage); err != nil {
		return o, fmt.Errorf("no pause image tarball (%w): build it with BuildPauseImage", err)
	}
	if o.Runc == "" {
		runc, err := exec.LookPath("runc")
		if err != nil {
			return o, errors.New("runc is not on PATH: apt-get install runc")
		}
		o.Runc = runc
	}
	if o.CNIBinDir == "" {
		o.CNIBinDir = "/usr/lib/cni"
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(o.CNIBinDir, plugin)); err != nil {
			return o, fmt.Errorf("CNI plugin %s is missing from %s: apt-get install containernetworking-plugins", plugin, o.CNIBinDir)
		}
	}
	o = o.withNamingDefaults()
	return o, nil
}

func (o Options) withNamingDefaults() Options {
	if o.NodeName == "" {
		o.NodeName = "localhost"
	}
	if o.PodSubnet == "" {
		o.PodSubnet = "10.244.250.0/24"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

func requireFiles(dir string, names []string, printFlag string) error {
	if dir == "" {
		return fmt.Errorf("no directory for %s: pass `hack/k8s-binaries.sh %s`", strings.Join(names, ", "), printFlag)
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s is missing from %s: run `hack/k8s-binaries.sh node` to build it", name, dir)
		}
	}
	return nil
}

// DefaultDirs asks the repository's hack/k8s-binaries.sh where it builds kubelet and containerd. It
// builds nothing.
func DefaultDirs(repoRoot string) (binDir, containerdDir string, err error) {
	script := filepath.Join(repoRoot, "hack", "k8s-binaries.sh")
	var dirs [2]string
	for i, flag := range []string{"--print-dir", "--print-containerd-dir"} {
		out, err := exec.Command(script, flag).Output()
		if err != nil {
			return "", "", fmt.Errorf("hack/k8s-binaries.sh %s: %w", flag, err)
		}
		dirs[i] = strings.TrimSpace(string(out))
	}
	return dirs[0], dirs[1], nil
}
