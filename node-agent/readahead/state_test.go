package readahead_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

var update = flag.Bool("update", false, "rewrite the golden state file")

var fixedTime = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func newStore(t *testing.T) *readahead.Store {
	t.Helper()
	s := readahead.NewStore(filepath.Join(t.TempDir(), "dbtune-node-agent"))
	s.Now = func() time.Time { return fixedTime }
	return s
}

func ptr[T any](v T) *T { return &v }

func TestStateFileFormat(t *testing.T) {
	s := newStore(t)
	if _, err := s.SaveOriginal(dm1, 128, "mysql-scans"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordApplied(dm1, 131072, "mysql-scans"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveOriginal(sda, 256, "mysql-scans"); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, s.Path()) + "\n"
	golden := filepath.Join("testdata", "state-v1.json")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(readFile(t, golden)+"\n", got); diff != "" {
		t.Errorf("state file mismatch with %s (-want +got):\n%s", golden, diff)
	}

	dir := filepath.Dir(s.Path())
	for file, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, s.Path(): 0o600} {
		if fi, err := os.Stat(file); err != nil || fi.Mode() != want {
			t.Errorf("%s has mode %v (%v), want %v", file, fi.Mode(), err, want)
		}
	}
}

func TestStateFileReadsBack(t *testing.T) {
	s := newStore(t)
	if err := os.MkdirAll(filepath.Dir(s.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "state-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), golden, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Entries()
	if err != nil {
		t.Fatal(err)
	}
	want := []readahead.Entry{
		{DeviceID: dm1, OriginalKiB: 128, AppliedKiB: ptr[int64](131072), Policy: "mysql-scans", SavedAt: fixedTime, AppliedAt: fixedTime},
		{DeviceID: sda, OriginalKiB: 256, Policy: "mysql-scans", SavedAt: fixedTime},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Entries mismatch (-want +got):\n%s", diff)
	}
}

func TestSaveOriginalKeepsTheFirstValue(t *testing.T) {
	s := newStore(t)
	if _, err := s.SaveOriginal(dm1, 128, "a"); err != nil {
		t.Fatal(err)
	}
	e, err := s.SaveOriginal(dm1, 4096, "b")
	if err != nil {
		t.Fatal(err)
	}
	if e.OriginalKiB != 128 || e.Policy != "a" {
		t.Errorf("second SaveOriginal returned %+v, want the first entry (128 KiB, policy a)", e)
	}
}

func TestReusedNameIsAnotherDevice(t *testing.T) {
	s := newStore(t)
	oldSdb := readahead.DeviceID{Name: "sdb", Dev: readahead.DevNum{Major: 8, Minor: 16}}
	newSdb := readahead.DeviceID{Name: "sdb", Dev: readahead.DevNum{Major: 65, Minor: 16}}
	for _, id := range []readahead.DeviceID{newSdb, oldSdb} {
		if _, err := s.SaveOriginal(id, 128, "p"); err != nil {
			t.Fatal(err)
		}
	}
	if e, ok, err := s.Entry(newSdb); err != nil || !ok || e.DeviceID != newSdb {
		t.Errorf("Entry(%v) = %+v, %t, %v", newSdb, e, ok, err)
	}
	if err := s.Forget(oldSdb); err != nil {
		t.Fatal(err)
	}
	entries, err := s.Entries()
	if err != nil || len(entries) != 1 || entries[0].DeviceID != newSdb {
		t.Errorf("after forgetting the old sdb: %+v, %v; want only the new one", entries, err)
	}
}

func TestRecordAppliedNeedsASavedOriginal(t *testing.T) {
	s := newStore(t)
	if err := s.RecordApplied(sda, 4096, "p"); !errors.Is(err, readahead.ErrNotSaved) {
		t.Errorf("RecordApplied without SaveOriginal: %v, want ErrNotSaved", err)
	}
}

func TestForgetUnknownDeviceWritesNothing(t *testing.T) {
	s := newStore(t)
	if err := s.Forget(sda); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Forget of an unknown device wrote the state file (%v)", err)
	}
}

func TestCorruptStateFile(t *testing.T) {
	const entry = `"majorMinor": "8:0", "originalKiB": 128, "savedAt": "2026-03-14T15:09:26Z"`
	tests := map[string]string{
		"not JSON":            "this is not json",
		"empty":               "",
		"truncated":           `{"version": 1, "devices": [{"name": "sda", ` + entry,
		"trailing garbage":    `{"version": 1, "devices": []} x`,
		"null":                "null",
		"no version":          `{"devices": []}`,
		"newer version":       `{"version": 2, "devices": []}`,
		"bad device number":   `{"version": 1, "devices": [{"name": "sda", "majorMinor": "8", "originalKiB": 128}]}`,
		"zero device number":  `{"version": 1, "devices": [{"name": "sda", "majorMinor": "0:0", "originalKiB": 128}]}`,
		"no name":             `{"version": 1, "devices": [{` + entry + `}]}`,
		"name with a slash":   `{"version": 1, "devices": [{"name": "../sda", ` + entry + `}]}`,
		"negative read-ahead": `{"version": 1, "devices": [{"name": "sda", "majorMinor": "8:0", "originalKiB": -8}]}`,
		"duplicate device":    `{"version": 1, "devices": [{"name": "sda", ` + entry + `}, {"name": "sda", ` + entry + `}]}`,
		"wrong type":          `{"version": "1", "devices": []}`,
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			if err := os.MkdirAll(filepath.Dir(s.Path()), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.Path(), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			ops := map[string]func() error{
				"Entries":       func() error { _, err := s.Entries(); return err },
				"SaveOriginal":  func() error { _, err := s.SaveOriginal(dm1, 128, "p"); return err },
				"RecordApplied": func() error { return s.RecordApplied(sda, 128, "p") },
				"Forget":        func() error { return s.Forget(sda) },
			}
			for op, f := range ops {
				err := f()
				var corrupt *readahead.CorruptStateError
				if !errors.Is(err, readahead.ErrCorruptState) || !errors.As(err, &corrupt) || corrupt.Path != s.Path() {
					t.Errorf("%s: %v, want a *CorruptStateError for %s", op, err, s.Path())
				}
			}
			if got, err := os.ReadFile(s.Path()); err != nil || string(got) != content {
				t.Errorf("the corrupt state file was changed to %q (%v)", got, err)
			}
		})
	}
}

