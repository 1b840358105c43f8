package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TargetKind tells what kind of storage a probe target is.
//
// +kubebuilder:validation:Enum=Tmpfs;Disk
type TargetKind string

const (
	// TargetTmpfs is a RAM-backed filesystem (tmpfs, ramfs).
	TargetTmpfs TargetKind = "Tmpfs"
	// TargetDisk is a filesystem on a block device.
	TargetDisk TargetKind = "Disk"
)

// StorageProvenance says what a probe measured, so that two results can be compared honestly.
type StorageProvenance struct {
	// FilesystemType as the kernel names it (tmpfs, ext4, xfs, btrfs, …).
	//
	// +optional
	FilesystemType string `json:"filesystemType,omitempty"`

	// MountPoint is the mount point of the filesystem holding the probed directory.
	//
	// +optional
	MountPoint string `json:"mountPoint,omitempty"`

	// MountOptions of the filesystem, as in /proc/self/mountinfo.
	//
	// +optional
	MountOptions string `json:"mountOptions,omitempty"`

	// Device is the kernel name of the whole-disk block device under the filesystem (vda, nvme0n1,
	// dm-0), the name node_exporter uses in its `device` label. Empty for tmpfs.
	//
	// +optional
	Device string `json:"device,omitempty"`

	// Rotational is true for spinning disks (queue/rotational).
	//
	// +optional
	Rotational *bool `json:"rotational,omitempty"`

	// Scheduler is the device's active I/O scheduler (queue/scheduler).
	//
	// +optional
	Scheduler string `json:"scheduler,omitempty"`

	// ReadAheadKiB is the device's read-ahead in KiB (queue/read_ahead_kb) when it was probed.
	//
	// +optional
	ReadAheadKiB *int64 `json:"readAheadKiB,omitempty"`
}

// ThroughputResult is one streaming measurement.
type ThroughputResult struct {
	// Bytes moved.
	//
	// +optional
	Bytes int64 `json:"bytes,omitempty"`

	// BlockSizeBytes is the size of each read or write call.
	//
	// +optional
	BlockSizeBytes int64 `json:"blockSizeBytes,omitempty"`

	// BytesPerSecond is Bytes divided by the elapsed time.
	//
	// +optional
	BytesPerSecond int64 `json:"bytesPerSecond,omitempty"`

	// Unsupported explains why the filesystem refused this workload (for example O_DIRECT on a tmpfs
	// before Linux 6.6). When set, no figure is reported.
	//
	// +optional
	Unsupported string `json:"unsupported,omitempty"`

	// Note qualifies the figure, for example a "cold" read on tmpfs, whose pages cannot be evicted
	// and so is really a memory read.
	//
	// +optional
	Note string `json:"note,omitempty"`
}

// SequentialWriteResult is a `dd bs=128M count=2`-style write.
type SequentialWriteResult struct {
	// Bytes written.
	//
	// +optional
	Bytes int64 `json:"bytes,omitempty"`

	// BlockSizeBytes is the size of each write call.
	//
	// +optional
	BlockSizeBytes int64 `json:"blockSizeBytes,omitempty"`

	// BufferedBytesPerSecond is the rate until the last write returned (data may still be dirty in
	// the page cache), like plain dd.
	//
	// +optional
	BufferedBytesPerSecond int64 `json:"bufferedBytesPerSecond,omitempty"`

	// FdatasyncBytesPerSecond includes a final fdatasync, like `dd conv=fdatasync`.
	//
	// +optional
	FdatasyncBytesPerSecond int64 `json:"fdatasyncBytesPerSecond,omitempty"`
}

// FileChurnResult is a small-file create/write/close then read/close/unlink loop.
type FileChurnResult struct {
	// FileSizeBytes is the size of each file.
	//
	// +required
	FileSizeBytes int64 `json:"fileSizeBytes"`

	// Files is how many files were created, read and removed.
	//
	// +optional
	Files int32 `json:"files,omitempty"`

	// CreateFilesPerSecond is the rate of create+write+close.
	//
	// +optional
	CreateFilesPerSecond int64 `json:"createFilesPerSecond,omitempty"`

	// ReadUnlinkFilesPerSecond is the rate of open+read+close+unlink.
	//
	// +optional
	ReadUnlinkFilesPerSecond int64 `json:"readUnlinkFilesPerSecond,omitempty"`

	// ElapsedMicroseconds is the time of the whole loop.
	//
	// +optional
	ElapsedMicroseconds int64 `json:"elapsedMicroseconds,omitempty"`
}

