package probe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRunOnTmpfs(t *testing.T) {
	dir := mountTmpfs(t, "64m", 0)
	o := smallOptions()
	res, err := Run(context.Background(), []Target{{Path: dir}}, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertEmpty(t, dir)
	if err := res.Err(); err != nil {
		t.Fatalf("target failed: %v", err)
	}
	tr := res.Targets[0]
	if tr.Name != "tmpfs" || tr.Kind != KindTmpfs || tr.Provenance.FilesystemType != "tmpfs" || tr.Provenance.Device != "" {
		t.Errorf("target identity = %q %q %+v", tr.Name, tr.Kind, tr.Provenance)
	}
	if !strings.Contains(tr.Provenance.MountOptions, "size=65536k") {
		t.Errorf("mount options %q do not show the test mount's size", tr.Provenance.MountOptions)
	}
	assertSequential(t, tr, o)
	if tr.ColdRead == nil || tr.ColdRead.BytesPerSecond <= 0 || tr.ColdRead.Bytes != o.SeqWriteBytes {
		t.Errorf("cold read = %+v", tr.ColdRead)
	} else if !strings.Contains(tr.ColdRead.Note, "tmpfs cannot evict") {
		t.Errorf("a tmpfs cold read must say it was not cold, note = %q", tr.ColdRead.Note)
	}
	assertChurn(t, tr, o)
	assertFsync(t, tr, o)
	assertTempFiles(t, tr.Name, tr.TempFiles, o, "size=65536k")
	assertLargePageTempFiles(t, tr, o)
	if res.TransparentHugePages == nil || res.TransparentHugePages.TmpfsDefault == "" {
		t.Errorf("the run did not report the kernel's large-page settings: %+v", res.TransparentHugePages)
	}
	if res.Kernel == "" || res.Comparison != nil || res.DurationMilliseconds < 0 {
		t.Errorf("run summary: kernel %q, comparison %+v, duration %d ms", res.Kernel, res.Comparison, res.DurationMilliseconds)
	}
}

// TestDirectWriteOnTmpfsMatchesKernel: shmem accepts O_DIRECT from Linux 6.6; before that open fails
// with EINVAL and the probe must say so rather than measure buffered writes.
func TestDirectWriteOnTmpfsMatchesKernel(t *testing.T) {
	dir := mountTmpfs(t, "64m", 0)
	res, err := Run(context.Background(), []Target{{Path: dir}}, smallOptions())
	if err != nil {
		t.Fatal(err)
	}
	d := res.Targets[0].DirectWrite
	major, minor, ok := ParseKernelVersion(res.Kernel)
	if !ok || d == nil {
		t.Fatalf("kernel %q, direct write %+v", res.Kernel, d)
	}
	if versionAtLeast(major, minor, 6, 6) {
		if d.Unsupported != "" || d.BytesPerSecond <= 0 || d.Bytes != 4*MiB {
			t.Errorf("Linux %s supports O_DIRECT on tmpfs, got %+v", res.Kernel, d)
		}
		return
	}
	if !strings.Contains(d.Unsupported, "6.6") || d.BytesPerSecond != 0 {
		t.Errorf("Linux %s refuses O_DIRECT on tmpfs, got %+v", res.Kernel, d)
	}
	assertEmpty(t, dir)
}

func TestRunOnDiskAndTmpfs(t *testing.T) {
	disk := diskDir(t)
	tmpfs := mountTmpfs(t, "64m", 0)
	o := smallOptions()
	res, err := Run(context.Background(), []Target{{Path: disk}, {Name: "ram", Path: tmpfs}}, o)
	if err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, disk)
	assertEmpty(t, tmpfs)
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	d := res.Targets[0]
	if d.Name != "disk" || d.Kind != KindDisk || d.Provenance.FilesystemType == "" {
		t.Errorf("disk target = %q %q %+v", d.Name, d.Kind, d.Provenance)
	}
	assertSequential(t, d, o)
	assertChurn(t, d, o)
	assertFsync(t, d, o)
	assertTempFiles(t, d.Name, d.TempFiles, o, d.Provenance.MountOptions)
	if d.Provenance.MountOptions == "" || d.LargePageTempFiles != nil {
		t.Errorf("disk: mount options %q, large-page temporary files %+v (a disk target has none)", d.Provenance.MountOptions, d.LargePageTempFiles)
	}
	assertLargePageTempFiles(t, res.Targets[1], o)
	if d.DirectWrite == nil || (d.DirectWrite.Unsupported == "" && d.DirectWrite.BytesPerSecond <= 0) {
		t.Errorf("disk O_DIRECT write = %+v", d.DirectWrite)
	}
	c := res.Comparison
	if c == nil || c.TmpfsTarget != "ram" || c.DiskTarget != "disk" || c.BufferedWriteRatio == "" || c.SmallFileCreateRatio == "" ||
		c.SmallFileSizeBytes != o.Churn[0].FileBytes || c.TempFileRatio == "" {
		t.Errorf("comparison = %+v", c)
	}
	if want := TempFileRatio(res.Targets[1].LargePageTempFiles, d.TempFiles); c.LargePageTempFileRatio != want ||
		(largePagesAvailable(t) && want == "") {
		t.Errorf("large-page comparison = %q, want %q", c.LargePageTempFileRatio, want)
	}
}

