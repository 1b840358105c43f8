package probe

import (
	"errors"
	"time"
)

// Sizes in bytes.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// directIOAlignment is the alignment O_DIRECT sizes must honor. Most devices need only their logical
// block size (512 B), but 4 KiB-native disks need 4096, so 4096 is the size that works everywhere.
const directIOAlignment = 4096

// maxBufferBytes bounds the single in-memory write buffer: it is resident for the whole run.
const maxBufferBytes = 1 * GiB

// ChurnSize is one small-file churn workload.
type ChurnSize struct {
	// FileBytes is the size of each file.
	FileBytes int64
	// Files is how many files to create, then read and unlink.
	Files int
}

// TempFileSize is one temporary-file workload: Files files of FileBytes each, one after another.
type TempFileSize struct {
	// FileBytes is the size of each file.
	FileBytes int64
	// Files is how many files to write, read back and close.
	Files int
}

// Options bounds a probe run. Start from DefaultOptions; the zero value is rejected by Validate.
type Options struct {
	// SeqWriteBytes is the size of the sequential-write file (dd count × bs).
	SeqWriteBytes int64
	// SeqWriteBlockBytes is the size of each sequential write call (dd bs). The run keeps one buffer
	// of this size in memory.
	SeqWriteBlockBytes int64

	// ColdReadBlockBytes is the size of each read call when the sequential-write file is read back.
	ColdReadBlockBytes int64
	// ColdReadMaxDuration stops the cold read early on a slow disk.
	ColdReadMaxDuration time.Duration

	// DirectWriteBytes is how much the O_DIRECT write writes; a multiple of 4096.
	DirectWriteBytes int64
	// DirectWriteBlockBytes is the size of each O_DIRECT write call; a multiple of 4096.
	DirectWriteBlockBytes int64
	// DirectWriteMaxDuration stops the O_DIRECT write early on a slow disk.
	DirectWriteMaxDuration time.Duration

	// Churn lists the small-file workloads, run in order.
	Churn []ChurnSize
	// ChurnMaxDuration caps each pass (create, then read+unlink) of each churn workload.
	ChurnMaxDuration time.Duration

	// TempFiles lists the temporary-file workloads, run in order on every target and, on a tmpfs
	// target, a second time on a tmpfs of the probe's own with large pages (huge=within_size).
	TempFiles []TempFileSize
	// TempFileBlockBytes is the size of each write and pread of the temporary-file workloads.
	TempFileBlockBytes int64
	// TempFileMaxDuration caps each temporary-file workload (one file size on one filesystem).
	TempFileMaxDuration time.Duration

	// FsyncWriteBytes is the size of each write of the fdatasync latency check.
	FsyncWriteBytes int64
	// FsyncSamples is the maximum number of write+fdatasync pairs.
	FsyncSamples int
	// FsyncMaxDuration stops the latency check early on a slow disk.
	FsyncMaxDuration time.Duration

	// DeviceReadBlockBytes is the size of each read call of the raw device read.
	DeviceReadBlockBytes int64
	// DeviceReadMaxBytes caps the raw device read in bytes, whatever the time.
	DeviceReadMaxBytes int64
	// DeviceReadDuration is how long the raw device read runs (hdparm -t reads for about 3 s).
	DeviceReadDuration time.Duration

	// MaxDuration is a hard deadline for the whole run. It is checked between system calls, so one
	// write or fdatasync already in the kernel can overrun it.
	MaxDuration time.Duration
	// MaxTotalWriteBytes bounds the bytes the run may write, summed over all targets; Run refuses
	// a run that would write more.
	MaxTotalWriteBytes int64
	// SkipFreeSpaceCheck disables the free-space refusal; it exists so that tests can watch a
	// filesystem fill up.
	SkipFreeSpaceCheck bool

	// SysfsRoot and ProcfsRoot are where sysfs and procfs are mounted (empty means "/sys" and
	// "/proc"); tests point them at fixture trees.
	SysfsRoot  string
	ProcfsRoot string
}

