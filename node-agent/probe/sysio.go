package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const createFlags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC

// writeAll writes b with as many write calls as the kernel needs and returns the bytes written,
// also on error, so that a full disk can be reported with how far the write got.
func writeAll(fd int, b []byte) (int64, error) {
	var done int64
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n > 0 {
			done += int64(n)
			b = b[n:]
		}
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, io.ErrShortWrite
		}
	}
	return done, nil
}

// pwriteAll is writeAll at a file offset.
func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// readLoop reads fd to the end, to limit bytes or until stop says so, and returns the bytes read.
// stop is asked before every read call, which is where cancellation and time caps take effect.
func readLoop(fd int, buf []byte, limit int64, stop func() error) (int64, error) {
	var total int64
	for total < limit {
		if err := stop(); err != nil {
			return total, err
		}
		n, err := unix.Read(fd, buf[:min(int64(len(buf)), limit-total)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
		total += int64(n)
	}
	return total, nil
}

// errCapReached tells a loop that its time cap is over; it is a normal end, not a failure.
var errCapReached = errors.New("time cap reached")

// stopper returns the check a loop runs between system calls: the context first (the run's deadline
// or the caller's cancellation), then the workload's own time cap.
func stopper(ctx context.Context, start time.Time, limit time.Duration) func() error {
	return func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Since(start) >= limit {
			return errCapReached
		}
		return nil
	}
}

// writeError explains a failed write to path; a full filesystem (ErrTargetFull) gets its own
// wording because it is the failure an operator will meet on a node that is short of space.
func writeError(path string, done, want int64, err error) error {
	if errors.Is(errnoKind(err), ErrTargetFull) {
		return failure(ErrTargetFull, path, "the filesystem filled up: %s got %d of %d bytes: %w", path, done, want, err)
	}
	return ioFailure(path, err, "failed to write %s after %d of %d bytes: %w", path, done, want, err)
}

// residentBytes reports how much of the first size bytes of fd are in the page cache. x/sys has no
// mincore wrapper, hence the raw system call on a read-only shared mapping of the file.
func residentBytes(fd int, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	m, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("failed to map the file to check its page-cache residency: %w", err)
	}
	defer func() { _ = unix.Munmap(m) }()
	page := int64(unix.Getpagesize())
	vec := make([]byte, (size+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(m))), uintptr(len(m)),
		uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if errno != 0 {
		return 0, fmt.Errorf("failed to check page-cache residency: %w", errno)
	}
	var resident int64
	for _, v := range vec {
		resident += int64(v & 1)
	}
	return min(resident*page, size), nil
}

func closeFd(fd int) { _ = unix.Close(fd) }