func TestRunRefusesWithoutFreeSpace(t *testing.T) {
	dir := mountTmpfs(t, "4m", 0)
	o := smallOptions()
	o.SeqWriteBytes = 16 * MiB
	res, err := Run(context.Background(), []Target{{Path: dir}}, o)
	if err == nil {
		t.Fatalf("Run on a 4 MiB tmpfs with a 16 MiB write succeeded: %+v", res)
	}
	for _, want := range []string{dir, "not enough free space", "33554432 bytes", "4194304 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	assertKinds(t, err, ErrNotEnoughSpace)
	assertPath(t, err, dir)
	assertEmpty(t, dir)
}

func TestRunReportsAFullFilesystemCleanly(t *testing.T) {
	dir := mountTmpfs(t, "4m", 0)
	o := smallOptions()
	o.SeqWriteBytes = 16 * MiB
	o.SkipFreeSpaceCheck = true
	res, err := Run(context.Background(), []Target{{Path: dir}}, o)
	if err != nil {
		t.Fatalf("a full target must be a target error, not a run error: %v", err)
	}
	assertEmpty(t, dir)
	tr := res.Targets[0]
	for _, want := range []string{"sequential write", "filled", dir, "no space left on device"} {
		if !strings.Contains(tr.Error, want) {
			t.Errorf("target error %q does not contain %q", tr.Error, want)
		}
	}
	if tr.SequentialWrite != nil || tr.ColdRead != nil {
		t.Errorf("figures reported for a failed write: %+v %+v", tr.SequentialWrite, tr.ColdRead)
	}
	if res.Err() == nil {
		t.Error("Result.Err() is nil for a failed target")
	}
	assertKinds(t, tr.Err, ErrTargetFull, unix.ENOSPC)
	assertKinds(t, res.Err(), ErrTargetFull, unix.ENOSPC)
	if tr.Err == nil || tr.Err.Error() != tr.Error {
		t.Errorf("typed error %v, text %q", tr.Err, tr.Error)
	}
	var e *Error
	if !errors.As(tr.Err, &e) || !strings.HasPrefix(e.Path, dir+"/") || !strings.HasSuffix(e.Path, "/sequential") {
		t.Errorf("the failure %+v does not name the file that filled %s", e, dir)
	}
}

func TestCancellationLeavesNothingBehind(t *testing.T) {
	t.Run("before the first target", func(t *testing.T) {
		dir := mountTmpfs(t, "64m", 0)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res, err := Run(ctx, []Target{{Path: dir}}, smallOptions())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		if !strings.HasPrefix(res.Targets[0].Error, "not probed") {
			t.Errorf("target error = %q", res.Targets[0].Error)
		}
		assertEmpty(t, dir)
	})
	t.Run("during the fdatasync loop", func(t *testing.T) {
		dir := mountTmpfs(t, "64m", 0)
		o := smallOptions()
		// About two million 1-byte write+fdatasync pairs: seconds of work on tmpfs, in a 2 MB file.
		o.FsyncWriteBytes, o.FsyncSamples, o.FsyncMaxDuration = 1, 2_000_000, time.Minute
		// The workloads before it are token-sized, so that they are over well within the deadline
		// on a loaded machine too.
		o.SeqWriteBytes, o.SeqWriteBlockBytes, o.DirectWriteBytes, o.DirectWriteBlockBytes = MiB, MiB, 64*KiB, 64*KiB
		o.Churn = []ChurnSize{{FileBytes: 5000, Files: 10}}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		res, err := Run(ctx, []Target{{Path: dir}}, o)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run = %v, want the caller's deadline", err)
		}
		tr := res.Targets[0]
		if tr.SequentialWrite == nil || !strings.Contains(tr.Error, "fdatasync latency") || tr.Fdatasync != nil {
			t.Errorf("the run did not stop inside the fdatasync loop: error %q, fdatasync %+v", tr.Error, tr.Fdatasync)
		}
		// The caller's deadline is not the run's time limit.
		assertKinds(t, tr.Err, context.DeadlineExceeded)
		assertEmpty(t, dir)
	})
	t.Run("by the run's own time limit", func(t *testing.T) {
		dir := mountTmpfs(t, "64m", 0)
		o := smallOptions()
		o.FsyncWriteBytes, o.FsyncSamples, o.FsyncMaxDuration = 1, 2_000_000, time.Minute
		o.MaxDuration = 300 * time.Millisecond
		res, err := Run(context.Background(), []Target{{Path: dir}}, o)
		if err == nil || !strings.Contains(err.Error(), "time limit") || !strings.Contains(res.Targets[0].Error, "time limit") {
			t.Errorf("Run = %v, target error %q, want the time limit named", err, res.Targets[0].Error)
		}
		assertKinds(t, err, ErrTimeLimit, context.DeadlineExceeded)
		assertKinds(t, res.Targets[0].Err, ErrTimeLimit, context.DeadlineExceeded)
		assertEmpty(t, dir)
	})
}

