package cloudvolume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// blockSize is the loop device's logical block size. 4 KiB, as cloud volumes report, also lets the
// loop device use direct I/O on the FUSE file, so its data is not cached a second time there.
const blockSize = 4096

// attachLoop binds a free loop device to the file at path and returns it open. record is called
// with the device's path before the device is bound, so that a crash leaves its name behind.
//
// The device clears itself when the last holder closes it (LO_FLAGS_AUTOCLEAR): the caller keeps it
// open until the file system on it is mounted, and a process that dies after that leaves a device
// that goes away with the file system's unmount.
func attachLoop(path string, record func(dev string) error) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open /dev/loop-control (is the loop module loaded? modprobe loop): %w", err)
	}
	defer func() { _ = ctl.Close() }()
	backing, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open the volume's file %s: %w", path, err)
	}
	defer func() { _ = backing.Close() }()
	// Another process may take the free device between the query and the binding: try again.
	for range 10 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("failed to find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		if err := record(dev); err != nil {
			return nil, err
		}
		f, err := configureLoop(dev, backing)
		if errors.Is(err, unix.EBUSY) {
			continue
		}
		return f, err
	}
	return nil, errors.New("failed to bind a loop device: every free one was taken by another process first; try again")
}

func configureLoop(dev string, backing *os.File) (*os.File, error) {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", dev, err)
	}
	cfg := unix.LoopConfig{Fd: uint32(backing.Fd()), Size: blockSize}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_DIRECT_IO
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], backing.Name())
	if err := unix.IoctlLoopConfigure(int(f.Fd()), &cfg); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to bind %s to %s: %w", dev, backing.Name(), err)
	}
	return f, nil
}

// loopSysfs is the path of one of a loop device's attributes in sysfs.
func loopSysfs(dev, attribute string) string {
	return fmt.Sprintf("/sys/block/%s/loop/%s", filepath.Base(dev), attribute)
}

// loopBackingFile is the file a loop device is bound to, or "" when it is bound to none.
func loopBackingFile(dev string) string {
	raw, err := os.ReadFile(loopSysfs(dev, "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}

// detachLoop unbinds dev if it is still bound to path, and waits until it is free. A device bound
// to another file belongs to someone else by now and is left alone.
func detachLoop(dev, path string) error {
	if dev == "" || loopBackingFile(dev) != path {
		return nil
	}
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("failed to open %s to unbind it: %w", dev, err)
	}
	err = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0)
	_ = f.Close()
	if err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("failed to unbind %s from %s: %w", dev, path, err)
	}
	return waitLoopFree(dev, path)
}

// waitLoopFree waits for the kernel to finish unbinding dev, which happens when its last holder
// closes it: until then the FUSE file stays open and its file system cannot be unmounted.
func waitLoopFree(dev, path string) error {
	deadline := time.Now().Add(10 * time.Second)
	for loopBackingFile(dev) == path {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still bound to %s after 10 s: something holds it open (see fuser -v %s)", dev, path, dev)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// loopDirectIO reports whether the loop device reads and writes its file with direct I/O.
func loopDirectIO(dev string) bool {
	raw, err := os.ReadFile(loopSysfs(dev, "dio"))
	return err == nil && strings.TrimSpace(string(raw)) == "1"
}
