package realnode

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// restore undoes everything a node recorded in s, in the order that lets each step succeed: the
// kubelet and containerd stop, container processes and shims die, mounts go (which frees the
// network namespaces and with them the pods' veths), then cgroups, the bridge, the files left at
// fixed paths, and the kernel settings. Every step runs even when an earlier one failed.
func restore(s *hostState, logf func(string, ...any)) error {
	var errs []error
	step := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to %s: %w", what, err))
		}
	}
	for i := len(s.Processes) - 1; i >= 0; i-- {
		p := s.Processes[i]
		step("stop "+p.Name, p.Stop())
	}
	step("kill the containers' processes", killCgroupProcesses(10*time.Second))
	step("kill the runc shims", killShims(10*time.Second))
	l := layout{s.Dir}
	roots := append(l.mountRoots(), s.Absent...)
	step("unmount the node's mounts", unmountAll(roots))
	step("remove network namespaces", removeNetns(s.Netns))
	step("remove the node's cgroups", removeCgroups())
	step("delete the service rule", removeServiceProxy())
	step("delete the CNI bridge", deleteBridge())
	step("remove the files left at fixed paths", removeAbsent(s.Absent))
	if !slices.Contains(s.Absent, "/var/lib/cni") {
		step("remove the CNI cache entries", removeCNICache())
	}
	if s.Sysctls != nil {
		step("restore kernel settings", restoreSysctls(s.Sysctls))
	}
	step("remove "+RuntimeDir, removeUnmounted(RuntimeDir))
	err := errors.Join(errs...)
	if err == nil {
		logf("restored the host after the real node in %s", s.Dir)
	}
	return err
}

// removeAbsent removes the fixed paths that did not exist before the node started.
func removeAbsent(paths []string) error {
	errs := make([]error, 0, len(paths))
	for _, p := range paths {
		errs = append(errs, removeUnmounted(p))
	}
	return errors.Join(errs...)
}

// removeUnmounted removes path and everything below it, unless something is still mounted there:
// removing through a mount point would delete the mounted file system's files.
func removeUnmounted(path string) error {
	mounts, err := MountsUnder(path)
	if err != nil {
		return err
	}
	if len(mounts) > 0 {
		return fmt.Errorf("not removing %s: %d mounts are still below it", path, len(mounts))
	}
	return os.RemoveAll(path)
}

// recoverPrevious undoes what a node that did not stop left on the machine. The lock file names its
// directory; without a state file there (it was removed), it still cleans what has fixed names:
// processes in the node's cgroups, shims, mounts in RuntimeDir, the cgroups and the bridge. Only
// kernel settings cannot be restored then, since their original values were in the state file.
func recoverPrevious(lock *machineLock, logf func(string, ...any)) error {
	dir, err := lock.previousDir()
	if err != nil || dir == "" {
		return nil //nolint:nilerr // No previous node recorded: nothing to recover.
	}
	s, err := readState(dir)
	if err != nil {
		logf("no state file of the previous real node in %s (%v); cleaning what has fixed names", dir, err)
		s = &hostState{Dir: dir}
	} else {
		// A node left running on purpose (make demo detaches its cluster) is not a leftover.
		for i := range s.Processes {
			if p := &s.Processes[i]; p.Alive() {
				return fmt.Errorf("the real node in %s is still running (%s, pid %d), left running by the program that started it: stop that first (for the demo's, make demo-down)", dir, p.Name, p.PID)
			}
		}
		logf("a previous real node in %s did not stop; restoring the host first", dir)
	}
	if err := restore(s, logf); err != nil {
		return fmt.Errorf("failed to clean up after the previous real node in %s: %w", dir, err)
	}
	if err := os.Remove(layout{dir}.stateFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return lock.record("")
}
