package probecmd

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// skipOrFail skips a test whose environment is missing, except under DBTUNE_TEST_STRICT=1 (CI).
func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("DBTUNE_TEST_STRICT") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func mountTmpfs(t *testing.T, size string, flags uintptr) string {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root to mount tmpfs: run as root or in CI")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size="+size); err != nil {
		skipOrFail(t, fmt.Sprintf("needs CAP_SYS_ADMIN to mount tmpfs (%v): run as root or in CI", err))
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("failed to unmount %s: %v", dir, err)
		}
	})
	return dir
}

// smallFlags keeps a real run to a fraction of a second.
var smallFlags = []string{
	"--seq-write-bytes", "8Mi", "--seq-write-block-bytes", "4Mi", "--direct-write-bytes", "4Mi",
	"--churn", "5000:100", "--churn", "5M:2", "--fsync-samples", "50",
}