func TestUnreadableStateFileIsNotEmpty(t *testing.T) {
	s := newStore(t)
	if err := os.MkdirAll(s.Path(), 0o700); err != nil { // a directory where the file should be
		t.Fatal(err)
	}
	if entries, err := s.Entries(); err == nil {
		t.Errorf("Entries on an unreadable state file = %v, want an error", entries)
	}
	if _, err := s.SaveOriginal(sda, 128, "p"); err == nil {
		t.Error("SaveOriginal over an unreadable state file succeeded")
	}
}

func TestConcurrentStoresLoseNothing(t *testing.T) {
	dir := t.TempDir()
	const agents, devices = 3, 20
	var wg sync.WaitGroup
	errs := make(chan error, agents*devices)
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := readahead.NewStore(dir) // a Store per agent: only the file lock serializes them
			for d := range devices {
				id := readahead.DeviceID{Name: fmt.Sprintf("sd%d-%d", a, d), Dev: readahead.DevNum{Major: 8, Minor: uint32(a*devices + d)}}
				if _, err := s.SaveOriginal(id, 128, "p"); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, err := readahead.NewStore(dir).Entries()
	if err != nil || len(entries) != agents*devices {
		t.Errorf("%d entries (%v), want %d", len(entries), err, agents*devices)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	if want := []string{"readahead-state.json", "readahead-state.lock"}; !slices.Equal(names, want) {
		t.Errorf("state directory holds %v, want only %v (no temporary files left)", names, want)
	}
}
