package probectl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/probe"
)

var (
	t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	t1 = time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC)
)

func tmpfsResult() probe.TargetResult {
	return probe.TargetResult{
		Name: "tmpfs", Path: "/probe/tmpfs", Kind: probe.KindTmpfs,
		Provenance:      probe.Provenance{FilesystemType: "tmpfs", MountPoint: "/probe/tmpfs", MountOptions: "rw,size=65536k"},
		SequentialWrite: &probe.SequentialWriteResult{Bytes: 8 << 20, BlockSizeBytes: 4 << 20, BufferedBytesPerSecond: 3e9, FdatasyncBytesPerSecond: 2.9e9},
		ColdRead:        &probe.ThroughputResult{Bytes: 8 << 20, BlockSizeBytes: 1 << 20, BytesPerSecond: 6e9, Note: "tmpfs cannot evict its pages"},
		DirectWrite:     &probe.ThroughputResult{Unsupported: "O_DIRECT on tmpfs needs Linux 6.6"},
		FileChurn:       []probe.FileChurnResult{{FileSizeBytes: 5000, Files: 100, CreateFilesPerSecond: 200000, ReadUnlinkFilesPerSecond: 300000, ElapsedMicroseconds: 900}},
		Fdatasync: &probe.FdatasyncResult{WriteSizeBytes: 2300, Samples: 50, P50Microseconds: 1, P99Microseconds: 2,
			Buckets: []probe.HistogramBucket{{UpperBoundMicroseconds: 1000, Count: 50}, {UpperBoundMicroseconds: 2000, Count: 50}}},
		TempFiles: []probe.TempFileResult{{FileSizeBytes: 4 << 20, BlockSizeBytes: 64 << 10, Files: 10, BytesPerSecond: 1048576000,
			ElapsedMicroseconds: 40_000, MountOptions: "rw,size=65536k"}},
		LargePageTempFiles: []probe.TempFileResult{{FileSizeBytes: 4 << 20, BlockSizeBytes: 64 << 10, Files: 10, BytesPerSecond: 4194304000,
			ElapsedMicroseconds: 10_000, MountOptions: "size=65536k,huge=within_size"}},
	}
}

func diskResult() probe.TargetResult {
	return probe.TargetResult{
		Name: "disk", Path: "/probe/disk", Kind: probe.KindDisk,
		Provenance: probe.Provenance{FilesystemType: "ext4", MountPoint: "/", MountOptions: "rw,relatime", Device: "vda",
			Rotational: ptr.To(false), Scheduler: "mq-deadline", ReadAheadKiB: ptr.To[int64](128)},
		SequentialWrite: &probe.SequentialWriteResult{Bytes: 8 << 20, BlockSizeBytes: 4 << 20, BufferedBytesPerSecond: 1e9, FdatasyncBytesPerSecond: 3e8},
		ColdRead:        &probe.ThroughputResult{Bytes: 8 << 20, BlockSizeBytes: 1 << 20, BytesPerSecond: 5e8},
		DirectWrite:     &probe.ThroughputResult{Bytes: 4 << 20, BlockSizeBytes: 512 << 10, BytesPerSecond: 2e8},
		FileChurn:       []probe.FileChurnResult{{FileSizeBytes: 5000, Files: 100, CreateFilesPerSecond: 20000, ReadUnlinkFilesPerSecond: 30000, ElapsedMicroseconds: 9000}},
		Fdatasync: &probe.FdatasyncResult{WriteSizeBytes: 2300, Samples: 50, P50Microseconds: 900, P99Microseconds: 3000,
			Buckets: []probe.HistogramBucket{{UpperBoundMicroseconds: 1000, Count: 30}, {UpperBoundMicroseconds: 2000, Count: 45}}},
		TempFiles: []probe.TempFileResult{{FileSizeBytes: 4 << 20, BlockSizeBytes: 64 << 10, Files: 10, BytesPerSecond: 2097152000,
			ElapsedMicroseconds: 20_000, MountOptions: "rw,relatime"}},
		DeviceRead: &probe.ThroughputResult{Bytes: 1 << 30, BlockSizeBytes: 2 << 20, BytesPerSecond: 4e8},
	}
}

