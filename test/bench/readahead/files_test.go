package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func TestMain(m *testing.M) {
	runMmapChildIfRequested()
	os.Exit(m.Run())
}

// openVolume opens an unthrottled cloud volume for t, closed when t ends, or skips t (fails it
// under strict mode) on a machine that cannot make one.
func openVolume(t *testing.T) *cloudvolume.Volume {
	t.Helper()
	testenv.RequireRoot(t, "mount a FUSE file system, bind a loop device and mount ext4")
	for _, dev := range []string{"/dev/fuse", "/dev/loop-control"} {
		if _, err := os.Stat(dev); err != nil {
			testenv.SkipOrFail(t, "%s is missing (%v): load the fuse and loop modules (modprobe fuse loop)", dev, err)
		}
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		testenv.SkipOrFail(t, "mkfs.ext4 not found: apt-get install e2fsprogs")
	}
	if err := restoreLeftovers(StateDir, t.Logf); err != nil {
		t.Fatal(err)
	}
	v, err := cloudvolume.Open(cloudvolume.Options{Profile: cloudvolume.LocalNVMe, SizeBytes: 256 << 20, MountPoint: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := v.Close(); err != nil {
			t.Errorf("failed to close the volume: %v", err)
		}
	})
	return v
}

// The read-ahead is set through the node agent's package and kept by the kernel; the original is
// in the agent's state file while it is changed, and comes back both from restore and, after a
// run that was killed before it could restore, from the next run's restoreLeftovers.
func TestDeviceSetsAndRestoresReadAhead(t *testing.T) {
	v := openVolume(t)
	sysfs := "/sys/block/" + filepath.Base(v.Device()) + "/queue/read_ahead_kb"
	original := readKiB(t, sysfs)
	d, err := openDevice(v.Device(), StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if d.OriginalKiB != original || d.MaxSectorsKiB <= 0 {
		t.Errorf("openDevice read %d KiB and max_sectors_kb %d, sysfs has %d KiB", d.OriginalKiB, d.MaxSectorsKiB, original)
	}
	for _, kib := range []int64{131072, 128, 4096} {
		if err := d.set(kib); err != nil {
			t.Fatal(err)
		}
		if got := readKiB(t, sysfs); got != kib {
			t.Errorf("after set(%d) sysfs has %d KiB", kib, got)
		}
		if e, ok, err := d.store.Entry(d.id); err != nil || !ok || e.OriginalKiB != original {
			t.Errorf("while the device is changed the state file holds %+v, %t, %v, want its original %d KiB", e, ok, err, original)
		}
	}
	// As the next run after a killed one does.
	if err := restoreLeftovers(StateDir, t.Logf); err != nil {
		t.Fatal(err)
	}
	if got := readKiB(t, sysfs); got != original {
		t.Errorf("after restoreLeftovers sysfs has %d KiB, want the original %d", got, original)
	}
	if err := d.set(1024); err != nil {
		t.Fatal(err)
	}
	if err := d.restore(); err != nil {
		t.Fatal(err)
	}
	if got := readKiB(t, sysfs); got != original {
		t.Errorf("after restore sysfs has %d KiB, want the original %d", got, original)
	}
	if entries, err := d.store.Entries(); err != nil || len(entries) != 0 {
		t.Errorf("after restore the state file holds %+v, %v; want nothing", entries, err)
	}
}

func readKiB(t *testing.T, path string) int64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A run starts with nothing of its file cached, so that every byte it reads comes from the device,
// and a random read through a mapping reads around each fault as far as the read-ahead reaches,
// while one with pread reads what it asked for: what the benchmark's workloads stand on.
func TestReadsReachTheDevice(t *testing.T) {
	v := openVolume(t)
	d, err := openDevice(v.Device(), StateDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.restore(); err != nil {
			t.Error(err)
		}
	})
	path := filepath.Join(v.MountPoint(), "f")
	const size = 64 << 20
	if err := writeFile(path, size); err != nil {
		t.Fatal(err)
	}
	measure := func(kib int64, read func() (int64, error)) (asked, device, cached int64) {
		t.Helper()
		if err := d.set(kib); err != nil {
			t.Fatal(err)
		}
		if err := dropCache(path); err != nil {
			t.Fatal(err)
		}
		settled := (&bench{vol: v}).settledStats
		before := settled().ReadBytes
		asked, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if cached, err = cachedBytes(path); err != nil {
			t.Fatal(err)
		}
		return asked, settled().ReadBytes - before, cached
	}
	asked, device, cached := measure(128, func() (int64, error) { return sequentialRead(path, logBlock) })
	if asked != size || device < size || cached != size {
		t.Errorf("a sequential read of %d MiB read %d bytes, %d from the device, and left %d cached", size>>20, asked, device, cached)
	}
	one := [][]int64{{32 << 20}}
	for _, tc := range []struct {
		name      string
		kib       int64
		read      func(string, int, [][]int64) (int64, float64, error)
		atLeast   int64
		atMost    int64
		describes string
	}{
		{"pread, 32 MiB read-ahead", 32768, timedRandomRead, randomBlock, 256 << 10, "a lone pread is read as asked"},
		{"mmap, 128 KiB read-ahead", 128, mmapRandomRead, randomBlock, 256 << 10, "a fault reads around it, within the read-ahead"},
		{"mmap, 32 MiB read-ahead", 32768, mmapRandomRead, 16 << 20, 33 << 20, "a fault reads around it, as far as the read-ahead"},
	} {
		_, device, _ := measure(tc.kib, func() (int64, error) {
			n, _, err := tc.read(path, randomBlock, one)
			return n, err
		})
		if device < tc.atLeast || device > tc.atMost {
			t.Errorf("%s: one 16 KiB read made the device read %d KiB, want %d to %d KiB: %s", tc.name, device>>10, tc.atLeast>>10, tc.atMost>>10, tc.describes)
		}
	}
}

func timedRandomRead(path string, block int, offsets [][]int64) (int64, float64, error) {
	return timed(func() (int64, error) { return randomRead(path, block, offsets) })
}
