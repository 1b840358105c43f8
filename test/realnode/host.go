package realnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// KernelSettings are the sysctls (paths under /proc/sys) a node changes: the kubelet sets the first
// six at start (setupKernelTunables; it refuses to start instead with protectKernelDefaults), and
// the CNI bridge plugin turns on IPv4 forwarding for its gateway.
var KernelSettings = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
}

// hostPaths are the fixed paths kubelet, containerd and CNI may create whatever they are told:
// the device-plugin socket directory, container log links, CNI's result cache, network namespaces,
// and default directories of plugins that are configured away but could still appear.
var hostPaths = []string{
	"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/netns",
	"/run/containerd", "/var/lib/containerd", "/etc/containerd", "/opt/containerd", "/run/nri",
	"/etc/cni", "/etc/cdi", "/run/cdi",
}

// ownedCgroups are the top-level cgroups of a node, in every hierarchy: the kubelet's pod tree and
// containerd's namespace-named one.
var ownedCgroups = []string{"kubepods", "k8s.io"}

// procSys is where sysctls are files.
const procSys = "/proc/sys/"

// ReadKernelSettings returns the current value of each of KernelSettings.
func ReadKernelSettings() (map[string]string, error) {
	values := make(map[string]string, len(KernelSettings))
	for _, name := range KernelSettings {
		data, err := os.ReadFile(procSys + name)
		if err != nil {
			return nil, fmt.Errorf("failed to read sysctl %s: %w", name, err)
		}
		values[name] = strings.TrimSpace(string(data))
	}
	return values, nil
}

// restoreSysctls writes back the values that changed. Settings are only written when they differ:
// writing ip_forward, for one, also resets per-interface settings.
func restoreSysctls(saved map[string]string) error {
	current, err := ReadKernelSettings()
	if err != nil {
		return err
	}
	var errs []error
	for name, want := range saved {
		if current[name] == want {
			continue
		}
		if err := os.WriteFile(procSys+name, []byte(want), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("failed to restore sysctl %s to %s: %w", name, want, err))
		}
	}
	return errors.Join(errs...)
}

// MountsUnder returns the mount points at or below any of roots, deepest first.
func MountsUnder(roots ...string) ([]string, error) {
	entries, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var points []string
	for _, e := range entries {
		for _, root := range roots {
			if e.MountPoint == root || strings.HasPrefix(e.MountPoint, root+"/") {
				points = append(points, e.MountPoint)
				break
			}
		}
	}
	sort.SliceStable(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, nil
}

// unmountAll unmounts everything at or below roots. A mount still busy (a process of a container
// that is not quite gone) is detached instead; bind mounts with shared propagation can come back
// once, so it goes over the table until it is clean.
func unmountAll(roots []string) error {
	for range 10 {
		points, err := MountsUnder(roots...)
		if err != nil || len(points) == 0 {
			return err
		}
		for _, p := range points {
			if err := unix.Unmount(p, unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) {
				_ = unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
			}
		}
	}
	points, err := MountsUnder(roots...)
	if err == nil && len(points) > 0 {
		err = fmt.Errorf("mounts left after unmounting: %s", strings.Join(points, ", "))
	}
	return err
}

// cgroupHierarchies lists the cgroup file systems mounted under /sys/fs/cgroup: the v1 controllers,
// the named systemd hierarchy and the (empty) unified one.
func cgroupHierarchies() ([]string, error) {
	entries, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if (e.FSType == "cgroup" || e.FSType == "cgroup2") && strings.HasPrefix(e.MountPoint, "/sys/fs/cgroup") {
			dirs = append(dirs, e.MountPoint)
		}
	}
	return dirs, nil
}

// CgroupsLeft returns the node's cgroup directories that exist in any hierarchy.
func CgroupsLeft() ([]string, error) {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	var left []string
	for _, h := range hierarchies {
		for _, name := range ownedCgroups {
			if _, err := os.Stat(filepath.Join(h, name)); err == nil {
				left = append(left, filepath.Join(h, name))
			}
		}
	}
	return left, nil
}

// cgroupTree returns dir and every cgroup below it, children before their parents.
func cgroupTree(dir string) []string {
	var tree []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			tree = append(tree, path)
		}
		return nil
	})
	sort.SliceStable(tree, func(i, j int) bool { return len(tree[i]) > len(tree[j]) })
	return tree
}

// killCgroupProcesses kills every process in the node's cgroups (containers the kubelet did not
// stop) and waits for them to leave, so that the cgroups can go and their mounts are not busy.
func killCgroupProcesses(timeout time.Duration) error {
	cgroups, err := CgroupsLeft()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		pids := 0
		for _, top := range cgroups {
			for _, cg := range cgroupTree(top) {
				for _, pid := range cgroupPIDs(cg) {
					_ = unix.Kill(pid, unix.SIGKILL)
					pids++
				}
			}
		}
		if pids == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes still in the node's cgroups after SIGKILL", pids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func cgroupPIDs(cg string) []int {
	data, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// removeCgroups removes the node's cgroups bottom-up (rmdir is how a cgroup is deleted; a cgroup
// with children or processes cannot be).
func removeCgroups() error {
	cgroups, err := CgroupsLeft()
	if err != nil {
		return err
	}
	var errs []error
	for _, top := range cgroups {
		for _, cg := range cgroupTree(top) {
			if err := unix.Rmdir(cg); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("failed to remove cgroup %s: %w", cg, err))
			}
		}
	}
	return errors.Join(errs...)
}
