package readahead

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// StateFileName is the state file inside the state directory.
	StateFileName = "readahead-state.json"
	// StateVersion is the version of the state file format this package reads and writes.
	StateVersion = 1

	lockFileName = "readahead-state.lock"
)

// Entry is what the state file keeps about one device the agent changed.
type Entry struct {
	DeviceID
	// OriginalKiB is the read-ahead found before the agent's first change: what Restore puts back.
	OriginalKiB int64 `json:"originalKiB"`
	// AppliedKiB is what the kernel kept of the agent's last change; nil between saving the
	// original and the change succeeding.
	AppliedKiB *int64 `json:"appliedKiB,omitempty"`
	// Policy is the ReadAheadPolicy the device was last changed for.
	Policy string `json:"policy,omitempty"`
	// SavedAt is when the original was saved.
	SavedAt time.Time `json:"savedAt"`
	// AppliedAt is when the agent last changed the device.
	AppliedAt time.Time `json:"appliedAt,omitzero"`
}

// stateFile is the JSON document. The version comes first so that a future format can be told
// apart before anything else is read.
type stateFile struct {
	Version int     `json:"version"`
	Devices []Entry `json:"devices"`
}

// Store keeps the state file in a directory on the host (not in the pod), so originals survive
// agent restarts and upgrades and are restored when a policy stops applying rather than when the
// pod exits. Writes are atomic (temporary file, fsync, rename, fsync of the directory) and
// serialized by a lock file, so two agents overlapping during a rollout cannot lose an entry.
//
// A state file that cannot be parsed is reported as *CorruptStateError and never treated as
// empty: that would forget originals, and the next change would save a tuned value as original.
type Store struct {
	dir string
	mu  sync.Mutex

	// Now stamps entries; nil means time.Now.
	Now func() time.Time
}

// NewStore returns a store for the state file in dir (e.g. /run/dbtune-node-agent, or a
// persistent directory to keep originals across reboots too). The directory is created on the
// first write.
func NewStore(dir string) *Store { return &Store{dir: dir} }

// Path is the state file's path.
func (s *Store) Path() string { return filepath.Join(s.dir, StateFileName) }

// Entries lists the devices the agent has changed and not restored, in name order.
func (s *Store) Entries() ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load()
	if err != nil {
		return nil, err
	}
	return st.Devices, nil
}

// Entry returns the entry for a device, if there is one.
func (s *Store) Entry(id DeviceID) (Entry, bool, error) {
	entries, err := s.Entries()
	if err != nil {
		return Entry{}, false, err
	}
	i := slices.IndexFunc(entries, func(e Entry) bool { return e.DeviceID == id })
	if i < 0 {
		return Entry{}, false, nil
	}
	return entries[i], true, nil
}

// SaveOriginal records a device's read-ahead before the agent first changes it, and returns the
// entry. If the device already has an entry, that entry and its original stay as they are: the
// value found now may be the agent's own.
//
// An entry for the same name with another device number belongs to a device that is gone; it
// stays until Restore finds it gone.
func (s *Store) SaveOriginal(id DeviceID, originalKiB int64, policy string) (Entry, error) {
	var saved Entry
	err := s.update(func(st *stateFile) (bool, error) {
		if i := st.index(id); i >= 0 {
			saved = st.Devices[i]
			return false, nil
		}
		saved = Entry{DeviceID: id, OriginalKiB: originalKiB, Policy: policy, SavedAt: s.now()}
		st.Devices = append(st.Devices, saved)
		return true, nil
	})
	return saved, err
}

// RecordApplied records what the kernel kept of a change. The original must have been saved.
func (s *Store) RecordApplied(id DeviceID, appliedKiB int64, policy string) error {
	return s.update(func(st *stateFile) (bool, error) {
		i := st.index(id)
		if i < 0 {
			return false, fmt.Errorf("failed to record the read-ahead applied to %s: %w", id, ErrNotSaved)
		}
		e := &st.Devices[i]
		e.AppliedKiB, e.Policy, e.AppliedAt = &appliedKiB, policy, s.now()
		return true, nil
	})
}

