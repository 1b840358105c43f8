package probe

import "time"

// Kind tells what kind of storage a target is. The values are those of the API's TargetKind.
type Kind string

const (
	// KindTmpfs is a RAM-backed filesystem (tmpfs, ramfs).
	KindTmpfs Kind = "Tmpfs"
	// KindDisk is anything else: a filesystem on a block device, a network or a FUSE filesystem.
	KindDisk Kind = "Disk"
)

// Target is one directory to probe.
type Target struct {
	// Name identifies the target in the results; when empty it is derived from the kind ("tmpfs",
	// "disk", then "disk-2", …).
	Name string
	// Path is an existing, writable directory. The probe works in a private subdirectory of it.
	Path string
	// Device, when set, is a block device (for example /dev/vda) to read raw, like `hdparm -t`.
	Device string
}

// Result is one probe run over all targets.
type Result struct {
	// Kernel is the kernel release (uname -r); results from different kernels are not comparable.
	Kernel string `json:"kernel,omitempty"`
	// FreePageReporting says the machine's balloon hands free memory back to the hypervisor, which
	// makes the buffered figures vary from run to run (see FreePageReporting).
	FreePageReporting bool `json:"freePageReporting,omitempty"`
	// TransparentHugePages is what the kernel says about large pages on tmpfs; nil when its
	// settings could not be read.
	TransparentHugePages *TransparentHugePages `json:"transparentHugePages,omitempty"`
	// StartTime is when the run started.
	StartTime time.Time `json:"startTime"`
	// FinishTime is when the run finished (the API's lastRunTime).
	FinishTime time.Time `json:"finishTime"`
	// DurationMilliseconds is how long the run took, clean-up included.
	DurationMilliseconds int64 `json:"durationMilliseconds"`
	// Targets holds one result per target, in the order given.
	Targets []TargetResult `json:"targets"`
	// Comparison sets the tmpfs target beside the disk target when there is exactly one of each.
	Comparison *Comparison `json:"comparison,omitempty"`
}

// TargetResult holds every measurement for one directory.
type TargetResult struct {
	// Name identifies the target (tmpfs, disk, or the name given).
	Name string `json:"name"`
	// Path is the directory probed.
	Path string `json:"path"`
	// Kind is Tmpfs or Disk, from the filesystem magic number.
	Kind Kind `json:"kind,omitempty"`
	// Provenance describes the storage under Path.
	Provenance Provenance `json:"provenance,omitempty"`
	// SequentialWrite is the large streaming write.
	SequentialWrite *SequentialWriteResult `json:"sequentialWrite,omitempty"`
	// DirectWrite is the O_DIRECT streaming write.
	DirectWrite *ThroughputResult `json:"directWrite,omitempty"`
	// ColdRead reads the sequential-write file back after asking the kernel to drop it from the cache.
	ColdRead *ThroughputResult `json:"coldRead,omitempty"`
	// FileChurn holds one result per file size.
	FileChurn []FileChurnResult `json:"fileChurn,omitempty"`
	// Fdatasync is the small-write sync latency.
	Fdatasync *FdatasyncResult `json:"fdatasync,omitempty"`
	// TempFiles holds the temporary-file pattern, one result per file size, on the target as it
	// is mounted.
	TempFiles []TempFileResult `json:"tempFiles,omitempty"`
	// LargePageTempFiles is the same pattern on a detached tmpfs with huge=within_size, for a tmpfs
	// target only: what a ScratchVolume's tmpfs runs with.
	LargePageTempFiles []TempFileResult `json:"largePageTempFiles,omitempty"`
	// DeviceRead is the raw buffered read of Target.Device.
	DeviceRead *ThroughputResult `json:"deviceRead,omitempty"`
	// Error says why the target could not be probed completely; the workloads before it stand.
	Error string `json:"error,omitempty"`
	// Err is the error whose message Error is: it matches the sentinel of its kind (ErrTargetFull,
	// ErrTimeLimit, …) and its cause with errors.Is. It is not serialized, so it is nil in a result
	// read back from JSON.
	Err error `json:"-"`
}