// DefaultOptions returns the options of a regular run. With two targets (a tmpfs and a disk) it
// writes about 1.7 GiB in total (the temporary-file workloads, 288 MiB per filesystem, run on the
// disk, the tmpfs and a tmpfs with large pages), stays under 2 GiB, needs 512 MiB free per target
// and finishes within MaxDuration (60 s); on tmpfs everything takes a second or two.
func DefaultOptions() Options {
	return Options{
		SeqWriteBytes:          256 * MiB,
		SeqWriteBlockBytes:     128 * MiB,
		ColdReadBlockBytes:     1 * MiB,
		ColdReadMaxDuration:    5 * time.Second,
		DirectWriteBytes:       64 * MiB,
		DirectWriteBlockBytes:  512 * KiB,
		DirectWriteMaxDuration: 3 * time.Second,
		Churn:                  []ChurnSize{{FileBytes: 5000, Files: 2000}, {FileBytes: 5_000_000, Files: 20}},
		ChurnMaxDuration:       2 * time.Second,
		TempFiles:              []TempFileSize{{FileBytes: 4 * MiB, Files: 32}, {FileBytes: 20 * MiB, Files: 8}},
		TempFileBlockBytes:     64 * KiB,
		TempFileMaxDuration:    time.Second,
		FsyncWriteBytes:        2300,
		FsyncSamples:           2000,
		FsyncMaxDuration:       3 * time.Second,
		DeviceReadBlockBytes:   2 * MiB,
		DeviceReadMaxBytes:     2 * GiB,
		DeviceReadDuration:     3 * time.Second,
		MaxDuration:            60 * time.Second,
		MaxTotalWriteBytes:     2 * GiB,
		SysfsRoot:              "/sys",
		ProcfsRoot:             "/proc",
	}
}

// WriteBytesPerTarget is the most the run writes for one target (fdatasync preallocation
// included). The temporary-file workloads count twice: on a tmpfs target they run again on a tmpfs
// with large pages, and the budget is checked before the run knows which targets are tmpfs.
func (o *Options) WriteBytesPerTarget() int64 {
	total := o.SeqWriteBytes + o.DirectWriteBytes + o.fsyncFileBytes() + 2*o.tempFileBytes()
	for _, c := range o.Churn {
		total += c.FileBytes * int64(c.Files)
	}
	return total
}

// PeakBytesPerTarget is the most the run keeps on one target at any moment: each workload removes
// its files before the next one starts, and a temporary file is gone once it is closed.
func (o *Options) PeakBytesPerTarget() int64 {
	peak := max(o.SeqWriteBytes, o.DirectWriteBytes, o.fsyncFileBytes(), o.largestTempFile())
	for _, c := range o.Churn {
		peak = max(peak, c.FileBytes*int64(c.Files))
	}
	return peak
}

// tempFileBytes is what the temporary-file workloads write on one filesystem.
func (o *Options) tempFileBytes() int64 {
	var total int64
	for _, s := range o.TempFiles {
		total += s.FileBytes * int64(s.Files)
	}
	return total
}

func (o *Options) largestTempFile() int64 {
	var largest int64
	for _, s := range o.TempFiles {
		largest = max(largest, s.FileBytes)
	}
	return largest
}

func (o *Options) fsyncFileBytes() int64 { return o.FsyncWriteBytes * int64(o.FsyncSamples) }

// seqBlockBytes and directBlockBytes are the write sizes actually used: a block larger than the
// whole write is never issued, so it should neither be reported nor allocated.
func (o *Options) seqBlockBytes() int64 { return min(o.SeqWriteBlockBytes, o.SeqWriteBytes) }

func (o *Options) directBlockBytes() int64 { return min(o.DirectWriteBlockBytes, o.DirectWriteBytes) }

// tempBlockBytes is the write and pread size of the temporary-file workloads: no call is larger
// than the largest file.
func (o *Options) tempBlockBytes() int64 {
	return min(o.TempFileBlockBytes, max(o.largestTempFile(), 1))
}

// writeBufferBytes is the size of the one random buffer every write takes its data from.
func (o *Options) writeBufferBytes() int64 {
	size := max(o.seqBlockBytes(), o.directBlockBytes(), o.FsyncWriteBytes, o.tempBlockBytes())
	for _, c := range o.Churn {
		size = max(size, c.FileBytes)
	}
	return size
}

func (o *Options) sysfsRoot() string { return orDefault(o.SysfsRoot, "/sys") }