// setPolicy records that another policy now owns a device whose value needed no change. It
// reads first, so the common case (nothing to record) takes no lock and creates no files.
func (s *Store) setPolicy(id DeviceID, policy string) error {
	e, ok, err := s.Entry(id)
	if err != nil || !ok || e.Policy == policy {
		return err
	}
	return s.update(func(st *stateFile) (bool, error) {
		i := st.index(id)
		if i < 0 || st.Devices[i].Policy == policy {
			return false, nil
		}
		st.Devices[i].Policy = policy
		return true, nil
	})
}

// Forget drops a device's entry, after it was restored or found gone.
func (s *Store) Forget(id DeviceID) error {
	return s.update(func(st *stateFile) (bool, error) {
		i := st.index(id)
		if i < 0 {
			return false, nil
		}
		st.Devices = slices.Delete(st.Devices, i, i+1)
		return true, nil
	})
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC().Truncate(time.Second)
}

func (st *stateFile) index(id DeviceID) int {
	return slices.IndexFunc(st.Devices, func(e Entry) bool { return e.DeviceID == id })
}

func (s *Store) update(change func(*stateFile) (bool, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("failed to create the read-ahead state directory: %w", err)
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := s.load()
	if err != nil {
		return err
	}
	changed, err := change(st)
	if err != nil || !changed {
		return err
	}
	return s.write(st)
}

// lock takes an exclusive flock on a separate lock file; the state file itself is replaced on
// every write, so a lock on it would not be held by the next reader.
func (s *Store) lock() (func(), error) {
	path := filepath.Join(s.dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open the read-ahead state lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to lock %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}

func (s *Store) load() (*stateFile, error) {
	b, err := os.ReadFile(s.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return &stateFile{Version: StateVersion}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read the read-ahead state file: %w", err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, &CorruptStateError{Path: s.Path(), Err: err}
	}
	if err := st.validate(); err != nil {
		return nil, &CorruptStateError{Path: s.Path(), Err: err}
	}
	slices.SortFunc(st.Devices, compareEntries)
	return &st, nil
}

func (st *stateFile) validate() error {
	if st.Version != StateVersion {
		return fmt.Errorf("version %d, but this agent reads version %d", st.Version, StateVersion)
	}
	for i, e := range st.Devices {
		switch {
		case e.Name == "" || strings.ContainsAny(e.Name, "/\x00"):
			return fmt.Errorf("device %d has an invalid name %q", i, e.Name)
		case e.Dev.IsZero():
			return fmt.Errorf("device %s has no device number", e.Name)
		case e.OriginalKiB < 0 || (e.AppliedKiB != nil && *e.AppliedKiB < 0):
			return fmt.Errorf("device %s has a negative read-ahead", e.Name)
		case st.index(e.DeviceID) != i:
			return fmt.Errorf("device %s is listed twice", e.DeviceID)
		}
	}
	return nil
}

func compareEntries(a, b Entry) int {
	if c := compareNatural(a.Name, b.Name); c != 0 {
		return c
	}
	return compareNatural(a.Dev.String(), b.Dev.String())
}

func (s *Store) write(st *stateFile) error {
	slices.SortFunc(st.Devices, compareEntries)
	if st.Devices == nil {
		st.Devices = []Entry{}
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to encode the read-ahead state: %w", err)
	}
	if err := writeFileAtomic(s.dir, StateFileName, append(b, '\n')); err != nil {
		return fmt.Errorf("failed to write the read-ahead state file %s: %w", s.Path(), err)
	}
	return nil
}

// writeFileAtomic replaces dir/name so that a crash leaves either the old or the new content:
// the data is synced before the rename and the directory after it, or the rename itself could
// be lost and a reboot bring back the old file.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	renamed = true
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}
