package probecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunRejectsBadInput(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no target", nil, 2, "no target"},
		{"stray argument", []string{"/dev/shm"}, 2, `unexpected argument "/dev/shm"`},
		{"unknown flag", []string{"--target", tmp, "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"unknown output", []string{"--target", tmp, "-o", "yaml"}, 2, `unknown output format "yaml"`},
		{"size that is not a size", []string{"--target", tmp, "--seq-write-bytes", "lots"}, 2, `"lots" is not a size`},
		{"negative size", []string{"--target", tmp, "--seq-write-bytes", "-5Mi"}, 2, "not a positive whole number of bytes"},
		{"churn without count", []string{"--target", tmp, "--churn", "5000"}, 2, "is not size:files"},
		{"churn with zero files", []string{"--target", tmp, "--churn", "5000:0"}, 2, "file count must be a positive integer"},
		{"temp files without count", []string{"--target", tmp, "--temp-files", "4Mi"}, 2, "is not size:files"},
		{"a temp-file size twice", []string{"--target", tmp, "--temp-files", "4Mi:2", "--temp-files", "4Mi:3"}, 1, "repeats the file size"},
		{"bad duration", []string{"--target", tmp, "--timeout", "soon"}, 2, "invalid value"},
		{"missing target", []string{"--target", filepath.Join(tmp, "nope")}, 1, "nope does not exist"},
		{"target is a file", []string{"--target", file}, 1, file + " is not a directory"},
		{"zero timeout", []string{"--target", tmp, "--timeout", "0s"}, 1, "MaxDuration must be positive"},
		{"unaligned O_DIRECT block", []string{"--target", tmp, "--direct-write-block-bytes", "1000"}, 1, "multiple of 4096"},
		{"device naming no target", []string{"--target", "a=" + tmp, "--device", "b=/dev/null"}, 2, "names no target"},
		{"device that is not a block device", []string{"--target", "a=" + tmp, "--device", "a=" + file}, 1, "is not a block device"},
		{"unreadable device", []string{"--target", "a=" + tmp, "--device", "a=/dev/does-not-exist"}, 1, "cannot read device /dev/does-not-exist"},
		{"two devices for one target", []string{"--target", "a=" + tmp, "--device", "a=/dev/null", "--device", "a=/dev/zero"}, 2, "one --device per target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.want)
			}
			if stdout != "" {
				t.Errorf("a rejected run printed %q", stdout)
			}
		})
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
		t.Errorf("rejected runs left files in %s: %v", tmp, entries)
	}
}

func TestRunRejectsReadOnlyTarget(t *testing.T) {
	dir := mountTmpfs(t, "8m", unix.MS_RDONLY)
	code, _, stderr := run(t, "--target", dir)
	if code == 0 || !strings.Contains(stderr, dir+" is on a read-only filesystem") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestDeviceNeedsADiskTarget(t *testing.T) {
	dir := mountTmpfs(t, "8m", 0)
	code, _, stderr := run(t, "--target", dir, "--device", "/dev/null")
	if code != 2 || !strings.Contains(stderr, "needs a disk target") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestRunJSONOnTmpfs(t *testing.T) {
	dir := mountTmpfs(t, "64m", 0)
	code, stdout, stderr := run(t, append([]string{"--target", "scratch=" + dir, "-o", "json"}, smallFlags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res probe.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("output is not a probe.Result: %v\n%s", err, stdout)
	}
	if len(res.Targets) != 1 || res.Targets[0].Name != "scratch" || res.Targets[0].Kind != probe.KindTmpfs {
		t.Fatalf("targets = %+v", res.Targets)
	}
	tr := res.Targets[0]
	if tr.SequentialWrite == nil || tr.SequentialWrite.Bytes != 8*probe.MiB || len(tr.FileChurn) != 2 || tr.Fdatasync == nil || tr.Fdatasync.Samples != 50 {
		t.Errorf("the size flags did not reach the probe: %s", stdout)
	}
	if len(tr.TempFiles) != 2 || tr.TempFiles[1].FileSizeBytes != 4*probe.MiB || tr.TempFiles[1].Files != 2 || len(tr.LargePageTempFiles) != 2 {
		t.Errorf("the temporary-file flags did not reach the probe: %+v, %+v", tr.TempFiles, tr.LargePageTempFiles)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe left %v in %s", entries, dir)
	}
}

func TestRunTableOnTmpfsAndDisk(t *testing.T) {
	tmpfs := mountTmpfs(t, "64m", 0)
	disk, err := os.MkdirTemp("/var/tmp", "probecmd-test-")
	if err != nil {
		testenv.SkipOrFail(t, "needs /var/tmp on a disk: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(disk) })
	code, stdout, stderr := run(t, append([]string{"--target", tmpfs, "--target", disk}, smallFlags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"tmpfs/disk", "MB/s", "files/s", "µs", "5000 B files: create", "not cold",
		"temp files 4 MiB (bs 64 KiB)", "temp files, all sizes, huge=within_size", "Large pages on tmpfs"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	t.Log("\n" + stdout)
}
