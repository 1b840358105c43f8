package cloudvolume

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// StateDir holds one directory per open volume: its state file and its FUSE mount point. It is on
// /run, a tmpfs, so a reboot (which undoes every change anyway) also forgets the records.
const StateDir = "/run/dbtune-cloudvolume"

const (
	// recordGrace is how long a record directory may stay without a state file before Recover takes
	// it for the leftover of a killed process: the window between its creation and the first write.
	recordGrace = time.Minute

	recordPrefix = "vol-"
	stateFile    = "state.json"
	fuseDirName  = "fuse"
	lockFile     = "lock"
)

// record is what a volume changed, or is about to change, on this machine. It is written before
// each change, so that whoever reads it can undo everything the volume made even if its process
// was killed halfway through Open.
type record struct {
	// Dir is the record's directory in StateDir.
	Dir string `json:"dir"`
	// OwnerPID and OwnerStart (the process's start time in clock ticks after boot) identify the
	// process that opened the volume; a recycled PID has another start time.
	OwnerPID   int    `json:"ownerPID"`
	OwnerStart uint64 `json:"ownerStart"`
	// WorkDir holds the backing file; it is removed whole.
	WorkDir string `json:"workDir,omitempty"`
	// FUSEMounted says the FUSE file system may be mounted at FUSEDir.
	FUSEMounted bool `json:"fuseMounted,omitempty"`
	// LoopDevice is the loop device bound, or about to be bound, to the FUSE file.
	LoopDevice string `json:"loopDevice,omitempty"`
	// MountPoint is where the ext4 file system is, or is about to be, mounted, on a bind of the
	// directory onto itself whose mount ID is ParentMountID (see mountSharedParent).
	MountPoint    string `json:"mountPoint,omitempty"`
	ParentMountID string `json:"parentMountID,omitempty"`
}

func (r *record) fuseDir() string  { return filepath.Join(r.Dir, fuseDirName) }
func (r *record) diskPath() string { return filepath.Join(r.fuseDir(), diskName) }
func (r *record) backing() string  { return filepath.Join(r.WorkDir, "backing") }

// newRecord makes a fresh record directory for this process and writes its state file.
func newRecord() (*record, error) {
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", StateDir, err)
	}
	dir, err := os.MkdirTemp(StateDir, recordPrefix)
	if err != nil {
		return nil, fmt.Errorf("failed to create a record directory in %s: %w", StateDir, err)
	}
	start, err := processStart(os.Getpid())
	if err != nil {
		return nil, err
	}
	r := &record{Dir: dir, OwnerPID: os.Getpid(), OwnerStart: start}
	if err := r.save(); err != nil {
		return nil, err
	}
	return r, nil
}

// save writes the record atomically: a reader sees the old or the new one, never half of one.
func (r *record) save() error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(r.Dir, stateFile)
	if err := os.WriteFile(path+".tmp", raw, 0o644); err != nil {
		return fmt.Errorf("failed to write the volume's state file: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("failed to write the volume's state file: %w", err)
	}
	return nil
}

// update applies change to the record and saves it before the caller makes the change.
func (r *record) update(change func(*record)) error {
	change(r)
	return r.save()
}

func readRecord(dir string) (*record, error) {
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	r := &record{}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", filepath.Join(dir, stateFile), err)
	}
	r.Dir = dir
	return r, nil
}

// ownerAlive reports whether the process that opened the volume still runs. A zombie does not, nor
// a process with a SIGKILL pending: either may be a killed process whose last threads wait for its
// own volume (see abortFUSE), and will not finish dying until its volume is undone.
func (r *record) ownerAlive() bool {
	fields, err := processStat(r.OwnerPID)
	if err != nil || fields[0] == "Z" || fields[0] == "X" || fields[19] != strconv.FormatUint(r.OwnerStart, 10) {
		return false
	}
	return !killPending(r.OwnerPID)
}

// killPending reports whether a SIGKILL waits for the process's main thread, alone or for the group.
func killPending(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	const sigkillBit = 1 << (unix.SIGKILL - 1)
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, _ := strings.Cut(line, ":")
		if name != "SigPnd" && name != "ShdPnd" {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64); err == nil && mask&sigkillBit != 0 {
			return true
		}
	}
	return false
}

