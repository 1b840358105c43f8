package probe

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// deviceRead reads a block device through the page cache from its start, like `hdparm -t`: the
// device's buffers are flushed first (BLKFLSBUF, which needs CAP_SYS_ADMIN) so the figure is the
// device's, then 2 MiB reads run for about three seconds or until the byte cap.
func deviceRead(ctx context.Context, device string, buf []byte, o *Options) (*ThroughputResult, error) {
	fd, err := unix.Open(device, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, failure(ErrDeviceUnreadable, device, "failed to open device %s: %w", device, err)
	}
	defer closeFd(fd)
	if err := flushDevice(fd); err != nil {
		return nil, failure(ErrDeviceUnreadable, device, "failed to flush the buffers of %s, so its read would not be cold: %w", device, err)
	}
	block := buf[:o.DeviceReadBlockBytes]
	start := time.Now()
	n, err := readLoop(fd, block, o.DeviceReadMaxBytes, stopper(ctx, start, o.DeviceReadDuration))
	elapsed := time.Since(start)
	switch {
	case err == nil, errors.Is(err, errCapReached):
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, err // stopped, not unreadable: the run reports why
	default:
		return nil, failure(ErrDeviceUnreadable, device, "the read of %s failed after %d bytes: %w", device, n, err)
	}
	return &ThroughputResult{
		Bytes:          n,
		BlockSizeBytes: int64(len(block)),
		BytesPerSecond: PerSecond(n, elapsed),
		Note:           "buffered read of " + device,
	}, nil
}

// flushDevice writes back and invalidates the device's cached blocks, as hdparm does before timing.
func flushDevice(fd int) error {
	if err := unix.Fsync(fd); err != nil {
		return err
	}
	return unix.IoctlSetInt(fd, unix.BLKFLSBUF, 0)
}
