package probe

import (
	"os"
	"testing"
	"time"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// mountTmpfs mounts a fresh tmpfs of the given size, unmounted when the test ends.
func mountTmpfs(t *testing.T, size string, flags uintptr) string {
	t.Helper()
	return testenv.MountTmpfs(t, size, flags)
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
	testenv.SkipOrFail(t, "needs a temporary directory on a disk filesystem; TMPDIR and /var/tmp are RAM-backed")
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
	o.TempFiles = []TempFileSize{{FileBytes: 1 * MiB, Files: 6}, {FileBytes: 4 * MiB, Files: 3}}
	o.FsyncSamples = 100
	o.DeviceReadDuration = 2 * time.Second
	return o
}
