package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Names inside a cluster directory.
const (
	stateFile      = "state.json"
	markerFile     = ".localcluster"
	lockFile       = ".lock"
	kubeconfigFile = "kubeconfig"
	logsDir        = "logs"
)

// State is what a running cluster records in its directory, so that another process can find it
// (Running) and stop it (Down).
type State struct {
	// Dir is the cluster's directory.
	Dir string `json:"dir"`
	// Kubeconfig is the admin kubeconfig; empty until the API server is up.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Started is when the cluster started.
	Started time.Time `json:"started"`
	// Processes are in the order they were started.
	Processes []Process `json:"processes"`
}

// AliveProcesses lists the recorded processes that are still running.
func (s *State) AliveProcesses() []Process {
	var alive []Process
	for _, p := range s.Processes {
		if p.Alive() {
			alive = append(alive, p)
		}
	}
	return alive
}

// RunningError is returned by Start when a cluster already runs in the directory.
type RunningError struct {
	State *State
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("a cluster is already running in %s: export KUBECONFIG=%s", e.State.Dir, e.State.Kubeconfig)
}

// ReadState reads the state file of the cluster in dir. It returns an error satisfying
// errors.Is(err, fs.ErrNotExist) when no cluster was started there or it was stopped.
func ReadState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", filepath.Join(dir, stateFile), err)
	}
	return s, nil
}

// Running returns the state of the cluster in dir when any of its processes still runs, or nil.
func Running(dir string) (*State, error) {
	s, err := ReadState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(s.AliveProcesses()) == 0 {
		return nil, nil
	}
	return s, nil
}

// Down stops every process recorded in dir's state file, from any process: the one that started
// the cluster may be long gone. It keeps the logs and is a no-op when nothing is recorded.
func Down(dir string) error {
	s, err := ReadState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	procs := make([]*Process, len(s.Processes))
	for i := range s.Processes {
		procs[i] = &s.Processes[i]
	}
	if err := stopAll(procs); err != nil {
		return err
	}
	return os.Remove(filepath.Join(dir, stateFile))
}

// writeState replaces the state file in one rename, so that a reader never sees half of it.
func writeState(s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, stateFile))
}

// lockDir takes an exclusive lock on dir for the duration of a start, so that two starts in the same
// directory cannot interleave. The kernel drops the lock when the process exits.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another process is starting a cluster in %s", dir)
		}
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}

// prepareDir makes dir an empty cluster directory. It refuses a directory that holds anything but a
// previous cluster's files, so that a wrong path cannot wipe someone's data.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	_, markerErr := os.Stat(filepath.Join(dir, markerFile))
	for _, e := range entries {
		if e.Name() == markerFile || e.Name() == lockFile {
			continue
		}
		if markerErr != nil {
			return fmt.Errorf("%s is not empty and holds no previous cluster; choose an empty directory", dir)
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, markerFile), nil, 0o644)
}