// Provenance says what a probe measured, so that two results can be compared honestly.
type Provenance struct {
	// FilesystemType as the kernel names it (tmpfs, ext4, xfs, …).
	FilesystemType string `json:"filesystemType,omitempty"`
	// MountPoint is the mount the target lives on, as this process sees it.
	MountPoint string `json:"mountPoint,omitempty"`
	// MountOptions are the per-mount options followed by the superblock options not already listed.
	MountOptions string `json:"mountOptions,omitempty"`
	// Device is the whole-disk kernel name under the filesystem (vda, nvme0n1, dm-0); a partition is
	// reported as its parent disk. Empty for tmpfs and for filesystems without a local block device.
	Device string `json:"device,omitempty"`
	// Rotational is queue/rotational of Device.
	Rotational *bool `json:"rotational,omitempty"`
	// Scheduler is the active I/O scheduler of Device (the bracketed entry of queue/scheduler).
	Scheduler string `json:"scheduler,omitempty"`
	// ReadAheadKiB is queue/read_ahead_kb of Device at probe time.
	ReadAheadKiB *int64 `json:"readAheadKiB,omitempty"`
}

// SequentialWriteResult is a `dd bs=128M count=2`-style write.
type SequentialWriteResult struct {
	// Bytes written.
	Bytes int64 `json:"bytes,omitempty"`
	// BlockSizeBytes is the size of each write call.
	BlockSizeBytes int64 `json:"blockSizeBytes,omitempty"`
	// BufferedBytesPerSecond is the rate until the last write returned, like plain dd.
	BufferedBytesPerSecond int64 `json:"bufferedBytesPerSecond,omitempty"`
	// FdatasyncBytesPerSecond includes a final fdatasync, like `dd conv=fdatasync`.
	FdatasyncBytesPerSecond int64 `json:"fdatasyncBytesPerSecond,omitempty"`
}

// ThroughputResult is one streaming measurement.
type ThroughputResult struct {
	// Bytes moved. It is below the configured size when a time cap stopped the loop.
	Bytes int64 `json:"bytes,omitempty"`
	// BlockSizeBytes is the size of each read or write call.
	BlockSizeBytes int64 `json:"blockSizeBytes,omitempty"`
	// BytesPerSecond is Bytes divided by the elapsed time.
	BytesPerSecond int64 `json:"bytesPerSecond,omitempty"`
	// Unsupported explains why the filesystem refused this workload; no figure is reported then.
	Unsupported string `json:"unsupported,omitempty"`
	// Note qualifies the figure, for example a "cold" read that was served from memory because
	// tmpfs cannot drop its pages.
	Note string `json:"note,omitempty"`
}

// FileChurnResult is a create/write/close pass over Files files, then an open/read/close/unlink pass.
type FileChurnResult struct {
	// FileSizeBytes is the size of each file.
	FileSizeBytes int64 `json:"fileSizeBytes"`
	// Files is how many files went through both passes (fewer than asked when a time cap hit).
	Files int32 `json:"files,omitempty"`
	// CreateFilesPerSecond is the rate of create+write+close.
	CreateFilesPerSecond int64 `json:"createFilesPerSecond,omitempty"`
	// ReadUnlinkFilesPerSecond is the rate of open+read+close+unlink.
	ReadUnlinkFilesPerSecond int64 `json:"readUnlinkFilesPerSecond,omitempty"`
	// ElapsedMicroseconds is the time of both passes.
	ElapsedMicroseconds int64 `json:"elapsedMicroseconds,omitempty"`
}