// failed records err as the reason t was not probed completely, as the probe does.
func failed(t probe.TargetResult, err error) probe.TargetResult {
	t.Err, t.Error = err, err.Error()
	return t
}

func run(targets ...probe.TargetResult) *probe.Result {
	return &probe.Result{Kernel: "6.8.0", FreePageReporting: true, TransparentHugePages: &probe.TransparentHugePages{ShmemEnabled: "never", TmpfsDefault: "never"},
		StartTime: t1.Add(-1500 * time.Millisecond), FinishTime: t1.Add(400 * time.Millisecond),
		DurationMilliseconds: 1900, Targets: targets, Comparison: probe.ComputeComparison(targets)}
}

func tmpfsStatus() v1alpha1.ProbeTargetResult {
	return v1alpha1.ProbeTargetResult{
		Name: "tmpfs", Path: "/probe/tmpfs", Kind: v1alpha1.TargetTmpfs,
		Provenance:      v1alpha1.StorageProvenance{FilesystemType: "tmpfs", MountPoint: "/probe/tmpfs", MountOptions: "rw,size=65536k"},
		SequentialWrite: &v1alpha1.SequentialWriteResult{Bytes: 8 << 20, BlockSizeBytes: 4 << 20, BufferedBytesPerSecond: 3e9, FdatasyncBytesPerSecond: 2.9e9},
		ColdRead:        &v1alpha1.ThroughputResult{Bytes: 8 << 20, BlockSizeBytes: 1 << 20, BytesPerSecond: 6e9, Note: "tmpfs cannot evict its pages"},
		DirectWrite:     &v1alpha1.ThroughputResult{Unsupported: "O_DIRECT on tmpfs needs Linux 6.6"},
		FileChurn:       []v1alpha1.FileChurnResult{{FileSizeBytes: 5000, Files: 100, CreateFilesPerSecond: 200000, ReadUnlinkFilesPerSecond: 300000, ElapsedMicroseconds: 900}},
		Fdatasync: &v1alpha1.FdatasyncResult{WriteSizeBytes: 2300, Samples: 50, P50Microseconds: 1, P99Microseconds: 2,
			Buckets: []v1alpha1.HistogramBucket{{UpperBoundMicroseconds: 1000, Count: 50}, {UpperBoundMicroseconds: 2000, Count: 50}}},
		TempFiles: []v1alpha1.TempFileResult{{FileSizeBytes: 4 << 20, BlockSizeBytes: 64 << 10, Files: 10, BytesPerSecond: 1048576000,
			ElapsedMicroseconds: 40_000, MountOptions: "rw,size=65536k"}},
		LargePageTempFiles: []v1alpha1.TempFileResult{{FileSizeBytes: 4 << 20, BlockSizeBytes: 64 << 10, Files: 10, BytesPerSecond: 4194304000,
			ElapsedMicroseconds: 10_000, MountOptions: "size=65536k,huge=within_size"}},
	}
}

