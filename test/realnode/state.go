package realnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// hostState is what the node changed, or is about to change, on the machine: written to the node's
// state file before each change, so that Stop, or the next Start after a killed run, undoes it all.
type hostState struct {
	// Dir is the node's directory.
	Dir string `json:"dir"`
	// Started is when the node started.
	Started time.Time `json:"started"`
	// Sysctls are the original values of the kernel settings the kubelet and the CNI bridge
	// plugin change, by /proc/sys path (vm/overcommit_memory).
	Sysctls map[string]string `json:"sysctls"`
	// Absent are the fixed host paths that did not exist before start; restore removes them.
	Absent []string `json:"absent"`
	// Netns are the entries of /run/netns before start; restore removes the others CNI left.
	Netns []string `json:"netns"`
	// Processes are containerd and the kubelet, in the order they started.
	Processes []localcluster.Process `json:"processes"`
}

func (s *hostState) write() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	path := layout{s.Dir}.stateFile()
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		return fmt.Errorf("failed to write the node's state file: %w", err)
	}
	return os.Rename(path+".tmp", path)
}

func readState(dir string) (*hostState, error) {
	data, err := os.ReadFile(layout{dir}.stateFile())
	if err != nil {
		return nil, err
	}
	s := &hostState{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", layout{dir}.stateFile(), err)
	}
	return s, nil
}

// machineLock is the one real node of this machine. The lock file holds the running node's
// directory, so that a later Start finds a killed run's state file wherever its cluster was.
type machineLock struct{ f *os.File }

// lockMachine takes the machine-wide lock without waiting: a second node on the same machine would
// share cgroups, the bridge and the kernel settings with the first.
func lockMachine() (*machineLock, error) {
	for {
		f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, fmt.Errorf("failed to open %s: %w", lockPath, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			_ = f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("another real node runs on this machine (%s is locked)", lockPath)
			}
			return nil, fmt.Errorf("failed to lock %s: %w", lockPath, err)
		}
		// The holder before us removes the file when it stops cleanly; a lock on a removed file
		// locks nothing, so try again with the new one.
		if sameFile(f, lockPath) {
			return &machineLock{f: f}, nil
		}
		_ = f.Close()
	}
}

func sameFile(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// previousDir returns the node directory a previous holder recorded, if any.
func (m *machineLock) previousDir() (string, error) {
	data, err := os.ReadFile(lockPath)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// record notes the running node's directory in the lock file.
func (m *machineLock) record(dir string) error {
	if err := m.f.Truncate(0); err != nil {
		return err
	}
	_, err := m.f.WriteAt([]byte(dir+"\n"), 0)
	return err
}

// release removes the lock file (nothing is left to recover) and unlocks it.
func (m *machineLock) release() error {
	err := os.Remove(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, m.f.Close())
}

// unlock unlocks without removing the file, which still names a node directory to recover.
func (m *machineLock) unlock() { _ = m.f.Close() }

// absentPaths returns which of paths do not exist.
func absentPaths(paths []string) []string {
	var absent []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			absent = append(absent, p)
		}
	}
	return absent
}

// dirEntries lists the names in dir, or nothing when it does not exist.
func dirEntries(dir string) []string {
	entries, _ := os.ReadDir(dir)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// stateDirOf is the node directory inside a cluster directory.
func stateDirOf(clusterDir string) string { return filepath.Join(clusterDir, "realnode") }
