package realnode

import (
	"errors"
	"fmt"
	"os"
	"slices"
)

// Leftovers describes what a node whose directory was dir left on the machine, compared with the
// absent fixed paths recorded before it started: processes in its cgroups, the cgroups themselves,
// runc shims, the CNI bridge, mounts, network namespaces, RuntimeDir and fixed paths it created.
// Empty means the machine is as it was, apart from the kernel settings (see ReadKernelSettings).
func Leftovers(dir string, absentBefore []string) ([]string, error) {
	var left []string
	cgroups, err := CgroupsLeft()
	if err != nil {
		return nil, err
	}
	for _, cg := range cgroups {
		left = append(left, "cgroup "+cg)
	}
	for _, pid := range shimPIDs() {
		left = append(left, fmt.Sprintf("runc shim (pid %d)", pid))
	}
	bridge, err := BridgeExists()
	if err != nil {
		return nil, err
	}
	if bridge {
		left = append(left, "bridge "+BridgeName)
	}
	proxy, err := ServiceProxyExists()
	if err != nil {
		return nil, err
	}
	if proxy {
		left = append(left, "nftables table "+serviceTable)
	}
	mounts, err := MountsUnder(append(layout{dir}.mountRoots(), absentBefore...)...)
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		left = append(left, "mount "+m)
	}
	for _, p := range append([]string{RuntimeDir}, absentBefore...) {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			left = append(left, "path "+p)
		}
	}
	return left, nil
}

// AbsentHostPaths returns which of the fixed paths a node may create, and of podHostPaths (see
// Options.PodHostPaths), do not exist now: take it before Start and pass it to Leftovers after Stop.
func AbsentHostPaths(podHostPaths ...string) []string {
	return absentPaths(append(slices.Clone(hostPaths), podHostPaths...))
}

// Cleanup undoes what a node that was never stopped (its process was killed) left on this machine,
// as Start does before it starts a node. It fails while another node runs.
func Cleanup(logf func(string, ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	lock, err := lockMachine()
	if err != nil {
		return err
	}
	if err := recoverPrevious(lock, logf); err != nil {
		lock.unlock()
		return err
	}
	return lock.release()
}
