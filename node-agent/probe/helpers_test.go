package probe

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// skipOrFail skips a test whose environment is missing, except under DBTUNE_TEST_STRICT=1 (CI),
// where a skipped real-system test would hide a regression behind a green run.
func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("DBTUNE_TEST_STRICT") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root to "+why+": run as root or in CI")
	}
}

// mountTmpfs mounts a fresh tmpfs of the given size (a tmpfs size= value) and unmounts it when the
// test ends.
func mountTmpfs(t *testing.T, size string, flags uintptr) string {
	t.Helper()
	requireRoot(t, "mount tmpfs")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size="+size); err != nil {
		skipOrFail(t, fmt.Sprintf("needs CAP_SYS_ADMIN to mount tmpfs (%v): run as root or in CI", err))
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("failed to unmount the test tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// diskDir returns a directory on a real disk filesystem.
func diskDir(t *testing.T) string {
	t.Helper()
	for _, parent := range []string{"", "/var/tmp"} {
		dir, err := os.MkdirTemp(parent, "probe-disk-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		if kind, _, err := Inspect(dir, Options{}); err == nil && kind == KindDisk {
			return dir
		}
	}
	skipOrFail(t, "needs a temporary directory on a disk filesystem; TMPDIR and /var/tmp are RAM-backed")
	return ""
}

// assertEmpty fails when the probe left anything in dir.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("failed to list %s: %v", dir, err)
	}
	for _, e := range entries {
		t.Errorf("the probe left %s behind in %s", e.Name(), dir)
	}
}

// smallOptions keeps a real run to a fraction of a second and a few MiB.
func smallOptions() Options {
	o := DefaultOptions()
	o.SeqWriteBytes, o.SeqWriteBlockBytes = 8*MiB, 4*MiB
	o.ColdReadBlockBytes = 1 * MiB
	o.DirectWriteBytes, o.DirectWriteBlockBytes = 4*MiB, 512*KiB
	o.Churn = []ChurnSize{{FileBytes: 5000, Files: 200}, {FileBytes: 5_000_000, Files: 3}}
	o.FsyncSamples = 100
	o.DeviceReadDuration = 2 * time.Second
	return o
}
