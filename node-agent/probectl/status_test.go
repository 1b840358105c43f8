package probectl

import (
	"errors"
	"strings"
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
		DeviceRead: &probe.ThroughputResult{Bytes: 1 << 30, BlockSizeBytes: 2 << 20, BytesPerSecond: 4e8},
	}
}

func run(targets ...probe.TargetResult) *probe.Result {
	return &probe.Result{Kernel: "6.8.0", FreePageReporting: true, StartTime: t1.Add(-1500 * time.Millisecond), FinishTime: t1.Add(400 * time.Millisecond),
		DurationMilliseconds: 1900, Targets: targets, Speedup: probe.ComputeSpeedup(targets)}
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
		DeviceRead: &v1alpha1.ThroughputResult{Bytes: 1 << 30, BlockSizeBytes: 2 << 20, BytesPerSecond: 4e8},
	}
}

func cond(typ string, status metav1.ConditionStatus, reason, msg string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at)}
}

// previous is the status after a good run at t0, with the read-ahead side's part beside it.
func previous() v1alpha1.NodeIOProfileStatus {
	return v1alpha1.NodeIOProfileStatus{
		Kernel: "6.1.0", LastRunTime: ptr.To(metav1.NewTime(t0)), LastRunDurationMilliseconds: 1200,
		Targets: []v1alpha1.ProbeTargetResult{tmpfsStatus(), diskStatus()},
		Speedup: &v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk", SequentialWrite: "9.67"},
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed, "Measured tmpfs and disk in 1.2s.", t0),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAllTargetsMeasured, "Every target was measured completely.", t0),
			cond(v1alpha1.ConditionReadAheadApplied, metav1.ConditionTrue, "Applied", "vda: 4096 KiB", t0),
		},
		ReadAhead: []v1alpha1.DeviceReadAheadStatus{{Device: "vda", CurrentKiB: ptr.To[int64](4096)}},
	}
}