// TempFileResult is what a database server's temporary files do on a target: unlinked files
// (O_TMPFILE), each written in BlockSizeBytes writes, read back with preads of the same size and
// closed, one after another, as a filesort's merge files and an on-disk temporary table are. No
// fdatasync: temporary files are never synced.
type TempFileResult struct {
	// FileSizeBytes is the size of each file.
	//
	// +required
	FileSizeBytes int64 `json:"fileSizeBytes"`

	// BlockSizeBytes is the size of each write and pread.
	//
	// +optional
	BlockSizeBytes int64 `json:"blockSizeBytes,omitempty"`

	// Files is how many files were written, read and closed.
	//
	// +optional
	Files int32 `json:"files,omitempty"`

	// BytesPerSecond is the bytes written (each is read back once) divided by the time of the
	// whole loop.
	//
	// +optional
	BytesPerSecond int64 `json:"bytesPerSecond,omitempty"`

	// ElapsedMicroseconds is the time of the whole loop.
	//
	// +optional
	ElapsedMicroseconds int64 `json:"elapsedMicroseconds,omitempty"`

	// MountOptions are the options of the filesystem measured (a tmpfs's huge= among them).
	//
	// +optional
	MountOptions string `json:"mountOptions,omitempty"`

	// Unsupported explains why this variant could not be measured (for example no large pages
	// for tmpfs on this kernel, or an agent without CAP_SYS_ADMIN for its own tmpfs with them).
	// When set, no figure is reported.
	//
	// +optional
	Unsupported string `json:"unsupported,omitempty"`
}

// HistogramBucket is one cumulative histogram bucket, as in Prometheus.
type HistogramBucket struct {
	// UpperBoundMicroseconds is the bucket's inclusive upper bound.
	//
	// +required
	UpperBoundMicroseconds int64 `json:"upperBoundMicroseconds"`

	// Count of samples at or below the bound.
	//
	// +required
	Count int64 `json:"count"`
}

// FdatasyncResult is etcd's disk check: small sequential writes, each followed by fdatasync.
type FdatasyncResult struct {
	// WriteSizeBytes is the size of each write (etcd's WAL check uses 2300 bytes).
	//
	// +optional
	WriteSizeBytes int64 `json:"writeSizeBytes,omitempty"`

	// Samples is the number of write+fdatasync pairs measured.
	//
	// +optional
	Samples int32 `json:"samples,omitempty"`

	// P50Microseconds is the median fdatasync latency.
	//
	// +optional
	P50Microseconds int64 `json:"p50Microseconds,omitempty"`

	// P99Microseconds is the 99th percentile fdatasync latency; etcd wants it below 10 ms.
	//
	// +optional
	P99Microseconds int64 `json:"p99Microseconds,omitempty"`

	// Buckets is a cumulative histogram with etcd's wal_fsync_duration_seconds boundaries.
	//
	// +optional
	Buckets []HistogramBucket `json:"buckets,omitempty"`
}

