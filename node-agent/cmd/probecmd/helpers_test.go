package probecmd

import (
	"testing"

	"github.com/dbtune/scratch-operator/test/testenv"
)

func mountTmpfs(t *testing.T, size string, flags uintptr) string {
	t.Helper()
	return testenv.MountTmpfs(t, size, flags)
}

// smallFlags keeps a real run to a fraction of a second.
var smallFlags = []string{
	"--seq-write-bytes", "8Mi", "--seq-write-block-bytes", "4Mi", "--direct-write-bytes", "4Mi",
	"--churn", "5000:100", "--churn", "5M:2", "--temp-files", "1Mi:4", "--temp-files", "4Mi:2", "--fsync-samples", "50",
}