func (o *Options) procfsRoot() string { return orDefault(o.ProcfsRoot, "/proc") }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (o *Options) readBufferBytes() int64 {
	return max(o.ColdReadBlockBytes, o.DeviceReadBlockBytes, o.tempBlockBytes())
}

// Validate checks the options for a run over the given number of targets. It joins one error per
// problem, each matching ErrInvalidOptions.
func (o *Options) Validate(targets int) error {
	errs := []error{
		positive("SeqWriteBytes", o.SeqWriteBytes),
		positive("SeqWriteBlockBytes", o.SeqWriteBlockBytes),
		positive("ColdReadBlockBytes", o.ColdReadBlockBytes),
		aligned("DirectWriteBytes", o.DirectWriteBytes),
		aligned("DirectWriteBlockBytes", o.DirectWriteBlockBytes),
		positive("TempFileBlockBytes", o.TempFileBlockBytes),
		positive("FsyncWriteBytes", o.FsyncWriteBytes),
		positive("FsyncSamples", int64(o.FsyncSamples)),
		positive("DeviceReadBlockBytes", o.DeviceReadBlockBytes),
		positive("DeviceReadMaxBytes", o.DeviceReadMaxBytes),
		positive("MaxTotalWriteBytes", o.MaxTotalWriteBytes),
		o.validateDurations(),
		o.validateChurn(),
		o.validateTempFiles(),
		o.validateBudget(targets),
	}
	return errors.Join(errs...)
}

func (o *Options) validateDurations() error {
	durations := []struct {
		name string
		d    time.Duration
	}{
		{"ColdReadMaxDuration", o.ColdReadMaxDuration}, {"DirectWriteMaxDuration", o.DirectWriteMaxDuration},
		{"ChurnMaxDuration", o.ChurnMaxDuration}, {"TempFileMaxDuration", o.TempFileMaxDuration},
		{"FsyncMaxDuration", o.FsyncMaxDuration},
		{"DeviceReadDuration", o.DeviceReadDuration}, {"MaxDuration", o.MaxDuration},
	}
	var errs []error
	for _, x := range durations {
		if x.d <= 0 {
			errs = append(errs, invalidOption("%s must be positive, got %s", x.name, x.d))
		}
	}
	return errors.Join(errs...)
}

func (o *Options) validateChurn() error {
	var errs []error
	for i, c := range o.Churn {
		if c.FileBytes <= 0 || c.Files <= 0 {
			errs = append(errs, invalidOption("churn workload %d needs a positive file size and count, got %d files of %d bytes",
				i+1, c.Files, c.FileBytes))
		}
	}
	return errors.Join(errs...)
}

// validateTempFiles also refuses a file size given twice: each size is one result, and the
// NodeIOProfile lists them by size.
func (o *Options) validateTempFiles() error {
	var errs []error
	seen := map[int64]bool{}
	for i, s := range o.TempFiles {
		switch {
		case s.FileBytes <= 0 || s.Files <= 0:
			errs = append(errs, invalidOption("temporary-file workload %d needs a positive file size and count, got %d files of %d bytes",
				i+1, s.Files, s.FileBytes))
		case seen[s.FileBytes]:
			errs = append(errs, invalidOption("temporary-file workload %d repeats the file size %d bytes; give each size once", i+1, s.FileBytes))
		}
		seen[s.FileBytes] = true
	}
	return errors.Join(errs...)
}

func (o *Options) validateBudget(targets int) error {
	if size := o.writeBufferBytes(); size > maxBufferBytes {
		return invalidOption("the largest block or file (%d bytes) exceeds the %d-byte in-memory buffer limit", size, maxBufferBytes)
	}
	if total := o.WriteBytesPerTarget() * int64(targets); total > o.MaxTotalWriteBytes {
		return invalidOption("the run would write %d bytes (%d per target × %d targets), more than MaxTotalWriteBytes (%d)",
			total, o.WriteBytesPerTarget(), targets, o.MaxTotalWriteBytes)
	}
	return nil
}

func positive(name string, v int64) error {
	if v <= 0 {
		return invalidOption("%s must be positive, got %d", name, v)
	}
	return nil
}

func aligned(name string, v int64) error {
	if v <= 0 || v%directIOAlignment != 0 {
		return invalidOption("%s must be a positive multiple of %d (O_DIRECT alignment), got %d", name, directIOAlignment, v)
	}
	return nil
}
