package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// attachLoop attaches backing read-only to a free loop device with the kernel's loop ioctls and
// detaches it when the test ends.
func attachLoop(t *testing.T, backing string) string {
	t.Helper()
	testenv.RequireRoot(t, "attach a loop device")
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		testenv.SkipOrFail(t, "needs /dev/loop-control to attach a loop device (%v): run as root or in CI", err)
	}
	defer closeFd(ctl)
	bfd, err := unix.Open(backing, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFd(bfd)
	// Another process may take the free device between the two calls; try again then.
	for range 5 {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			t.Fatalf("LOOP_CTL_GET_FREE: %v", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lfd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			testenv.SkipOrFail(t, "cannot open %s (%v): the container needs loop device nodes", dev, err)
		}
		err = configureLoop(lfd, bfd)
		if errors.Is(err, unix.EBUSY) {
			closeFd(lfd)
			continue
		}
		if err != nil {
			closeFd(lfd)
			t.Fatalf("failed to attach %s to %s: %v", backing, dev, err)
		}
		t.Cleanup(func() {
			_ = unix.IoctlSetInt(lfd, unix.LOOP_CLR_FD, 0)
			closeFd(lfd)
		})
		return dev
	}
	t.Fatal("no free loop device after five attempts")
	return ""
}

// configureLoop uses LOOP_CONFIGURE (Linux 5.8+), falling back to LOOP_SET_FD on older kernels.
func configureLoop(lfd, bfd int) error {
	cfg := unix.LoopConfig{Fd: uint32(bfd), Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_READ_ONLY}}
	err := unix.IoctlLoopConfigure(lfd, &cfg)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
		return unix.IoctlSetInt(lfd, unix.LOOP_SET_FD, bfd)
	}
	return err
}

func TestDeviceReadOnLoopDevice(t *testing.T) {
	testenv.RequireRoot(t, "attach a loop device")
	backing := filepath.Join(t.TempDir(), "disk.img")
	data := make([]byte, 24*MiB)
	fillRandom(data)
	if err := os.WriteFile(backing, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dev := attachLoop(t, backing)
	dir := mountTmpfs(t, "64m", 0)
	res, err := Run(context.Background(), []Target{{Path: dir, Device: dev}}, smallOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	r := res.Targets[0].DeviceRead
	if r == nil || r.Bytes != int64(len(data)) || r.BytesPerSecond <= 0 || r.BlockSizeBytes != 2*MiB {
		t.Errorf("device read of a %d-byte loop device = %+v", len(data), r)
	}
	assertEmpty(t, dir)

	o := smallOptions()
	o.DeviceReadMaxBytes = 4 * MiB
	res, err = Run(context.Background(), []Target{{Path: dir, Device: dev}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Targets[0].DeviceRead; r == nil || r.Bytes != 4*MiB {
		t.Errorf("byte cap of 4 MiB gave %+v", r)
	}
}

// TestDeviceReadFailuresAreTyped: whatever stops the device read, open or flush, is the device's.
func TestDeviceReadFailuresAreTyped(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-device")
	if err := os.WriteFile(file, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	o := smallOptions()
	buf := make([]byte, o.DeviceReadBlockBytes)
	for _, tt := range []struct {
		device string
		errno  unix.Errno
		words  string
	}{
		{"/dev/does-not-exist", unix.ENOENT, "failed to open device /dev/does-not-exist"},
		{file, unix.ENOTTY, "failed to flush the buffers of " + file},
	} {
		_, err := deviceRead(context.Background(), tt.device, buf, &o)
		assertKinds(t, err, ErrDeviceUnreadable, tt.errno)
		assertPath(t, err, tt.device)
		if err == nil || !strings.HasPrefix(err.Error(), tt.words) {
			t.Errorf("deviceRead(%s) = %v, want %q", tt.device, err, tt.words)
		}
	}
}