// ProbeTargetResult holds every measurement for one directory.
type ProbeTargetResult struct {
	// Name identifies the target in this profile (for example tmpfs or disk).
	//
	// +required
	Name string `json:"name"`

	// Path is the directory probed, as the agent sees it.
	//
	// +required
	Path string `json:"path"`

	// Kind is Tmpfs or Disk.
	//
	// +optional
	Kind TargetKind `json:"kind,omitempty"`

	// Provenance describes the storage under Path.
	//
	// +optional
	Provenance StorageProvenance `json:"provenance,omitempty"`

	// SequentialWrite is a large streaming write (dd bs=128M count=2).
	//
	// +optional
	SequentialWrite *SequentialWriteResult `json:"sequentialWrite,omitempty"`

	// DirectWrite is an O_DIRECT streaming write with 512 KiB blocks (dd bs=512k oflag=direct).
	//
	// +optional
	DirectWrite *ThroughputResult `json:"directWrite,omitempty"`

	// ColdRead reads the sequential-write file back after evicting it from the page cache.
	//
	// +optional
	ColdRead *ThroughputResult `json:"coldRead,omitempty"`

	// FileChurn holds one result per file size (5000 and 5000000 bytes by default).
	//
	// +optional
	// +listType=map
	// +listMapKey=fileSizeBytes
	FileChurn []FileChurnResult `json:"fileChurn,omitempty"`

	// Fdatasync is the small-write sync latency.
	//
	// +optional
	Fdatasync *FdatasyncResult `json:"fdatasync,omitempty"`

	// TempFiles holds the temporary-file pattern, one result per file size (4 MiB and 20 MiB by
	// default): on a tmpfs target, the tmpfs as Kubernetes mounts it.
	//
	// +optional
	// +listType=map
	// +listMapKey=fileSizeBytes
	TempFiles []TempFileResult `json:"tempFiles,omitempty"`

	// LargePageTempFiles is the same pattern on a tmpfs of the same size with huge=within_size,
	// what a ScratchVolume with spec.largePages WithinSize runs with (Tmpfs targets only). The
	// agent mounts it detached (no path leads to it) for the run and unmounts it after.
	//
	// +optional
	// +listType=map
	// +listMapKey=fileSizeBytes
	LargePageTempFiles []TempFileResult `json:"largePageTempFiles,omitempty"`

	// DeviceRead is a buffered read of the raw block device (hdparm -t), when a device was given.
	//
	// +optional
	DeviceRead *ThroughputResult `json:"deviceRead,omitempty"`

	// Error says why this target could not be probed (or not completely).
	//
	// +optional
	Error string `json:"error,omitempty"`
}

// TmpfsDiskComparison sets the tmpfs target beside the disk target in what temporary files do on
// both. Each ratio is the tmpfs figure divided by the disk's, as a decimal string with two decimals
// ("9.40"), and is empty when either side is missing.
//
// There is no fdatasync ratio: fdatasync on tmpfs is a no-op that returns at once, so there is
// nothing to compare. The disk's fdatasync latency stands on its own in the disk target's
// fdatasync.p50Microseconds and p99Microseconds (the Disk-Fdatasync printer columns).
type TmpfsDiskComparison struct {
	// TmpfsTarget names the tmpfs result compared.
	//
	// +optional
	TmpfsTarget string `json:"tmpfsTarget,omitempty"`

	// DiskTarget names the disk result compared.
	//
	// +optional
	DiskTarget string `json:"diskTarget,omitempty"`

	// BufferedWriteRatio compares the sequential write's bufferedBytesPerSecond: no fdatasync on
	// either side, which is how temporary files are written (sort files and temporary tables are
	// deleted, never synced). The disk's synced rate is in its sequentialWrite.fdatasyncBytesPerSecond.
	//
	// +optional
	BufferedWriteRatio string `json:"bufferedWriteRatio,omitempty"`

	// ColdReadRatio compares the sequential read after eviction from the page cache. tmpfs cannot
	// evict its pages, so its side is a memory read.
	//
	// +optional
	ColdReadRatio string `json:"coldReadRatio,omitempty"`

	// SmallFileCreateRatio compares the create+write+close rates of the smallest file size both
	// targets measured.
	//
	// +optional
	SmallFileCreateRatio string `json:"smallFileCreateRatio,omitempty"`

	// SmallFileSizeBytes is the file size SmallFileCreateRatio compares.
	//
	// +optional
	SmallFileSizeBytes int64 `json:"smallFileSizeBytes,omitempty"`

	// TempFileRatio compares the temporary-file pattern's bytesPerSecond on the tmpfs as
	// Kubernetes mounts it (4 KiB pages) with the disk's, over the file sizes both measured.
	//
	// +optional
	TempFileRatio string `json:"tempFileRatio,omitempty"`

	// LargePageTempFileRatio compares the temporary-file pattern on a tmpfs with large pages
	// (huge=within_size, what a ScratchVolume runs with by default) with the disk's: the figure to
	// read first. Below 1 the node's disk, through its page cache, moves temporary files faster
	// than the RAM volume would.
	//
	// +optional
	LargePageTempFileRatio string `json:"largePageTempFileRatio,omitempty"`
}

