package probe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// directWrite writes total bytes with O_DIRECT in blocks, like `dd bs=512k oflag=direct`. data must be
// page-aligned. A filesystem that refuses O_DIRECT is reported as Unsupported with the reason; the
// workload never falls back to buffered I/O, which would measure something else under the same name.
func directWrite(ctx context.Context, path string, kind Kind, kernel string, data []byte, total, block int64,
	maxDuration time.Duration,
) (*ThroughputResult, error) {
	res := &ThroughputResult{BlockSizeBytes: block}
	fd, err := unix.Open(path, createFlags|unix.O_DIRECT, 0o600)
	if errors.Is(err, unix.EINVAL) {
		res.Unsupported = directOpenRefusal(kind, kernel)
		return res, nil
	}
	if err != nil {
		return nil, ioFailure(path, err, "failed to create %s with O_DIRECT: %w", path, err)
	}
	defer closeFd(fd)
	start := time.Now()
	stop := stopper(ctx, start, maxDuration)
	for res.Bytes < total {
		if err := stop(); errors.Is(err, errCapReached) {
			break
		} else if err != nil {
			return nil, err
		}
		n, err := writeAll(fd, data[:min(block, total-res.Bytes)])
		if errors.Is(err, unix.EINVAL) && res.Bytes == 0 {
			res.Unsupported = fmt.Sprintf("the filesystem accepted O_DIRECT at open but refused an aligned %d-byte write (EINVAL)", block)
			return res, nil
		}
		res.Bytes += n
		if err != nil {
			return nil, writeError(path, res.Bytes, total, err)
		}
	}
	res.BytesPerSecond = PerSecond(res.Bytes, time.Since(start))
	return res, nil
}

// directOpenRefusal words an EINVAL from open(O_DIRECT). tmpfs gets the kernel version spelled out
// because that is the usual cause: shmem gained O_DIRECT support in Linux 6.6.
func directOpenRefusal(kind Kind, kernel string) string {
	if kind != KindTmpfs {
		return "the filesystem refuses O_DIRECT (open returned EINVAL)"
	}
	if major, minor, ok := ParseKernelVersion(kernel); ok && !versionAtLeast(major, minor, 6, 6) {
		return fmt.Sprintf("tmpfs on Linux %s refuses O_DIRECT (open returned EINVAL); tmpfs supports it from Linux 6.6", kernel)
	}
	return fmt.Sprintf("tmpfs on Linux %s refuses O_DIRECT (open returned EINVAL)", kernel)
}

// ParseKernelVersion extracts major and minor from a release string such as "6.18.44-fc-v657".
func ParseKernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(leadingDigits(parts[1]))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// leadingDigits cuts a suffix such as "-rc1" or "+" off a version component.
func leadingDigits(s string) string {
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		return s[:i]
	}
	return s
}

func versionAtLeast(major, minor, wantMajor, wantMinor int) bool {
	return major > wantMajor || (major == wantMajor && minor >= wantMinor)
}