func diskStatus() v1alpha1.ProbeTargetResult {
	return v1alpha1.ProbeTargetResult{
		Name: "disk", Path: "/probe/disk", Kind: v1alpha1.TargetDisk,
		Provenance: v1alpha1.StorageProvenance{FilesystemType: "ext4", MountPoint: "/", MountOptions: "rw,relatime", Device: "vda",
			Rotational: ptr.To(false), Scheduler: "mq-deadline", ReadAheadKiB: ptr.To[int64](128)},
		SequentialWrite: &v1alpha1.SequentialWriteResult{Bytes: 8 << 20, BlockSizeBytes: 4 << 20, BufferedBytesPerSecond: 1e9, FdatasyncBytesPerSecond: 3e8},
		ColdRead:        &v1alpha1.ThroughputResult{Bytes: 8 << 20, BlockSizeBytes: 1 << 20, BytesPerSecond: 5e8},
		DirectWrite:     &v1alpha1.ThroughputResult{Bytes: 4 << 20, BlockSizeBytes: 512 << 10, BytesPerSecond: 2e8},
		FileChurn:       []v1alpha1.FileChurnResult{{FileSizeBytes: 5000, Files: 100, CreateFilesPerSecond: 20000, ReadUnlinkFilesPerSecond: 30000, ElapsedMicroseconds: 9000}},
		Fdatasync: &v1alpha1.FdatasyncResult{WriteSizeBytes: 2300, Samples: 50, P50Microseconds: 900, P99Microseconds: 3000,
			Buckets: []v1alpha1.HistogramBucket{{UpperBoundMicroseconds: 1000, Count: 30}, {UpperBoundMicroseconds: 2000, Count: 45}}},
		TempFiles: []v1alpha1.TempFileResult{{FileSizeBytes: 4 << 20, BlockSizeBytes: 64 << 10, Files: 10, BytesPerSecond: 2097152000,
			ElapsedMicroseconds: 20_000, MountOptions: "rw,relatime"}},
		DeviceRead: &v1alpha1.ThroughputResult{Bytes: 1 << 30, BlockSizeBytes: 2 << 20, BytesPerSecond: 4e8},
	}
}

func cond(typ string, status metav1.ConditionStatus, reason, msg string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at)}
}

// previous is the status an agent of the release before wrote after a good run at t0, with the
// read-ahead side's part beside it: its speedup still holds the figures that compared with
// tmpfs's no-op fdatasync, and it has no comparison.
//
//nolint:staticcheck // the deprecated speedup is what an older agent wrote
func previous() v1alpha1.NodeIOProfileStatus {
	return v1alpha1.NodeIOProfileStatus{
		Kernel: "6.1.0", LastRunTime: ptr.To(metav1.NewTime(t0)), LastRunDurationMilliseconds: 1200,
		Targets: []v1alpha1.ProbeTargetResult{tmpfsStatus(), diskStatus()},
		Speedup: &v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk", SequentialWrite: "9.67", ColdRead: "12.00", SmallFiles: "10.00", Fdatasync: "1500.00"},
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed, "Measured tmpfs and disk in 1.2s.", t0),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAllTargetsMeasured, "Every target was measured completely.", t0),
			cond(v1alpha1.ConditionReadAheadApplied, metav1.ConditionTrue, "Applied", "vda: 4096 KiB", t0),
		},
		ReadAhead: []v1alpha1.DeviceReadAheadStatus{{Device: "vda", CurrentKiB: ptr.To[int64](4096)}},
	}
}

// keptFromPrevious is the agent's part of previous() as this agent keeps it: without the retired
// speedup figures.
//
//nolint:staticcheck // the deprecated speedup is still published for one release
func keptFromPrevious() v1alpha1.NodeIOProfileStatus {
	s := ownedStatus(previous())
	s.Speedup = &v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk", ColdRead: "12.00", SmallFiles: "10.00"}
	return s
}

