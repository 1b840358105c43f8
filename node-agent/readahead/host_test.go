package readahead_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

var (
	sda  = readahead.DeviceID{Name: "sda", Dev: readahead.DevNum{Major: 8, Minor: 0}}
	sda2 = readahead.DeviceID{Name: "sda2", Dev: readahead.DevNum{Major: 8, Minor: 2}}
	dm1  = readahead.DeviceID{Name: "dm-1", Dev: readahead.DevNum{Major: 253, Minor: 1}}
)

func readFile(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestSysfsHostOnFixture(t *testing.T) {
	paths := readaheadtest.Fixture(t, "lvm")
	h := readahead.SysfsHost{SysDir: paths.SysDir()}

	if got := mustRead(t, h, dm1); got != 4096 {
		t.Errorf("read-ahead of dm-1 = %d, want the fixture's 4096", got)
	}
	mustSet(t, h, dm1, 8192)
	if got := readFile(t, filepath.Join(paths.SysDir(), "block", "dm-1", "queue", "read_ahead_kb")); got != "8192" {
		t.Errorf("dm-1 queue/read_ahead_kb = %q after setting 8192", got)
	}

	// A partition has no queue of its own: both operations go to its disk.
	mustSet(t, h, sda2, 1024)
	if got := readFile(t, filepath.Join(paths.SysDir(), "block", "sda", "queue", "read_ahead_kb")); got != "1024" {
		t.Errorf("sda queue/read_ahead_kb = %q after setting 1024 on sda2", got)
	}
	if got := mustRead(t, h, sda2); got != 1024 {
		t.Errorf("read-ahead of sda2 = %d, want its disk's 1024", got)
	}
}

func TestSysfsHostErrors(t *testing.T) {
	paths := readaheadtest.Fixture(t, "lvm")
	h := readahead.SysfsHost{SysDir: paths.SysDir()}
	sdd := readahead.DeviceID{Name: "sdd", Dev: readahead.DevNum{Major: 8, Minor: 48}}
	reused := readahead.DeviceID{Name: "sda", Dev: readahead.DevNum{Major: 8, Minor: 64}}

	_, err := h.ReadAhead(sdd)
	var de *readahead.DeviceError
	if !errors.Is(err, readahead.ErrDeviceNotFound) || !errors.As(err, &de) || de.Device != sdd {
		t.Errorf("reading a missing device: %v, want a DeviceError for sdd matching ErrDeviceNotFound", err)
	}
	if err := h.SetReadAhead(reused, 4096); !errors.Is(err, readahead.ErrDeviceChanged) ||
		!strings.Contains(err.Error(), "sda is now 8:0") {
		t.Errorf("setting sda under another number: %v, want ErrDeviceChanged naming the number found", err)
	}
	if got := readFile(t, filepath.Join(paths.SysDir(), "block", "sda", "queue", "read_ahead_kb")); got != "128" {
		t.Errorf("sda changed to %s through a stale ID", got)
	}
}

func TestNewHostFallsBackToSysfsWithoutDeviceNodes(t *testing.T) {
	paths := readaheadtest.Fixture(t, "crypt") // no dev/ in the fixture, like a pod without /dev
	dm2 := readahead.DeviceID{Name: "dm-2", Dev: readahead.DevNum{Major: 253, Minor: 2}}

	if _, err := (readahead.IoctlHost{DevDir: paths.DevDir()}).ReadAhead(dm2); !errors.Is(err, readahead.ErrDeviceNotFound) {
		t.Fatalf("the ioctl host found a device node in the fixture: %v", err)
	}
	h := readahead.NewHost(paths)
	mustSet(t, h, dm2, 16384)
	if got := mustRead(t, h, dm2); got != 16384 {
		t.Errorf("read-ahead through the fallback = %d, want 16384", got)
	}
	gone := readahead.DeviceID{Name: "dm-9", Dev: readahead.DevNum{Major: 253, Minor: 9}}
	_, err := h.ReadAhead(gone)
	if !errors.Is(err, readahead.ErrDeviceNotFound) || strings.Count(err.Error(), "failed to") != 1 {
		t.Errorf("a device missing from both /dev and sysfs: %v, want one ErrDeviceNotFound from sysfs", err)
	}
}

func TestIoctlHostRefusesNonDeviceNodes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sda"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readahead.IoctlHost{DevDir: dir}.ReadAhead(sda)
	if !errors.Is(err, readahead.ErrDeviceChanged) || !strings.Contains(err.Error(), "not a block device node") {
		t.Errorf("ReadAhead on a regular file: %v, want ErrDeviceChanged", err)
	}
}
