package readahead_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

// These tests run against real loop devices and need root; see readaheadtest.RequireRoot.

var (
	realIoctl = readahead.IoctlHost{DevDir: "/dev"}
	realSysfs = readahead.SysfsHost{SysDir: "/sys"}
	realHost  = readahead.NewHost(readahead.Paths{Root: "/"})
)

// sysfsReadAheadKiB reads queue/read_ahead_kb directly, independently of the code under test.
func sysfsReadAheadKiB(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realSysfs.SysDir, "block", name, "queue", "read_ahead_kb"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustSet(t *testing.T, h readahead.Host, id readahead.DeviceID, kib int64) {
	t.Helper()
	if err := h.SetReadAhead(id, kib); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, h readahead.Host, id readahead.DeviceID) int64 {
	t.Helper()
	kib, err := h.ReadAhead(id)
	if err != nil {
		t.Fatal(err)
	}
	return kib
}

func TestLoopSetAndReadBack(t *testing.T) {
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{})
	hosts := []struct {
		name string
		host readahead.Host
	}{{"ioctl", realIoctl}, {"sysfs", realSysfs}, {"auto", realHost}}
	for i, setter := range hosts {
		kib := int64(1024 * (i + 2))
		mustSet(t, setter.host, l.ID(), kib)
		if got := sysfsReadAheadKiB(t, l.Name); got != kib {
			t.Errorf("after setting %d KiB through %s, queue/read_ahead_kb = %d", kib, setter.name, got)
		}
		for _, reader := range hosts {
			if got := mustRead(t, reader.host, l.ID()); got != kib {
				t.Errorf("after setting %d KiB through %s, reading through %s gives %d", kib, setter.name, reader.name, got)
			}
		}
	}
	inv, err := readahead.ReadInventory(readahead.Paths{Root: "/"})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := inv.Device(l.Name)
	if !ok || d.Kind != readahead.KindLoop || d.Dev != l.Dev || d.SizeBytes != 8<<20 || d.ReadAheadKiB != 4096 {
		t.Errorf("inventory has %+v, want a loop device %s of 8 MiB with 4096 KiB read-ahead", d, l.Dev)
	}
}

func TestLoopKernelKeepsWholePages(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skip("expectations assume 4 KiB pages")
	}
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{})
	for _, h := range []readahead.Host{realIoctl, realSysfs} {
		mustSet(t, h, l.ID(), 512)
		c, err := readahead.Set(h, l.ID(), 130)
		if err != nil {
			t.Fatal(err)
		}
		want := readahead.Change{Device: l.ID(), BeforeKiB: 512, RequestedKiB: 130, KeptKiB: 128, Changed: true}
		if diff := cmp.Diff(want, c); diff != "" {
			t.Errorf("%T: Set(130) mismatch (-want +got):\n%s", h, diff)
		}
		if got := sysfsReadAheadKiB(t, l.Name); got != 128 {
			t.Errorf("%T: queue/read_ahead_kb = %d after asking for 130, want 128", h, got)
		}
	}

	// A policy of 130 KiB must not rewrite the device once it holds the 128 KiB the kernel keeps.
	store := readahead.NewStore(t.TempDir())
	req := request{Device: l.ID(), KiB: 130, Mode: v1alpha1.ReadAheadSet, Policy: "odd"}
	c, err := applyPolicy(realHost, store, req)
	if err != nil || c.Changed {
		t.Errorf("Apply(130) on a device at 128 = %+v, %v; want no change", c, err)
	}
	if _, err := os.Stat(store.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an Apply that changed nothing wrote the state file (stat: %v)", err)
	}
}