//nolint:staticcheck // the deprecated speedup is still published for one release
func TestStatusAfterRun(t *testing.T) {
	full := run(tmpfsResult(), diskResult())
	filled := diskResult()
	filled.ColdRead, filled.DirectWrite, filled.FileChurn, filled.TempFiles, filled.Fdatasync, filled.DeviceRead = nil, nil, nil, nil, nil, nil
	filled.SequentialWrite = &probe.SequentialWriteResult{Bytes: 8 << 20, BlockSizeBytes: 4 << 20, BufferedBytesPerSecond: 1e9, FdatasyncBytesPerSecond: 3e8}
	const direct = "/probe/disk/.dbtune-probe-1/direct"
	filled = failed(filled, fmt.Errorf("O_DIRECT write: %w", &probe.Error{Kind: probe.ErrTargetFull, Path: direct,
		Err: fmt.Errorf("the filesystem filled up: %s got 0 of 4194304 bytes: %w", direct, syscall.ENOSPC)}))
	filledStatus := diskStatus()
	filledStatus.ColdRead, filledStatus.DirectWrite, filledStatus.FileChurn, filledStatus.TempFiles, filledStatus.Fdatasync, filledStatus.DeviceRead =
		nil, nil, nil, nil, nil, nil
	filledStatus.Error = filled.Error

	canceledTmpfs := tmpfsResult()
	canceledTmpfs.ColdRead, canceledTmpfs.DirectWrite, canceledTmpfs.FileChurn, canceledTmpfs.Fdatasync = nil, nil, nil, nil
	canceledTmpfs.TempFiles, canceledTmpfs.LargePageTempFiles = nil, nil
	canceledTmpfs = failed(canceledTmpfs, fmt.Errorf("cold read: %w", context.Canceled))
	canceledTmpfsStatus := tmpfsStatus()
	canceledTmpfsStatus.ColdRead, canceledTmpfsStatus.DirectWrite, canceledTmpfsStatus.FileChurn, canceledTmpfsStatus.Fdatasync = nil, nil, nil, nil
	canceledTmpfsStatus.TempFiles, canceledTmpfsStatus.LargePageTempFiles = nil, nil
	canceledTmpfsStatus.Error = canceledTmpfs.Error
	notProbed := failed(probe.TargetResult{Name: "disk", Path: "/probe/disk", Kind: probe.KindDisk},
		&probe.Error{Kind: probe.ErrNotProbed, Path: "/probe/disk", Err: fmt.Errorf("not probed: %w", context.Canceled)})

	fresh := func(targets ...v1alpha1.ProbeTargetResult) v1alpha1.NodeIOProfileStatus {
		return v1alpha1.NodeIOProfileStatus{Kernel: "6.8.0", FreePageReporting: true,
			TransparentHugePages: &v1alpha1.TransparentHugePages{ShmemEnabled: "never", TmpfsDefault: "never"},
			LastRunTime:          ptr.To(metav1.NewTime(t1)), LastRunDurationMilliseconds: 1900, Targets: targets}
	}
	kept := keptFromPrevious()
	kept.Conditions = nil

	tests := []struct {
		name string
		prev v1alpha1.NodeIOProfileStatus
		out  runOutcome
		want v1alpha1.NodeIOProfileStatus
		// conds are the expected Probed and Degraded conditions.
		conds []metav1.Condition
	}{{
		name: "first complete run",
		out:  runOutcome{Result: full},
		want: func() v1alpha1.NodeIOProfileStatus {
			s := fresh(tmpfsStatus(), diskStatus())
			// The write compares the buffered rates (3e9 / 1e9), not the synced ones (2.9e9 / 3e8).
			// The temporary files took 40 ms on the tmpfs as mounted, 10 ms with large pages and
			// 20 ms on the disk.
			s.Comparison = &v1alpha1.TmpfsDiskComparison{TmpfsTarget: "tmpfs", DiskTarget: "disk", BufferedWriteRatio: "3.00",
				ColdReadRatio: "12.00", SmallFileCreateRatio: "10.00", SmallFileSizeBytes: 5000,
				TempFileRatio: "0.50", LargePageTempFileRatio: "2.00"}
			s.Speedup = &v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk", ColdRead: "12.00", SmallFiles: "10.00"}
			return s
		}(),
		conds: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed, "Measured tmpfs and disk in 1.9s.", t1),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAllTargetsMeasured, "Every target was measured completely.", t1),
		},
	}, {
		name: "a good run after a good run keeps the transition times and drops the read-ahead part",
		prev: previous(),
		out:  runOutcome{Result: run(tmpfsResult())},
		want: fresh(tmpfsStatus()),
		conds: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed, "Measured tmpfs in 1.9s.", t0),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAllTargetsMeasured, "Every target was measured completely.", t0),
		},
	}, {
		name: "a disk that fills up keeps its partial figures",
		prev: previous(),
		out:  runOutcome{Result: run(tmpfsResult(), filled)},
		want: func() v1alpha1.NodeIOProfileStatus {
			s := fresh(tmpfsStatus(), filledStatus)
			s.Comparison = &v1alpha1.TmpfsDiskComparison{TmpfsTarget: "tmpfs", DiskTarget: "disk", BufferedWriteRatio: "3.00"}
			s.Speedup = &v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk"}
			return s
		}(),
		conds: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonPartiallyProbed,
				"Measured tmpfs completely and disk in part in 1.9s; the Degraded condition says what is missing.", t0),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonTargetFull,
				"Target disk (/probe/disk): O_DIRECT write: the filesystem filled up: /probe/disk/.dbtune-probe-1/direct got 0 of 4194304 bytes: no space left on device. "+
					"The filesystem filled up during the run and the probe removed its files; free space, enlarge the tmpfs or lower the probe sizes.", t1),
		},
	}, {
		name: "a refused run keeps the previous figures",
		prev: previous(),
		out: runOutcome{Err: fmt.Errorf("refusing to start the probe run: %w", errors.Join(
			&probe.Error{Kind: probe.ErrTargetNotFound, Path: "/probe/disk", Err: errors.New("target /probe/disk does not exist")},
			&probe.Error{Kind: probe.ErrReadOnly, Path: "/probe/ro", Err: errors.New("target /probe/ro is on a read-only filesystem")}))},
		want: kept,
		conds: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionFalse, v1alpha1.ReasonProbeTargetNotFound,
				"Nothing was measured: Refusing to start the probe run: target /probe/disk does not exist. "+
					"Create the directory or fix the --target path; for a hostPath volume, check the path on the node. "+
					"Target /probe/ro is on a read-only filesystem. Mount the target read-write into the agent's pod. "+
					"The figures of the run that finished at 2026-03-01T10:00:00Z are kept.", t1),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonProbeTargetNotFound,
				"Refusing to start the probe run: target /probe/disk does not exist. "+
					"Create the directory or fix the --target path; for a hostPath volume, check the path on the node. "+
					"Target /probe/ro is on a read-only filesystem. Mount the target read-write into the agent's pod.", t1),
		},
	}, {
		name: "a run canceled midway lists the cause once",
		out:  runOutcome{Result: run(canceledTmpfs, notProbed), Err: fmt.Errorf("the probe run stopped early: %w", context.Canceled)},
		want: func() v1alpha1.NodeIOProfileStatus {
			s := fresh(canceledTmpfsStatus, v1alpha1.ProbeTargetResult{Name: "disk", Path: "/probe/disk", Kind: v1alpha1.TargetDisk, Error: notProbed.Error})
			s.Comparison = &v1alpha1.TmpfsDiskComparison{TmpfsTarget: "tmpfs", DiskTarget: "disk"}
			s.Speedup = &v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk"}
			return s
		}(),
		conds: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonPartiallyProbed,
				"Measured tmpfs in part in 1.9s; the Degraded condition says what is missing.", t1),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonCanceled,
				"The probe run stopped early: context canceled. The agent was stopping; its files were removed and the next run measures again. "+
					"Target tmpfs (/probe/tmpfs): cold read: context canceled.", t1),
		},
	}, {
		name: "a device that cannot be read",
		out: runOutcome{Err: fmt.Errorf("refusing to start the probe run: %w", errors.Join(&probe.Error{Kind: probe.ErrDeviceUnreadable,
			Path: "/dev/vdz", Err: fmt.Errorf("cannot read device /dev/vdz: %w", syscall.ENOENT)}))},
		conds: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionFalse, v1alpha1.ReasonDeviceUnreadable,
				"Nothing was measured: Refusing to start the probe run: cannot read device /dev/vdz: no such file or directory. "+
					"Check that the device node exists in the agent's pod and that the agent may open it for reading (it must run privileged).", t1),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDeviceUnreadable,
				"Refusing to start the probe run: cannot read device /dev/vdz: no such file or directory. "+
					"Check that the device node exists in the agent's pod and that the agent may open it for reading (it must run privileged).", t1),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := statusAfterRun(tc.prev, tc.out, t1.Add(300*time.Millisecond))
			want := tc.want
			want.Conditions = tc.conds
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusWhileWaiting(t *testing.T) {
	const msg = "Waiting for a probe slot: at most 1 node(s) probe at once (Leases dbtune-system/dbtune-probe-slot-*), and the slots are held by node-b_1234."
	t.Run("figures of an earlier run stay valid", func(t *testing.T) {
		got := statusWhileWaiting(previous(), msg, t1)
		want := keptFromPrevious()
		want.Conditions[0] = cond(v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonWaitingForSlot, msg, t0)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})
	t.Run("never probed", func(t *testing.T) {
		got := statusWhileWaiting(v1alpha1.NodeIOProfileStatus{}, msg, t1)
		want := v1alpha1.NodeIOProfileStatus{Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionUnknown, v1alpha1.ReasonWaitingForSlot, msg, t1)}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})
}

