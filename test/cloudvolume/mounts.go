package cloudvolume

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// mount is one line of /proc/self/mountinfo, the fields used here.
type mount struct {
	// ID is the mount's unique ID, the first field.
	ID                  string
	Point, Type, Source string
	// Minor is the minor number of the mount's device: for a FUSE mount, its connection's number.
	Minor string
}

// mountAt returns the topmost mount at path, if any.
func mountAt(path string) (mount, bool, error) {
	mounts, err := readMounts()
	if err != nil {
		return mount{}, false, err
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if mounts[i].Point == path {
			return mounts[i], true, nil
		}
	}
	return mount{}, false, nil
}

// mountsBelow lists the mount points at or below dir.
func mountsBelow(dir string) ([]string, error) {
	mounts, err := readMounts()
	if err != nil {
		return nil, err
	}
	var found []string
	for _, m := range mounts {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			found = append(found, m.Point)
		}
	}
	return found, nil
}

func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("failed to read the mount table: %w", err)
	}
	defer func() { _ = f.Close() }()
	var mounts []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// The optional fields end at "-", after which come the type and the source.
		before, after, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(before), strings.Fields(after)
		if !ok || len(fields) < 5 || len(tail) < 2 {
			continue
		}
		_, minor, _ := strings.Cut(fields[2], ":")
		mounts = append(mounts, mount{ID: fields[0], Point: unescape(fields[4]), Type: tail[0], Source: unescape(tail[1]), Minor: minor})
	}
	return mounts, sc.Err()
}

// unescape undoes the octal escapes mountinfo uses for space, tab, newline and backslash.
func unescape(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// unmountIf unmounts path when what is mounted there is ours (match says so). A busy mount is
// detached instead: its users see it until they let go, and nothing new can reach it.
func unmountIf(path string, match func(mount) bool) error {
	m, ok, err := mountAt(path)
	if err != nil || !ok || !match(m) {
		return err
	}
	err = unix.Unmount(path, 0)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		err = unix.Unmount(path, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("failed to unmount %s (%s on %s): %w", path, m.Type, m.Source, err)
	}
	return nil
}

// fusectlDir is where the FUSE control file system is mounted when the machine has not mounted it
// at /sys/fs/fuse/connections.
func fusectlDir() string { return filepath.Join(StateDir, "fusectl") }

// abortFUSE ends the FUSE connection of the mount at dir, if it is ours (match): every request
// waiting on it fails at once. A process killed while one of its threads waited for I/O to its own
// volume cannot finish dying otherwise: the thread waits for the FUSE server, which was in the same
// process, and the connection ends only when the process's last thread is gone.
func abortFUSE(dir string, match func(mount) bool) error {
	m, ok, err := mountAt(dir)
	if err != nil || !ok || !match(m) {
		return err
	}
	connections := "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(connections, m.Minor)); err != nil {
		unmount, err := mountFusectl()
		if err != nil {
			return err
		}
		defer unmount()
		connections = fusectlDir()
	}
	abort := filepath.Join(connections, m.Minor, "abort")
	if err := os.WriteFile(abort, []byte("1"), 0o200); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to abort the FUSE connection of %s through %s: %w", dir, abort, err)
	}
	return nil
}

// mountFusectl mounts the FUSE control file system at fusectlDir until the returned function runs.
// A process killed in between leaves the mount, which the next call reuses and removes.
func mountFusectl() (func(), error) {
	dir := fusectlDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", dir, err)
	}
	if _, ok, _ := mountAt(dir); !ok {
		if err := unix.Mount("fusectl", dir, "fusectl", 0, ""); err != nil {
			return nil, fmt.Errorf("failed to mount the FUSE control file system at %s to abort a dead volume's connection: %w", dir, err)
		}
	}
	return func() {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		_ = os.Remove(dir)
	}, nil
}
