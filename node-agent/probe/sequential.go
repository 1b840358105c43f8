package probe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// sequentialWrite writes total bytes to a new file in blocks, like `dd bs=block`, timing the writes
// alone (what plain dd reports) and the writes plus one fdatasync (`conv=fdatasync`). The file is
// left in place for the cold read.
func sequentialWrite(ctx context.Context, path string, data []byte, total, block int64) (*SequentialWriteResult, error) {
	fd, err := unix.Open(path, createFlags, 0o600)
	if err != nil {
		return nil, ioFailure(path, err, "failed to create %s: %w", path, err)
	}
	defer closeFd(fd)
	start := time.Now()
	var written int64
	for written < total {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := writeAll(fd, data[:min(block, total-written)])
		written += n
		if err != nil {
			return nil, writeError(path, written, total, err)
		}
	}
	buffered := time.Since(start)
	if err := unix.Fdatasync(fd); err != nil {
		return nil, ioFailure(path, err, "failed to fdatasync %s: %w", path, err)
	}
	synced := time.Since(start)
	return &SequentialWriteResult{
		Bytes:                   written,
		BlockSizeBytes:          block,
		BufferedBytesPerSecond:  PerSecond(written, buffered),
		FdatasyncBytesPerSecond: PerSecond(written, synced),
	}, nil
}

// coldRead drops path from the page cache and reads it back. A filesystem that cannot drop its
// pages (tmpfs: the page cache is where the data lives) is measured all the same, with a note
// saying how much was still in memory, so nobody mistakes a memory read for a cold one.
func coldRead(ctx context.Context, path string, kind Kind, buf []byte, maxDuration time.Duration) (*ThroughputResult, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, ioFailure(path, err, "failed to open %s for the cold read: %w", path, err)
	}
	defer closeFd(fd)
	size, note, err := evict(fd, kind)
	if err != nil {
		return nil, ioFailure(path, err, "failed to evict %s from the page cache: %w", path, err)
	}
	start := time.Now()
	n, err := readLoop(fd, buf, size, stopper(ctx, start, maxDuration))
	elapsed := time.Since(start)
	if err != nil && !errors.Is(err, errCapReached) {
		return nil, ioFailure(path, err, "the cold read of %s failed after %d bytes: %w", path, n, err)
	}
	return &ThroughputResult{
		Bytes:          n,
		BlockSizeBytes: int64(len(buf)),
		BytesPerSecond: PerSecond(n, elapsed),
		Note:           note,
	}, nil
}

// evict writes back and drops fd's pages, then checks what is still cached. Dirty pages cannot be
// dropped, hence the fdatasync first.
func evict(fd int, kind Kind) (size int64, note string, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, "", err
	}
	if err := unix.Fdatasync(fd); err != nil {
		return 0, "", err
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, "", err
	}
	resident, err := residentBytes(fd, st.Size)
	if err != nil {
		return 0, "", err
	}
	return st.Size, residencyNote(kind, resident, st.Size), nil
}

// residencyNote words what evict found; it is empty when the read was really cold.
func residencyNote(kind Kind, resident, size int64) string {
	if resident <= 0 || size <= 0 {
		return ""
	}
	pct := float64(resident) * 100 / float64(size)
	if kind == KindTmpfs {
		return fmt.Sprintf("not cold: tmpfs cannot evict its pages (%.0f%% of the file stayed in memory), so this is a memory read", pct)
	}
	return fmt.Sprintf("partly cached: %.0f%% of the file stayed in memory after POSIX_FADV_DONTNEED", pct)
}