// TestKinds maps each sentinel to its reason: a sentinel wrapped anywhere in an error gives its
// reason, whatever the words.
func TestKinds(t *testing.T) {
	want := map[error]string{
		errSlotLost:               v1alpha1.ReasonSlotLost,
		context.Canceled:          v1alpha1.ReasonCanceled,
		probe.ErrTimeLimit:        v1alpha1.ReasonTimeLimit,
		probe.ErrInvalidOptions:   v1alpha1.ReasonInvalidOptions,
		probe.ErrDeviceUnreadable: v1alpha1.ReasonDeviceUnreadable,
		probe.ErrTargetNotFound:   v1alpha1.ReasonProbeTargetNotFound,
		probe.ErrNotDirectory:     v1alpha1.ReasonTargetNotDirectory,
		probe.ErrReadOnly:         v1alpha1.ReasonTargetReadOnly,
		probe.ErrNotEnoughSpace:   v1alpha1.ReasonNotEnoughSpace,
		probe.ErrTargetFull:       v1alpha1.ReasonTargetFull,
		probe.ErrNotWritable:      v1alpha1.ReasonTargetNotWritable,
	}
	if len(kinds) != len(want) {
		t.Errorf("%d kinds, want %d", len(kinds), len(want))
	}
	for sentinel, reason := range want {
		for _, err := range []error{
			sentinel,
			fmt.Errorf("target disk (/x): sequential write: %w", sentinel),
			&probe.Error{Kind: sentinel, Path: "/x", Err: errors.New("words that name no kind")},
		} {
			p := classify("text", err)
			if p.reason != reason || p.text != "text" || p.advice == "" {
				t.Errorf("classify(%q) = %+v, want reason %s with advice", err, p, reason)
			}
		}
	}
	for _, err := range []error{
		errors.New("the filesystem filled up, permission denied, context canceled: words alone name nothing"),
		&probe.Error{Path: "/x", Err: fmt.Errorf("failed to write /x: %w", syscall.EIO)},
		context.DeadlineExceeded, // the agent's own deadline, not the run's time limit
		probe.ErrNotProbed,
	} {
		if p := classify("text", err); p.reason != v1alpha1.ReasonProbeFailed || p.advice != "" {
			t.Errorf("classify(%q) = %+v, want %s", err, p, v1alpha1.ReasonProbeFailed)
		}
	}
}