// processStart is the start time of a process, field 22 of /proc/<pid>/stat.
func processStart(pid int) (uint64, error) {
	fields, err := processStat(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// processStat returns the fields of /proc/<pid>/stat from the third (the state) on.
func processStat(pid int) ([]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name, field 2, is in parentheses and may hold spaces: count from its end.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return nil, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return fields, nil
}

// undo reverses what the record names, in the order that lets each step succeed: the ext4 mount
// (which lets go of the loop device), the loop device (which lets go of the FUSE file), the FUSE
// mount, the backing file, and the record itself. Every step runs even when an earlier one failed;
// the record stays when something could not be undone, for the next attempt.
func (r *record) undo() error {
	var errs []error
	if r.FUSEMounted {
		errs = append(errs, abortFUSE(r.fuseDir(), isVolumeFUSE))
	}
	if r.MountPoint != "" {
		errs = append(errs, r.unmountFilesystem())
	}
	errs = append(errs, detachLoop(r.LoopDevice, r.diskPath()))
	if r.FUSEMounted {
		// The FUSE mount, then the bind under it: the directory is the record's own.
		errs = append(errs, unmountIf(r.fuseDir(), isVolumeFUSE), unmountIf(r.fuseDir(), func(mount) bool { return true }))
	}
	if r.WorkDir != "" {
		errs = append(errs, removeUnmounted(r.WorkDir))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return removeUnmounted(r.Dir)
}

// unmountFilesystem unmounts the ext4 file system, then the bind it was mounted on. Each only if it
// is the volume's: the caller's directory may have had a mount of its own before.
func (r *record) unmountFilesystem() error {
	var errs []error
	if r.LoopDevice != "" {
		errs = append(errs, unmountIf(r.MountPoint, func(m mount) bool { return m.Source == r.LoopDevice }))
	}
	if r.ParentMountID != "" {
		errs = append(errs, unmountIf(r.MountPoint, func(m mount) bool { return m.ID == r.ParentMountID }))
	}
	return errors.Join(errs...)
}

// isVolumeFUSE tells this package's FUSE mounts from others.
func isVolumeFUSE(m mount) bool { return m.Type == "fuse."+fuseName }

// removeUnmounted removes dir and everything below it, unless something is mounted there: removing
// through a mount point would delete the mounted file system's files.
func removeUnmounted(dir string) error {
	mounts, err := mountsBelow(dir)
	if err != nil {
		return err
	}
	if len(mounts) > 0 {
		return fmt.Errorf("not removing %s: %s still mounted below it; unmount it and run the tests again", dir, strings.Join(mounts, ", "))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to remove %s: %w", dir, err)
	}
	return nil
}

// Recover undoes what volumes of processes that no longer run left on this machine: those killed
// before they closed their volumes. Open calls it; logf (which may be nil) hears what was undone.
func Recover(logf func(string, ...any)) error {
	lock, err := lockStateDir()
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	dirs, err := filepath.Glob(filepath.Join(StateDir, recordPrefix+"*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range dirs {
		if err := recoverDir(dir, logf); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func recoverDir(dir string, logf func(string, ...any)) error {
	r, err := readRecord(dir)
	if errors.Is(err, os.ErrNotExist) {
		// Killed between creating the directory and writing its first record: nothing else was made.
		// A live process in that window has not written its record yet; leave young directories alone.
		if st, serr := os.Stat(dir); serr == nil && time.Since(st.ModTime()) > recordGrace {
			return removeUnmounted(dir)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if r.ownerAlive() {
		return nil
	}
	if err := r.undo(); err != nil {
		return fmt.Errorf("failed to clean up the volume of process %d, which is gone (%s): %w", r.OwnerPID, dir, err)
	}
	if logf != nil {
		logf("Removed the cloud volume left by process %d, which ended without closing it (loop device %s, mount point %s)", r.OwnerPID, r.LoopDevice, r.MountPoint)
	}
	return nil
}

// lockStateDir serializes recoveries, so that two processes opening volumes at once do not undo
// the same record together.
func lockStateDir() (*os.File, error) {
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", StateDir, err)
	}
	f, err := os.OpenFile(filepath.Join(StateDir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("failed to open the lock of %s: %w", StateDir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to lock %s: %w", StateDir, err)
	}
	return f, nil
}