// Speedup is the former tmpfs-versus-disk comparison, the type of the deprecated status.speedup,
// kept so that stored objects and clients that read it keep working. This release still sets
// coldRead and smallFiles, the same figures as comparison.coldReadRatio and
// comparison.smallFileCreateRatio; it no longer sets sequentialWrite and fdatasync, which compared
// with tmpfs's no-op fdatasync. The next release stops setting it.
type Speedup struct {
	// TmpfsTarget names the tmpfs result compared.
	//
	// +optional
	TmpfsTarget string `json:"tmpfsTarget,omitempty"`

	// DiskTarget names the disk result compared.
	//
	// +optional
	DiskTarget string `json:"diskTarget,omitempty"`

	// SequentialWrite compared the fdatasync'd sequential write rates.
	//
	// Deprecated: no longer set. On tmpfs the final fdatasync is a no-op, and temporary files are
	// never synced; see comparison.bufferedWriteRatio.
	//
	// +optional
	SequentialWrite string `json:"sequentialWrite,omitempty"`

	// ColdRead compares the cold sequential read, as comparison.coldReadRatio does.
	//
	// +optional
	ColdRead string `json:"coldRead,omitempty"`

	// SmallFiles compares create rates of the smallest file size, as
	// comparison.smallFileCreateRatio does.
	//
	// +optional
	SmallFiles string `json:"smallFiles,omitempty"`

	// Fdatasync was the disk's p99 fdatasync latency divided by the tmpfs one. tmpfs's is a no-op
	// reported as 1 µs, so the figure was the disk's p99 in microseconds, not a ratio.
	//
	// Deprecated: no longer set; read the disk target's fdatasync.p50Microseconds and
	// p99Microseconds.
	//
	// +optional
	Fdatasync string `json:"fdatasync,omitempty"`
}