func TestLoopAtLeastNeverLowers(t *testing.T) {
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{})
	mustSet(t, realIoctl, l.ID(), 1024)
	store := readahead.NewStore(t.TempDir())

	c, err := applyPolicy(realHost, store, request{Device: l.ID(), KiB: 256, Mode: v1alpha1.ReadAheadAtLeast, Policy: "floor"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Changed || sysfsReadAheadKiB(t, l.Name) != 1024 {
		t.Errorf("AtLeast 256 on a device at 1024: %+v, device now %d KiB; want it left at 1024", c, sysfsReadAheadKiB(t, l.Name))
	}

	c, err = applyPolicy(realHost, store, request{Device: l.ID(), KiB: 2048, Mode: v1alpha1.ReadAheadAtLeast, Policy: "floor"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Changed || c.KeptKiB != 2048 || sysfsReadAheadKiB(t, l.Name) != 2048 {
		t.Errorf("AtLeast 2048 on a device at 1024: %+v, device now %d KiB; want 2048", c, sysfsReadAheadKiB(t, l.Name))
	}
}

func TestLoopPartitionStandsForItsDisk(t *testing.T) {
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{Partitioned: true})
	inv, err := readahead.ReadInventory(readahead.Paths{Root: "/"})
	if err != nil {
		t.Fatal(err)
	}
	part, ok := inv.Device(l.Partition)
	if !ok {
		t.Fatalf("inventory does not list %s", l.Partition)
	}
	if part.Kind != readahead.KindPartition || part.Parent != l.Name || part.Dev != l.PartitionDev {
		t.Errorf("%s = %+v, want a partition %s of %s", l.Partition, part, l.PartitionDev, l.Name)
	}
	if d, ok := inv.DeviceByNumber(l.PartitionDev); !ok || d.Name != l.Partition {
		t.Errorf("/sys/dev/block/%s does not lead to %s", l.PartitionDev, l.Partition)
	}

	sel := inv.Select(v1alpha1.DeviceSelector{Names: []v1alpha1.DeviceGlob{v1alpha1.DeviceGlob(l.Partition)}})
	if got, want := sel.IDs(), []readahead.DeviceID{l.ID()}; !cmp.Equal(got, want) || sel.Err() != nil {
		t.Errorf("selecting %s gives %v (problems: %v), want its disk %v", l.Partition, got, sel.Err(), want)
	}

	// The kernel agrees: BLKRASET on the partition node changes the disk, and sysfs shows the
	// disk's value for the partition.
	mustSet(t, realIoctl, l.PartitionID(), 3072)
	if got := sysfsReadAheadKiB(t, l.Name); got != 3072 {
		t.Errorf("after BLKRASET 3072 KiB on %s, %s has %d KiB", l.Partition, l.Name, got)
	}
	if got := mustRead(t, realSysfs, l.PartitionID()); got != 3072 {
		t.Errorf("sysfs read-ahead of %s = %d, want its disk's 3072", l.Partition, got)
	}
}

func TestLoopRestoreExactlyTheOriginal(t *testing.T) {
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{})
	const original = 768
	mustSet(t, realIoctl, l.ID(), original)
	store := readahead.NewStore(filepath.Join(t.TempDir(), "dbtune-node-agent"))

	for _, kib := range []int64{4096, 8192} {
		if _, err := applyPolicy(realHost, store, request{Device: l.ID(), KiB: kib, Policy: "mysql-scans"}); err != nil {
			t.Fatal(err)
		}
		if got := sysfsReadAheadKiB(t, l.Name); got != kib {
			t.Fatalf("after Apply(%d), device has %d KiB", kib, got)
		}
	}
	entries, err := store.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].DeviceID != l.ID() || entries[0].OriginalKiB != original || *entries[0].AppliedKiB != 8192 {
		t.Fatalf("state after two changes = %+v, want one entry for %s with original %d and applied 8192", entries, l.ID(), original)
	}

	r, err := readahead.Restore(realHost, store, l.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.Gone || r.BeforeKiB != 8192 || r.KeptKiB != original || sysfsReadAheadKiB(t, l.Name) != original {
		t.Errorf("Restore = %+v, device %d KiB; want 8192 -> %d", r, sysfsReadAheadKiB(t, l.Name), original)
	}
	if entries, err := store.Entries(); err != nil || len(entries) != 0 {
		t.Errorf("state after restore = %+v, %v; want empty", entries, err)
	}
}

func TestLoopCorruptStateChangesNothing(t *testing.T) {
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{})
	mustSet(t, realIoctl, l.ID(), 512)
	store := readahead.NewStore(t.TempDir())
	if err := os.WriteFile(store.Path(), []byte(`{"version":1,"devices":[{"name":"sda","majorMinor":`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := applyPolicy(realHost, store, request{Device: l.ID(), KiB: 4096, Policy: "p"})
	var corrupt *readahead.CorruptStateError
	if !errors.Is(err, readahead.ErrCorruptState) || !errors.As(err, &corrupt) || corrupt.Path != store.Path() {
		t.Errorf("Apply with a corrupt state file: %v, want a *CorruptStateError for %s", err, store.Path())
	}
	if got := sysfsReadAheadKiB(t, l.Name); got != 512 {
		t.Errorf("device changed to %d KiB although the originals could not be saved", got)
	}
}

func TestLoopVanishedDevice(t *testing.T) {
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{Partitioned: true})
	part := l.PartitionID()
	store := readahead.NewStore(t.TempDir())
	if _, err := store.SaveOriginal(part, 128, "p"); err != nil {
		t.Fatal(err)
	}
	l.Detach(t)

	for name, h := range map[string]readahead.Host{"ioctl": realIoctl, "sysfs": realSysfs, "auto": realHost} {
		_, err := h.ReadAhead(part)
		var de *readahead.DeviceError
		if !errors.Is(err, readahead.ErrDeviceNotFound) || !errors.As(err, &de) {
			t.Errorf("%s: reading a vanished partition: %v, want a DeviceError matching ErrDeviceNotFound", name, err)
		}
		if err := h.SetReadAhead(part, 256); !errors.Is(err, readahead.ErrDeviceNotFound) {
			t.Errorf("%s: setting a vanished partition: %v, want ErrDeviceNotFound", name, err)
		}
	}

	inv, err := readahead.ReadInventory(readahead.Paths{Root: "/"})
	if err != nil {
		t.Fatal(err)
	}
	sel := inv.Select(v1alpha1.DeviceSelector{Names: []v1alpha1.DeviceGlob{v1alpha1.DeviceGlob(l.Partition)}})
	if !errors.Is(sel.Err(), readahead.ErrNoMatch) || len(sel.Devices) != 0 {
		t.Errorf("selecting the vanished %s: %+v, want ErrNoMatch", l.Partition, sel)
	}

	r, err := readahead.Restore(realHost, store, part)
	if err != nil || !r.Gone {
		t.Errorf("Restore of a vanished device = %+v, %v; want Gone", r, err)
	}
	if entries, err := store.Entries(); err != nil || len(entries) != 0 {
		t.Errorf("state after restoring a vanished device = %+v, %v; want empty", entries, err)
	}
}

func TestLoopReusedNameIsNotTouched(t *testing.T) {
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{})
	stale := readahead.DeviceID{Name: l.Name, Dev: readahead.DevNum{Major: l.Dev.Major, Minor: l.Dev.Minor + 1000}}
	mustSet(t, realIoctl, l.ID(), 640)
	for name, h := range map[string]readahead.Host{"ioctl": realIoctl, "sysfs": realSysfs, "auto": realHost} {
		if err := h.SetReadAhead(stale, 4096); !errors.Is(err, readahead.ErrDeviceChanged) {
			t.Errorf("%s: setting %s through a stale ID: %v, want ErrDeviceChanged", name, l.Name, err)
		}
	}
	if got := sysfsReadAheadKiB(t, l.Name); got != 640 {
		t.Errorf("device changed to %d KiB through a stale ID", got)
	}
}
