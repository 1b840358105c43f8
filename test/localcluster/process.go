package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one program the cluster started: a control-plane component, or something started with
// StartProcess.
type Process struct {
	// Name identifies the process in messages and names its log file.
	Name string `json:"name"`
	// PID is its process ID, which is also its process-group ID.
	PID int `json:"pid"`
	// StartTicks is the process start time from /proc/<pid>/stat. A PID alone can be reused by an
	// unrelated process after ours exits; together with the start time it cannot.
	StartTicks uint64 `json:"startTicks"`
	// Log is the file holding its standard output and error.
	Log string `json:"log"`

	// done is closed when the process has been reaped; nil when another process started it.
	done chan struct{}
}

// stopTimeout is how long a process gets to exit after SIGTERM before it is killed. etcd and the API
// server need a second or two to shut down cleanly; nothing here needs more.
const stopTimeout = 10 * time.Second

// startProcess runs path with its output appended to logPath, in a process group of its own so that
// a Ctrl-C meant for the caller's terminal does not reach it: the caller decides when it stops.
// Unless detached, the kernel also sends it SIGTERM when the caller dies, so that even a killed test
// binary leaves nothing behind; a detached process is in a session of its own and outlives the caller.
func startProcess(name, path string, args, env []string, logPath string, detached bool) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()

	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", name, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, Log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	if p.StartTicks, err = startTicks(p.PID); err != nil {
		// It exited at once; Alive reports that through done, and the log says why.
		p.StartTicks = 0
	}
	return p, nil
}

// Alive reports whether the process is still running (and is still the one that was started).
func (p *Process) Alive() bool {
	if p.done != nil {
		select {
		case <-p.done:
			return false
		default:
			return true
		}
	}
	ticks, err := startTicks(p.PID)
	return err == nil && ticks == p.StartTicks
}

// Stop stops the process like Stop of the cluster does: SIGTERM to its process group, SIGKILL when it
// does not exit in time. It works from any process, with a Process read back from a state file too.
func (p *Process) Stop() error { return p.stop() }

// Kill sends SIGKILL to the process group, as a crash or an OOM kill would end it: no shutdown code
// runs, nothing is released. It returns once the process is gone.
func (p *Process) Kill() error {
	if !p.Alive() {
		return nil
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	if p.waitGone(5 * time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID)
}

// stop sends SIGTERM to the process group, waits, and kills the group when it does not exit in time.
func (p *Process) stop() error {
	if !p.Alive() {
		return nil
	}
	// The group also reaches whatever the process started itself.
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	if p.waitGone(stopTimeout) {
		return nil
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	if p.waitGone(5 * time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID)
}

func (p *Process) waitGone(timeout time.Duration) bool {
	if p.done != nil {
		select {
		case <-p.done:
			return true
		case <-time.After(timeout):
			return false
		}
	}
	deadline := time.Now().Add(timeout)
	for p.Alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// exitedError describes a process that stopped on its own, with the end of its log.
func (p *Process) exitedError() error {
	return fmt.Errorf("%s exited; the end of %s:\n%s", p.Name, p.Log, Tail(p.Log, 15))
}

// startTicks reads the start time of a live process, in clock ticks since boot. A zombie counts as
// gone: it has exited and only waits for its parent to reap it.
func startTicks(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name in parentheses may contain spaces; the fields after it do not.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[end+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, fmt.Errorf("process %d has exited", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Tail returns the last lines of a log file, for error messages.
func Tail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer func() { _ = f.Close() }()
	const maxBytes = 16 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxBytes {
		_, _ = f.Seek(st.Size()-maxBytes, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return "  " + strings.Join(all, "\n  ")
}

// stopAll stops processes in reverse order of start, so that clients go before the API server and
// the API server before etcd.
func stopAll(procs []*Process) error {
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		errs = append(errs, procs[i].stop())
	}
	return errors.Join(errs...)
}