// DeviceReadAheadStatus is the read-ahead state of one block device on the node.
type DeviceReadAheadStatus struct {
	// Device is the kernel name (sda, nvme0n1, dm-0).
	//
	// +required
	Device string `json:"device"`

	// MajorMinor is the device number, "MAJ:MIN".
	//
	// +optional
	MajorMinor string `json:"majorMinor,omitempty"`

	// Policy is the ReadAheadPolicy that applies to the device.
	//
	// +optional
	Policy string `json:"policy,omitempty"`

	// OriginalKiB is the read-ahead found before the first change, saved on the host and restored
	// when no policy applies any more.
	//
	// +optional
	OriginalKiB *int64 `json:"originalKiB,omitempty"`

	// DesiredKiB is what the policy asks for.
	//
	// +optional
	DesiredKiB *int64 `json:"desiredKiB,omitempty"`

	// CurrentKiB is what the kernel reports now (it rounds to whole pages).
	//
	// +optional
	CurrentKiB *int64 `json:"currentKiB,omitempty"`

	// LastAppliedTime is when the agent last wrote the device's read-ahead.
	//
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`

	// OverriddenPolicies are the other ReadAheadPolicies that select this device too but rank
	// lower (priority, then age, then name), best first: Policy wins over them here.
	//
	// +optional
	// +listType=atomic
	OverriddenPolicies []string `json:"overriddenPolicies,omitempty"`

	// Message explains a device that could not be tuned.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// NodeIOProfileStatus is written by the node agent.
type NodeIOProfileStatus struct {
	// Conditions: Probed, ReadAheadApplied and Degraded.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Kernel is the node's kernel release (uname -r).
	//
	// +optional
	Kernel string `json:"kernel,omitempty"`

	// TransparentHugePages is what the kernel says about large pages on tmpfs.
	//
	// +optional
	TransparentHugePages *TransparentHugePages `json:"transparentHugePages,omitempty"`

	// FreePageReporting is true on a virtual machine whose balloon device hands free memory back
	// to the hypervisor (virtio-balloon free page reporting). There the first write into memory
	// the host took back costs a host page fault, so the figures that fill the page cache while
	// they are timed (buffered writes, a disk's cold read, 5 MB files, the device read) vary from
	// run to run with how much memory the host had reclaimed: compare several runs.
	//
	// +optional
	FreePageReporting bool `json:"freePageReporting,omitempty"`

	// LastRunTime is when the last probe run finished.
	//
	// +optional
	LastRunTime *metav1.Time `json:"lastRunTime,omitempty"`

	// LastRunDurationMilliseconds is how long the last probe run took.
	//
	// +optional
	LastRunDurationMilliseconds int64 `json:"lastRunDurationMilliseconds,omitempty"`

	// Targets holds the results per probed directory.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	Targets []ProbeTargetResult `json:"targets,omitempty"`

	// Comparison sets the tmpfs target beside the disk target when the node has exactly one of
	// each.
	//
	// +optional
	Comparison *TmpfsDiskComparison `json:"comparison,omitempty"`

	// Speedup is the former comparison.
	//
	// Deprecated: use Comparison. This release still sets coldRead and smallFiles (not
	// sequentialWrite and fdatasync, which compared with tmpfs's no-op fdatasync); the next stops
	// setting it.
	//
	// +optional
	Speedup *Speedup `json:"speedup,omitempty"`

	// ReadAhead is the read-ahead state of every device a ReadAheadPolicy selects on this node.
	//
	// +optional
	// +listType=map
	// +listMapKey=device
	ReadAhead []DeviceReadAheadStatus `json:"readAhead,omitempty"`

	// ScratchVolumes is how full the RAM scratch volumes of the pods on this node have been, as
	// the agent samples them (about once a second). The agent writes it when a figure changes, at
	// most every 10 seconds, and at once when a volume fills up; the operator sums it up in each
	// ScratchVolume's status.
	//
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=pod
	// +listMapKey=scratchVolume
	// +kubebuilder:validation:MaxItems=1024
	ScratchVolumes []ScratchVolumeUsage `json:"scratchVolumes,omitempty"`
}

// ScratchVolumeUsage is what the node agent observed of one pod's RAM scratch volume.
type ScratchVolumeUsage struct {
	// Namespace of the pod and of the ScratchVolume.
	//
	// +required
	Namespace string `json:"namespace"`

	// Pod is the pod's name.
	//
	// +required
	Pod string `json:"pod"`

	// ScratchVolume is the name of the ScratchVolume that injected the volume.
	//
	// +required
	ScratchVolume string `json:"scratchVolume"`

	// SampledSince is when the agent first sampled this pod's volume: the pod's start, unless the
	// agent restarted after it. The peaks and counts below cover the time since.
	//
	// +required
	SampledSince metav1.Time `json:"sampledSince"`

	// SizeBytes is the tmpfs size (the emptyDir's sizeLimit, as the kubelet mounted it).
	//
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`

	// PeakBytes is the most used since SampledSince.
	//
	// +optional
	PeakBytes int64 `json:"peakBytes,omitempty"`

	// WindowPeakBytes is the most used over the agent's sliding window (an hour by default).
	//
	// +optional
	WindowPeakBytes int64 `json:"windowPeakBytes,omitempty"`

	// FullEpisodes counts the times since SampledSince the volume was found full (less than 1% of
	// its size free) after a sample that was not.
	//
	// +optional
	FullEpisodes int64 `json:"fullEpisodes,omitempty"`

	// Full tells whether the last sample found the volume full.
	//
	// +optional
	Full bool `json:"full,omitempty"`

	// LastFullTime is when the volume was last found full.
	//
	// +optional
	LastFullTime *metav1.Time `json:"lastFullTime,omitempty"`

	// LargePages is what the volume's tmpfs runs with: the agent sets the ScratchVolume's
	// spec.largePages on it as soon as it sees the pod.
	//
	// +optional
	LargePages *VolumeLargePages `json:"largePages,omitempty"`
}

