package cloudvolume_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func TestMain(m *testing.M) {
	runChildIfRequested()
	os.Exit(m.Run())
}

// openVolume opens a volume of the given profile and size for t, closed when t ends, or skips t
// (fails it under strict mode) on a machine that cannot make one.
func openVolume(t *testing.T, p cloudvolume.Profile, size int64) *cloudvolume.Volume {
	t.Helper()
	requireMachine(t)
	v, err := cloudvolume.Open(cloudvolume.Options{Profile: p, SizeBytes: size, MountPoint: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := v.Close(); err != nil {
			t.Errorf("failed to close the volume: %v", err)
		}
	})
	t.Logf("Opened a %s volume on %s (direct I/O from the loop device: %t)", p, v.Device(), v.DirectIO())
	return v
}

// requireMachine skips t (fails it under strict mode) without what a volume needs: root, FUSE, loop
// devices and mkfs.ext4.
func requireMachine(t *testing.T) {
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
}

// TestOpenWriteRead writes a file, syncs it, drops it from the page cache and reads it back: the
// bytes must survive the trip through the device, and the device must have counted them.
func TestOpenWriteRead(t *testing.T) {
	v := openVolume(t, cloudvolume.GP3, 256*cloudvolume.MiB)
	data := make([]byte, 8*cloudvolume.MiB)
	for i := range data {
		data[i] = byte(i % 251)
	}
	path := filepath.Join(v.MountPoint(), "f")
	writeSynced(t, path, data)
	dropCache(t, path)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(data))
	}
	st := v.Stats()
	t.Logf("Device counters: %+v", st)
	if st.WriteBytes < int64(len(data)) || st.ReadBytes < int64(len(data)) {
		t.Errorf("the device counted %d bytes written and %d read for a synced %d-byte file read back cold",
			st.WriteBytes, st.ReadBytes, len(data))
	}
}

func writeSynced(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// dropCache evicts a synced file's pages, so that reading it goes to the device.
func dropCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// TestFailedOpenLeavesNothing makes Open fail after its record is written and checks that nothing
// stays behind.
func TestFailedOpenLeavesNothing(t *testing.T) {
	requireMachine(t)
	_, err := cloudvolume.Open(cloudvolume.Options{
		Profile: cloudvolume.GP3, SizeBytes: 128 * cloudvolume.MiB, MountPoint: t.TempDir(),
		BackingDir: filepath.Join(t.TempDir(), "missing"),
	})
	if err == nil {
		t.Fatal("Open succeeded with a backing directory that does not exist")
	}
	t.Logf("Open failed as expected: %v", err)
	if left := leftovers(); len(left) > 0 {
		t.Errorf("the failed Open left: %s", strings.Join(left, "; "))
	}
}

// TestCloseReachesSlaveNamespaces starts a process in a mount namespace made while the volume was
// mounted, with slave propagation as the MariaDB harness's sandboxes use, and checks that Close
// still frees everything: the namespace's copy of the mount must go with the original.
func TestCloseReachesSlaveNamespaces(t *testing.T) {
	requireMachine(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		testenv.SkipOrFail(t, "unshare not found: apt-get install util-linux")
	}
	v, err := cloudvolume.Open(cloudvolume.Options{Profile: cloudvolume.GP3, SizeBytes: 128 * cloudvolume.MiB, MountPoint: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("unshare", "--mount", "--propagation", "slave", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	}()
	waitForMountNamespace(t, holder.Process.Pid)
	if err := v.Close(); err != nil {
		_ = holder.Process.Kill()
		_ = holder.Wait()
		t.Fatalf("Close failed while another mount namespace had a copy of the volume: %v (closing again after it exited: %v)", err, v.Close())
	}
	if left := leftovers(); len(left) > 0 {
		t.Errorf("Close left: %s", strings.Join(left, "; "))
	}
}

// waitForMountNamespace waits until the process runs in a mount namespace other than this one's.
func waitForMountNamespace(t *testing.T, pid int) {
	t.Helper()
	own, _ := os.Readlink("/proc/self/ns/mnt")
	for range 100 {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && ns != own {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d did not enter a mount namespace of its own", pid)
}