func TestStatusAfterRun(t *testing.T) {
	full := run(tmpfsResult(), diskResult())
	filled := diskResult()
	filled.ColdRead, filled.DirectWrite, filled.FileChurn, filled.Fdatasync, filled.DeviceRead = nil, nil, nil, nil, nil
	filled.SequentialWrite = &probe.SequentialWriteResult{Bytes: 8 << 20, BlockSizeBytes: 4 << 20, BufferedBytesPerSecond: 1e9, FdatasyncBytesPerSecond: 3e8}
	filled.Error = "O_DIRECT write: the filesystem filled up: /probe/disk/.dbtune-probe-1/direct got 0 of 4194304 bytes: no space left on device"
	filledStatus := diskStatus()
	filledStatus.ColdRead, filledStatus.DirectWrite, filledStatus.FileChurn, filledStatus.Fdatasync, filledStatus.DeviceRead = nil, nil, nil, nil, nil
	filledStatus.Error = filled.Error

	canceledTmpfs := tmpfsResult()
	canceledTmpfs.ColdRead, canceledTmpfs.DirectWrite, canceledTmpfs.FileChurn, canceledTmpfs.Fdatasync = nil, nil, nil, nil
	canceledTmpfs.Error = "cold read: context canceled"
	canceledTmpfsStatus := tmpfsStatus()
	canceledTmpfsStatus.ColdRead, canceledTmpfsStatus.DirectWrite, canceledTmpfsStatus.FileChurn, canceledTmpfsStatus.Fdatasync = nil, nil, nil, nil
	canceledTmpfsStatus.Error = canceledTmpfs.Error
	notProbed := probe.TargetResult{Name: "disk", Path: "/probe/disk", Kind: probe.KindDisk, Error: "not probed: context canceled"}

	fresh := func(targets ...v1alpha1.ProbeTargetResult) v1alpha1.NodeIOProfileStatus {
		return v1alpha1.NodeIOProfileStatus{Kernel: "6.8.0", FreePageReporting: true, LastRunTime: ptr.To(metav1.NewTime(t1)), LastRunDurationMilliseconds: 1900, Targets: targets}
	}
	kept := ownedStatus(previous())
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
			s.Speedup = &v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk", SequentialWrite: "9.67", ColdRead: "12.00", SmallFiles: "10.00", Fdatasync: "1500.00"}
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
			s.Speedup = &v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk", SequentialWrite: "9.67"}
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
		out: runOutcome{Err: errors.New("refusing to start the probe run: target /probe/disk does not exist\n" +
			"target /probe/ro is on a read-only filesystem")},
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
		out:  runOutcome{Result: run(canceledTmpfs, notProbed), Err: errors.New("the probe run stopped early: context canceled")},
		want: func() v1alpha1.NodeIOProfileStatus {
			s := fresh(canceledTmpfsStatus, v1alpha1.ProbeTargetResult{Name: "disk", Path: "/probe/disk", Kind: v1alpha1.TargetDisk, Error: notProbed.Error})
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
		out:  runOutcome{Err: errors.New("refusing to start the probe run: cannot read device /dev/vdz: no such file or directory")},
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
		want := ownedStatus(previous())
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

// TestClassify feeds the messages the probe and the slot pool produce for each failure.
func TestClassify(t *testing.T) {
	tests := []struct{ text, want string }{
		{"refusing to start the probe run: target /x does not exist", v1alpha1.ReasonProbeTargetNotFound},
		{"target /x is not a directory", v1alpha1.ReasonTargetNotDirectory},
		{"target /x is on a read-only filesystem", v1alpha1.ReasonTargetReadOnly},
		{"target disk (/x): sequential write: failed to create /x/.dbtune-probe-1/sequential: read-only file system", v1alpha1.ReasonTargetReadOnly},
		{"target /x is not writable: permission denied", v1alpha1.ReasonTargetNotWritable},
		{"not enough free space in /x: the probe needs 16777216 bytes (16.0 MiB) free (twice what it writes there at once), only 4096 bytes is free", v1alpha1.ReasonNotEnoughSpace},
		{"target tmpfs (/x): sequential write: the filesystem filled up: /x/.dbtune-probe-1/sequential got 1048576 of 4194304 bytes: no space left on device", v1alpha1.ReasonTargetFull},
		{"target disk (/x): fdatasync latency: failed to write /x/f after 0 of 1 bytes: disk quota exceeded", v1alpha1.ReasonTargetFull},
		{"refusing to start the probe run: cannot read device /dev/vdz: permission denied", v1alpha1.ReasonDeviceUnreadable},
		{"refusing to start the probe run: device /tmp/file is not a block device", v1alpha1.ReasonDeviceUnreadable},
		{"target disk (/x): device read: the read of /dev/vda failed after 0 bytes: input/output error", v1alpha1.ReasonDeviceUnreadable},
		{"the probe run stopped early: the run reached its 1m0s time limit: context deadline exceeded", v1alpha1.ReasonTimeLimit},
		{"the probe run stopped early: context canceled", v1alpha1.ReasonCanceled},
		{"the probe run stopped early: lost its probe slot: Lease ns/slot-0 changed hands: conflict", v1alpha1.ReasonSlotLost},
		{"invalid probe options: SeqWriteBytes must be positive, got 0", v1alpha1.ReasonInvalidOptions},
		{"something nobody expected", v1alpha1.ReasonProbeFailed},
	}
	for _, tc := range tests {
		if got := classify(tc.text).reason; got != tc.want {
			t.Errorf("classify(%q) = %s, want %s", tc.text, got, tc.want)
		}
	}
}

func TestMessagesAreBounded(t *testing.T) {
	long := errors.New("refusing to start the probe run: " + strings.Repeat("target /a/very/long/path does not exist\n", 200))
	st := statusAfterRun(v1alpha1.NodeIOProfileStatus{}, runOutcome{Err: long}, t1)
	for _, c := range st.Conditions {
		if len(c.Message) > maxMessageLength {
			t.Errorf("%s message has %d bytes, more than %d", c.Type, len(c.Message), maxMessageLength)
		}
	}
}