// VolumeLargePages is the page size a RAM volume's tmpfs runs with, as the node agent set and read
// it.
type VolumeLargePages struct {
	// State is Applied, Default, Unsupported, Overridden, Disabled or Failed.
	//
	// +required
	State LargePagesState `json:"state"`

	// Huge is the tmpfs's huge= option as the node's mount table shows it (never when it shows
	// none).
	//
	// +optional
	Huge string `json:"huge,omitempty"`

	// Message says why a volume runs without the pages asked for, and what to do.
	//
	// +optional
	Message string `json:"message,omitempty"`

	// Time is when the agent set the option, or found it set (after an agent restart) or found it
	// could not.
	//
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// TransparentHugePages is what the node's kernel says about large pages on tmpfs: the facts that
// decide whether a scratch volume can have them.
type TransparentHugePages struct {
	// ShmemEnabled is the selected value of /sys/kernel/mm/transparent_hugepage/shmem_enabled
	// (always, within_size, advise, never, deny, force). deny and force override every tmpfs's
	// huge= option. Empty when the kernel has no transparent huge pages.
	//
	// +optional
	ShmemEnabled string `json:"shmemEnabled,omitempty"`

	// TmpfsDefault is the huge= option a tmpfs mounted without one gets: the kernel command
	// line's transparent_hugepage_tmpfs= (Linux 6.14 and later), else never.
	//
	// +optional
	TmpfsDefault string `json:"tmpfsDefault,omitempty"`
}

// NodeIOProfile is one node's measured tmpfs and disk performance and its read-ahead state. The node
// agent creates it, named after the node and owned by the Node, and writes its status. Annotate it
// with dbtune.io/probe-requested to ask for a new measurement.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=niop;ioprofile,categories=dbtune
// +kubebuilder:printcolumn:name="Temp-Files-Large-Pages/Disk",type=string,JSONPath=`.status.comparison.largePageTempFileRatio`,description="tmpfs with large pages (what a ScratchVolume runs with) / disk, temporary-file rate: below 1 the disk is faster"
// +kubebuilder:printcolumn:name="Temp-Files-Tmpfs/Disk",type=string,JSONPath=`.status.comparison.tempFileRatio`,description="tmpfs as Kubernetes mounts it (4 KiB pages) / disk, temporary-file rate"
// +kubebuilder:printcolumn:name="Write-Tmpfs/Disk",type=string,JSONPath=`.status.comparison.bufferedWriteRatio`,description="tmpfs/disk sequential write rate without fdatasync, as temporary files are written"
// +kubebuilder:printcolumn:name="Small-Files-Tmpfs/Disk",type=string,JSONPath=`.status.comparison.smallFileCreateRatio`,description="tmpfs/disk small-file create rate"
// +kubebuilder:printcolumn:name="Read-Tmpfs/Disk",type=string,JSONPath=`.status.comparison.coldReadRatio`,description="tmpfs/disk sequential read after eviction (tmpfs cannot evict: a memory read)",priority=1
// +kubebuilder:printcolumn:name="Disk-Fdatasync-P50-us",type=integer,JSONPath=`.status.targets[?(@.kind=="Disk")].fdatasync.p50Microseconds`,description="the disk's median fdatasync latency in microseconds (on tmpfs fdatasync is a no-op: nothing to compare)"
// +kubebuilder:printcolumn:name="Disk-Fdatasync-P99-us",type=integer,JSONPath=`.status.targets[?(@.kind=="Disk")].fdatasync.p99Microseconds`,description="the disk's 99th-percentile fdatasync latency in microseconds (etcd wants under 10000)"
// +kubebuilder:printcolumn:name="Probed",type=string,JSONPath=`.status.conditions[?(@.type=="Probed")].status`
// +kubebuilder:printcolumn:name="Read-Ahead",type=string,JSONPath=`.status.conditions[?(@.type=="ReadAheadApplied")].status`
// +kubebuilder:printcolumn:name="Kernel",type=string,JSONPath=`.status.kernel`,priority=1
// +kubebuilder:printcolumn:name="Last-Run",type=date,JSONPath=`.status.lastRunTime`
type NodeIOProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status is written by the node agent.
	//
	// +optional
	Status NodeIOProfileStatus `json:"status,omitempty"`
}

// NodeIOProfileList is a list of NodeIOProfiles.
//
// +kubebuilder:object:root=true
type NodeIOProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeIOProfile `json:"items"`
}