func assertSequential(t *testing.T, tr TargetResult, o Options) {
	t.Helper()
	w := tr.SequentialWrite
	if w == nil || w.Bytes != o.SeqWriteBytes || w.BlockSizeBytes != o.SeqWriteBlockBytes ||
		w.BufferedBytesPerSecond <= 0 || w.FdatasyncBytesPerSecond <= 0 || w.FdatasyncBytesPerSecond > w.BufferedBytesPerSecond {
		t.Errorf("%s: sequential write = %+v", tr.Name, w)
	}
}

func assertChurn(t *testing.T, tr TargetResult, o Options) {
	t.Helper()
	if len(tr.FileChurn) != len(o.Churn) {
		t.Fatalf("%s: %d churn results, want %d", tr.Name, len(tr.FileChurn), len(o.Churn))
	}
	for i, c := range tr.FileChurn {
		if c.FileSizeBytes != o.Churn[i].FileBytes || int(c.Files) != o.Churn[i].Files ||
			c.CreateFilesPerSecond <= 0 || c.ReadUnlinkFilesPerSecond <= 0 || c.ElapsedMicroseconds <= 0 {
			t.Errorf("%s: churn %d = %+v", tr.Name, i, c)
		}
	}
}

func assertFsync(t *testing.T, tr TargetResult, o Options) {
	t.Helper()
	f := tr.Fdatasync
	if f == nil || int(f.Samples) != o.FsyncSamples || f.WriteSizeBytes != o.FsyncWriteBytes ||
		f.P50Microseconds <= 0 || f.P99Microseconds < f.P50Microseconds || len(f.Buckets) != FsyncBucketCount {
		t.Fatalf("%s: fdatasync = %+v", tr.Name, f)
	}
	if last := f.Buckets[len(f.Buckets)-1].Count; last > int64(f.Samples) {
		t.Errorf("%s: the last bucket counts %d of %d samples", tr.Name, last, f.Samples)
	}
}