// TestKindPrecedence: an error that matches several kinds gets the first: the cause of a stop
// before what it interrupted, the device before the errno it failed with.
func TestKindPrecedence(t *testing.T) {
	slotLost := fmt.Errorf("%w: Lease ns/slot-0 changed hands: %w", errSlotLost, context.Canceled)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a lost slot also cancels", slotLost, v1alpha1.ReasonSlotLost},
		{"a workload the slot loss stopped", &probe.Error{Kind: probe.ErrDeviceUnreadable, Err: fmt.Errorf("device read: %w", slotLost)},
			v1alpha1.ReasonSlotLost},
		{"a cancellation during a device read", &probe.Error{Kind: probe.ErrDeviceUnreadable, Err: context.Canceled}, v1alpha1.ReasonCanceled},
		{"the time limit during a write that failed",
			errors.Join(&probe.Error{Kind: probe.ErrTargetFull, Err: syscall.ENOSPC}, &probe.Error{Kind: probe.ErrTimeLimit, Err: context.DeadlineExceeded}),
			v1alpha1.ReasonTimeLimit},
		{"a device that may not be opened", &probe.Error{Kind: probe.ErrDeviceUnreadable, Path: "/dev/vda",
			Err: fmt.Errorf("cannot read device /dev/vda: %w", &probe.Error{Kind: probe.ErrNotWritable, Err: syscall.EACCES})},
			v1alpha1.ReasonDeviceUnreadable},
		{"a read-only filesystem also refuses writes", errors.Join(probe.ErrNotWritable, probe.ErrReadOnly), v1alpha1.ReasonTargetReadOnly},
		{"a full target that also refuses its clean-up", errors.Join(probe.ErrNotWritable, probe.ErrTargetFull), v1alpha1.ReasonTargetFull},
	}
	for _, tc := range tests {
		if got := classify("text", tc.err).reason; got != tc.want {
			t.Errorf("%s: reason %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestRunProblems: a run's error gives one problem per joined error, classified on its own, with
// the wrappers' prefix on the first as the message reads.
func TestRunProblems(t *testing.T) {
	notFound := &probe.Error{Kind: probe.ErrTargetNotFound, Path: "/a", Err: errors.New("target /a does not exist")}
	file := &probe.Error{Kind: probe.ErrNotDirectory, Path: "/b", Err: errors.New("target /b is not a directory")}
	plain := errors.New("two targets are named \"x\"; target names must be unique")
	options := errors.Join(
		&probe.Error{Kind: probe.ErrInvalidOptions, Err: errors.New("SeqWriteBytes must be positive, got 0")},
		errors.Join(&probe.Error{Kind: probe.ErrInvalidOptions, Err: errors.New("MaxDuration must be positive, got 0s")}))
	type want struct{ Reason, Text string }
	tests := []struct {
		name string
		err  error
		want []want
	}{{
		name: "refused targets",
		err:  fmt.Errorf("refusing to start the probe run: %w", errors.Join(notFound, file, plain)),
		want: []want{
			{v1alpha1.ReasonProbeTargetNotFound, "refusing to start the probe run: target /a does not exist"},
			{v1alpha1.ReasonTargetNotDirectory, "target /b is not a directory"},
			{v1alpha1.ReasonProbeFailed, plain.Error()},
		},
	}, {
		name: "nested joins of invalid options",
		err:  fmt.Errorf("invalid probe options: %w", options),
		want: []want{
			{v1alpha1.ReasonInvalidOptions, "invalid probe options: SeqWriteBytes must be positive, got 0"},
			{v1alpha1.ReasonInvalidOptions, "MaxDuration must be positive, got 0s"},
		},
	}, {
		name: "one error",
		err:  fmt.Errorf("the probe run stopped early: %w", fmt.Errorf("%w: Lease ns/slot-0 changed hands: conflict", errSlotLost)),
		want: []want{{v1alpha1.ReasonSlotLost, "the probe run stopped early: lost its probe slot: Lease ns/slot-0 changed hands: conflict"}},
	}, {
		name: "a wrapper that rewords the join is one problem",
		err:  &probe.Error{Kind: probe.ErrTimeLimit, Err: errors.Join(notFound, file)},
		want: []want{{v1alpha1.ReasonTimeLimit, "target /a does not exist\ntarget /b is not a directory"}},
	}}
	for _, tc := range tests {
		var got []want
		for _, p := range runProblems(tc.err) {
			got = append(got, want{p.reason, p.text})
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestJudgeRealProbeFailures runs the real probe into each failure it can meet without root, and
// checks the reason the status gets. The envtest suite does the same through the agent, with the
// faults that need root.
func TestJudgeRealProbeFailures(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		ctx     func() context.Context
		targets []probe.Target
		options func(o *probe.Options)
		want    string
	}{
		{name: "missing directory", targets: []probe.Target{{Path: filepath.Join(dir, "missing")}}, want: v1alpha1.ReasonProbeTargetNotFound},
		{name: "a file", targets: []probe.Target{{Path: file}}, want: v1alpha1.ReasonTargetNotDirectory},
		{name: "missing device", targets: []probe.Target{{Path: dir, Device: "/dev/dbtune-no-such-device"}}, want: v1alpha1.ReasonDeviceUnreadable},
		{name: "a device that is a file", targets: []probe.Target{{Path: dir, Device: file}}, want: v1alpha1.ReasonDeviceUnreadable},
		{name: "invalid options", targets: []probe.Target{{Path: dir}},
			options: func(o *probe.Options) { o.DirectWriteBlockBytes, o.MaxDuration = 1000, 0 }, want: v1alpha1.ReasonInvalidOptions},
		{name: "not enough space", targets: []probe.Target{{Path: dir}},
			options: func(o *probe.Options) { o.SeqWriteBytes, o.MaxTotalWriteBytes = 1<<50, 1<<52 }, want: v1alpha1.ReasonNotEnoughSpace},
		{name: "time limit", targets: []probe.Target{{Path: dir}},
			options: func(o *probe.Options) { o.MaxDuration = time.Nanosecond }, want: v1alpha1.ReasonTimeLimit},
		{name: "canceled", targets: []probe.Target{{Path: dir}}, want: v1alpha1.ReasonCanceled,
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			}},
		{name: "slot lost", targets: []probe.Target{{Path: dir}}, want: v1alpha1.ReasonSlotLost,
			ctx: func() context.Context {
				ctx, cancel := context.WithCancelCause(context.Background())
				cancel(fmt.Errorf("%w: Lease ns/slot-0 changed hands: %w", errSlotLost, errors.New("conflict")))
				return ctx
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := probe.DefaultOptions()
			o.SeqWriteBytes, o.SeqWriteBlockBytes, o.DirectWriteBytes, o.DirectWriteBlockBytes = probe.MiB, probe.MiB, 64*probe.KiB, 64*probe.KiB
			o.Churn, o.FsyncSamples = []probe.ChurnSize{{FileBytes: 5000, Files: 5}}, 5
			if tc.options != nil {
				tc.options(&o)
			}
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			res, err := probe.Run(ctx, tc.targets, o)
			if err == nil {
				t.Fatalf("the run succeeded: %+v", res)
			}
			st := statusAfterRun(v1alpha1.NodeIOProfileStatus{}, runOutcome{Result: res, Err: err}, t1)
			for _, c := range st.Conditions {
				if c.Status == metav1.ConditionTrue && c.Type == v1alpha1.ConditionProbed {
					continue
				}
				if c.Reason != tc.want {
					t.Errorf("%s = %s (%s), want %s", c.Type, c.Reason, c.Message, tc.want)
				}
			}
			for _, tr := range tc.targets {
				if entries, _ := os.ReadDir(tr.Path); len(entries) > 1 {
					t.Errorf("the run left files in %s: %v", tr.Path, entries)
				}
			}
		})
	}
}

// TestTargetErrorWithoutType: a result read back from JSON has only the text of a target's error,
// which names no kind.
func TestTargetErrorWithoutType(t *testing.T) {
	tr := diskResult()
	tr.DeviceRead, tr.Error = nil, "device read: failed to open device /dev/vda: permission denied"
	v := judge(runOutcome{Result: run(tr)})
	if len(v.problems) != 1 || v.problems[0].reason != v1alpha1.ReasonProbeFailed ||
		v.problems[0].text != "target disk (/probe/disk): "+tr.Error || len(v.partial) != 1 {
		t.Errorf("verdict = %+v", v)
	}
}

func TestMessagesAreBounded(t *testing.T) {
	var errs []error
	for range 200 {
		errs = append(errs, &probe.Error{Kind: probe.ErrTargetNotFound, Path: "/a/very/long/path",
			Err: errors.New("target /a/very/long/path does not exist")})
	}
	long := fmt.Errorf("refusing to start the probe run: %w", errors.Join(errs...))
	st := statusAfterRun(v1alpha1.NodeIOProfileStatus{}, runOutcome{Err: long}, t1)
	for _, c := range st.Conditions {
		if len(c.Message) > maxMessageLength {
			t.Errorf("%s message has %d bytes, more than %d", c.Type, len(c.Message), maxMessageLength)
		}
		if c.Reason != v1alpha1.ReasonProbeTargetNotFound {
			t.Errorf("%s reason = %s", c.Type, c.Reason)
		}
	}
}
