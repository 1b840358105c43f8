package probe

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// churnDir is the directory of one churn workload. Files are opened relative to its descriptor, as
// a shell loop in that directory would, so the figures are not about resolving a long path.
type churnDir struct {
	fd   int
	path string
}

// churn runs one small-file workload in its own subdirectory of dir: a pass that creates, writes and
// closes the files, then a pass that opens, reads, closes and unlinks them, the loop behind the
// classic tmpfs-versus-ext4 tables. Each pass has its own time cap; files a capped second pass did
// not reach are removed afterwards, outside the measurement.
func churn(ctx context.Context, dir string, c ChurnSize, bufs *buffers, maxDuration time.Duration) (*FileChurnResult, error) {
	d := churnDir{path: filepath.Join(dir, "churn-"+strconv.FormatInt(c.FileBytes, 10))}
	if err := unix.Mkdir(d.path, 0o700); err != nil {
		return nil, ioFailure(d.path, err, "failed to create %s: %w", d.path, err)
	}
	defer func() { _ = unix.Rmdir(d.path) }()
	var err error
	if d.fd, err = unix.Open(d.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, ioFailure(d.path, err, "failed to open %s: %w", d.path, err)
	}
	defer closeFd(d.fd)
	created, createTime, err := d.createFiles(ctx, c, bufs.write, maxDuration)
	defer d.removeFiles(created)
	if err != nil {
		return nil, err
	}
	read, readTime, err := d.readAndUnlink(ctx, created, bufs.read, maxDuration)
	if err != nil {
		return nil, err
	}
	return &FileChurnResult{
		FileSizeBytes:            c.FileBytes,
		Files:                    int32(min(read, math.MaxInt32)),
		CreateFilesPerSecond:     PerSecond(int64(created), createTime),
		ReadUnlinkFilesPerSecond: PerSecond(int64(read), readTime),
		ElapsedMicroseconds:      (createTime + readTime).Microseconds(),
	}, nil
}

// createFiles returns how many files may exist (including one a failed write left behind) and the
// time of the pass.
func (d churnDir) createFiles(ctx context.Context, c ChurnSize, data []byte, maxDuration time.Duration) (int, time.Duration, error) {
	start := time.Now()
	stop := stopper(ctx, start, maxDuration)
	created := 0
	for created < c.Files {
		if err := stop(); errors.Is(err, errCapReached) {
			break
		} else if err != nil {
			return created, 0, err
		}
		// Shifting the slice per file keeps files distinct for filesystems that deduplicate.
		off := int64(created*4096) % (int64(len(data)) - c.FileBytes + 1)
		if err := d.createOne(churnName(created), data[off:off+c.FileBytes]); err != nil {
			return created + 1, 0, err
		}
		created++
	}
	return created, time.Since(start), nil
}

func (d churnDir) createOne(name string, data []byte) error {
	fd, err := unix.Openat(d.fd, name, createFlags|unix.O_TRUNC, 0o600)
	if err != nil {
		return writeError(filepath.Join(d.path, name), 0, int64(len(data)), err)
	}
	n, err := writeAll(fd, data)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return writeError(filepath.Join(d.path, name), n, int64(len(data)), err)
	}
	return nil
}

func (d churnDir) readAndUnlink(ctx context.Context, files int, buf []byte, maxDuration time.Duration) (int, time.Duration, error) {
	start := time.Now()
	stop := stopper(ctx, start, maxDuration)
	done := 0
	for ; done < files; done++ {
		if err := stop(); errors.Is(err, errCapReached) {
			break
		} else if err != nil {
			return done, 0, err
		}
		if err := d.readOne(churnName(done), buf); err != nil {
			return done, 0, err
		}
	}
	return done, time.Since(start), nil
}

func (d churnDir) readOne(name string, buf []byte) error {
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ioFailure(path, err, "failed to open %s: %w", path, err)
	}
	_, err = readLoop(fd, buf, math.MaxInt64, func() error { return nil })
	closeFd(fd)
	if err != nil {
		return ioFailure(path, err, "failed to read %s: %w", path, err)
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return ioFailure(path, err, "failed to unlink %s: %w", path, err)
	}
	return nil
}

// removeFiles unlinks whatever a capped or failed pass left, so that the next workload starts with
// the space it was promised; the run's removal of its whole directory remains the backstop.
func (d churnDir) removeFiles(files int) {
	for i := range files {
		_ = unix.Unlinkat(d.fd, churnName(i), 0)
	}
}

func churnName(i int) string { return "f" + strconv.Itoa(i) }