// TempFileResult is what a database server's temporary files do on a filesystem: unlinked files
// (O_TMPFILE), each written in BlockSizeBytes writes, read back with preads of the same size and
// closed, one after another. No fdatasync: temporary files are never synced.
type TempFileResult struct {
	// FileSizeBytes is the size of each file.
	FileSizeBytes int64 `json:"fileSizeBytes"`
	// BlockSizeBytes is the size of each write and pread.
	BlockSizeBytes int64 `json:"blockSizeBytes,omitempty"`
	// Files is how many files were written, read and closed (fewer than asked when the time cap
	// hit).
	Files int32 `json:"files,omitempty"`
	// BytesPerSecond is the bytes written (each is read back once) divided by the time of the loop.
	BytesPerSecond int64 `json:"bytesPerSecond,omitempty"`
	// ElapsedMicroseconds is the time of the whole loop: opens, writes, preads and closes.
	ElapsedMicroseconds int64 `json:"elapsedMicroseconds,omitempty"`
	// MountOptions are the options of the filesystem measured: the target's, or those the probe
	// mounted its own tmpfs with.
	MountOptions string `json:"mountOptions,omitempty"`
	// Unsupported explains why this variant could not be measured; no figure is reported then.
	Unsupported string `json:"unsupported,omitempty"`
}

// TransparentHugePages is what the kernel says about large pages on tmpfs.
type TransparentHugePages struct {
	// ShmemEnabled is the selected value of transparent_hugepage/shmem_enabled; empty when the
	// kernel has no transparent huge pages.
	ShmemEnabled string `json:"shmemEnabled,omitempty"`
	// TmpfsDefault is the huge= option a tmpfs mounted without one gets.
	TmpfsDefault string `json:"tmpfsDefault,omitempty"`
}

// FdatasyncResult is etcd's disk check: small sequential writes, each followed by fdatasync.
type FdatasyncResult struct {
	// WriteSizeBytes is the size of each write.
	WriteSizeBytes int64 `json:"writeSizeBytes,omitempty"`
	// Samples is the number of write+fdatasync pairs measured.
	Samples int32 `json:"samples,omitempty"`
	// P50Microseconds is the median fdatasync latency, rounded up to a whole microsecond.
	P50Microseconds int64 `json:"p50Microseconds,omitempty"`
	// P99Microseconds is the 99th percentile fdatasync latency, rounded up; etcd wants < 10 ms.
	P99Microseconds int64 `json:"p99Microseconds,omitempty"`
	// Buckets is a cumulative histogram with etcd's wal_fsync_duration_seconds boundaries.
	Buckets []HistogramBucket `json:"buckets,omitempty"`
}

// HistogramBucket is one cumulative histogram bucket, as in Prometheus.
type HistogramBucket struct {
	// UpperBoundMicroseconds is the bucket's inclusive upper bound.
	UpperBoundMicroseconds int64 `json:"upperBoundMicroseconds"`
	// Count of samples at or below the bound.
	Count int64 `json:"count"`
}

// Comparison sets a tmpfs target beside a disk target in what temporary files do on both. Ratios
// are the tmpfs figure divided by the disk's, as decimal strings with two decimals ("9.40"); a ratio
// is empty when either side is missing or zero. There is no fdatasync ratio: fdatasync on tmpfs is
// a no-op, so the disk's latency stands on its own (TargetResult.Fdatasync).
type Comparison struct {
	// TmpfsTarget names the tmpfs result compared.
	TmpfsTarget string `json:"tmpfsTarget,omitempty"`
	// DiskTarget names the disk result compared.
	DiskTarget string `json:"diskTarget,omitempty"`
	// BufferedWriteRatio compares the sequential write's BufferedBytesPerSecond: no fdatasync on
	// either side, as temporary files are written.
	BufferedWriteRatio string `json:"bufferedWriteRatio,omitempty"`
	// ColdReadRatio compares the cold sequential read (on tmpfs a memory read: it cannot evict).
	ColdReadRatio string `json:"coldReadRatio,omitempty"`
	// SmallFileCreateRatio compares create rates of the smallest file size both targets measured.
	SmallFileCreateRatio string `json:"smallFileCreateRatio,omitempty"`
	// SmallFileSizeBytes is the file size SmallFileCreateRatio compares.
	SmallFileSizeBytes int64 `json:"smallFileSizeBytes,omitempty"`
	// TempFileRatio compares the temporary-file pattern on the tmpfs as mounted with the disk's.
	TempFileRatio string `json:"tempFileRatio,omitempty"`
	// LargePageTempFileRatio compares it on a tmpfs with huge=within_size with the disk's.
	LargePageTempFileRatio string `json:"largePageTempFileRatio,omitempty"`
}
