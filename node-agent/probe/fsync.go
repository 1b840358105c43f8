package probe

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// fdatasyncLatency measures what etcd's disk check measures (fio --rw=write --ioengine=sync
// --fdatasync=1 --bs=2300): sequential small writes, each followed by fdatasync, timing the fdatasync
// alone. The file is preallocated first, as etcd preallocates its WAL segments and fio lays out its
// file, so the figure is the cost of making data durable rather than of growing a file.
func fdatasyncLatency(ctx context.Context, path string, data []byte, o *Options) (*FdatasyncResult, error) {
	fd, err := unix.Open(path, createFlags, 0o600)
	if err != nil {
		return nil, ioFailure(path, err, "failed to create %s: %w", path, err)
	}
	defer closeFd(fd)
	size := o.fsyncFileBytes()
	if err := unix.Fallocate(fd, 0, 0, size); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return nil, writeError(path, 0, size, err)
	}
	samples, err := syncLoop(ctx, fd, data[:o.FsyncWriteBytes], o.FsyncSamples, o.FsyncMaxDuration)
	if err != nil {
		return nil, writeError(path, int64(len(samples))*o.FsyncWriteBytes, size, err)
	}
	return summarizeFsync(o.FsyncWriteBytes, samples), nil
}

func syncLoop(ctx context.Context, fd int, data []byte, limit int, maxDuration time.Duration) ([]time.Duration, error) {
	samples := make([]time.Duration, 0, limit)
	stop := stopper(ctx, time.Now(), maxDuration)
	var off int64
	for len(samples) < limit {
		if err := stop(); errors.Is(err, errCapReached) {
			break
		} else if err != nil {
			return samples, err
		}
		if err := pwriteAll(fd, data, off); err != nil {
			return samples, err
		}
		start := time.Now()
		if err := unix.Fdatasync(fd); err != nil {
			return samples, err
		}
		samples = append(samples, time.Since(start))
		off += int64(len(data))
	}
	return samples, nil
}
