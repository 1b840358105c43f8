package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
)

// workDir is the kubelet root the benchmark lays its volumes out under. It is a fixed path, not a
// fresh temporary directory, so that the mounts of a run that was killed before it could unmount
// them (SIGKILL, a crash) are found and removed by the next run. It is on the root filesystem here,
// not on a tmpfs, so a volume that failed to mount reads as "not a tmpfs" instead of passing.
const workDir = "/run/bench-scratchusage"

const mountinfo = "/proc/self/mountinfo"

// lockPath is held by the run that owns workDir: two runs sharing it would unmount each other's
// volumes. The kernel drops the lock when its holder dies, even by SIGKILL, so a killed run
// never blocks the next one.
const lockPath = workDir + ".lock"

// lockWorkDir takes the lock of workDir, or fails at once if another run holds it. The returned
// function removes the lock file and releases the lock.
func lockWorkDir() (unlock func() error, err error) {
	for {
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("another run holds %s: wait for it to finish", lockPath)
			}
			return nil, fmt.Errorf("failed to lock %s: %w", lockPath, err)
		}
		// A run that finished between our open and our lock removed the file we locked; lock the
		// file that is there now instead, or two runs could each hold a lock.
		if sameFile(f, lockPath) {
			return func() error { return errors.Join(os.Remove(lockPath), f.Close()) }, nil
		}
		_ = f.Close()
	}
}

func sameFile(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now)
}

// clearWorkDir unmounts everything mounted under dir, deepest first, and removes dir. It runs at
// the start, for what a killed run left behind, and at the end of every run.
func clearWorkDir(dir string) error {
	mounts, err := readMountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		errs = append(errs, unmount(m))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// RemoveAll must not run while anything is still mounted below: it would delete files on
	// that filesystem rather than the empty mount points.
	if left, err := readMountsUnder(dir); err != nil || len(left) > 0 {
		return errors.Join(err, fmt.Errorf("still mounted under %s after unmounting: %v", dir, left))
	}
	return os.RemoveAll(dir)
}

// unmount detaches the mount when a plain unmount finds it busy, so that it goes as soon as its
// last user does instead of staying for good.
func unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, syscall.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err != nil {
		return fmt.Errorf("failed to unmount %s: %w", dir, err)
	}
	return nil
}

func readMountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("failed to read the mount table: %w", err)
	}
	return mountsUnder(string(b), dir), nil
}

// mountsUnder returns the mount points at or below dir in a /proc/<pid>/mountinfo text, deepest
// first, so that they can be unmounted in that order. A point mounted twice is listed twice: each
// unmount removes one layer.
func mountsUnder(info, dir string) []string {
	dir = filepath.Clean(dir)
	var out []string
	for _, line := range strings.Split(info, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) the kernel writes in mountinfo
// paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountVolumes mounts a tmpfs of sizeBytes at each volume's directory under root, as the kubelet
// mounts a memory emptyDir with a sizeLimit. On failure, what was mounted stays for clearWorkDir.
func mountVolumes(root string, vols []scratchusage.Volume, sizeBytes int64) error {
	for _, v := range vols {
		dir := v.Dir(root)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(sizeBytes, 10)); err != nil {
			return fmt.Errorf("failed to mount a tmpfs on %s: %w", dir, err)
		}
	}
	return nil
}

// fillVolume writes n bytes into the volume at dir, or as many as fit: a volume meant to be full
// is filled by asking for more than its size.
func fillVolume(dir string, n int64) error {
	if n == 0 {
		return nil
	}
	err := os.WriteFile(filepath.Join(dir, "sort-chunk"), make([]byte, n), 0o600)
	if errors.Is(err, syscall.ENOSPC) {
		return nil
	}
	return err
}
