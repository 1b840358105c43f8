package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// hostState records what the demo changed on this machine outside its directory's plain files, so
// that demo down can undo it from another process. Each change is recorded before it is made.
type hostState struct {
	// TmpfsMount is a tmpfs mounted for the probe and the agent (as root).
	TmpfsMount string `json:"tmpfsMount,omitempty"`
	// ShmDir is a directory created under /dev/shm instead (not root).
	ShmDir string `json:"shmDir,omitempty"`
	// Loop is the loop device attached for the read-ahead part (as root).
	Loop *loopDevice `json:"loop,omitempty"`
}

// loopDevice is a loop device over an image file in the demo's directory.
type loopDevice struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	// OriginalSectors is the read-ahead the free device had: the kernel keeps a loop device's
	// read-ahead across detach and attach, so it is put back for the next user.
	OriginalSectors int `json:"originalSectors"`
}

const hostStateFile = "host.json"

func (d *demo) readHostState() (*hostState, error) {
	data, err := os.ReadFile(filepath.Join(d.stateDir, hostStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &hostState{}, nil
	}
	if err != nil {
		return nil, err
	}
	s := &hostState{}
	return s, json.Unmarshal(data, s)
}

func (d *demo) writeHostState(s *hostState) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d.stateDir, hostStateFile), data, 0o644)
}

// undoHost reverts everything recorded in the host state, tolerating what is already gone (after a
// reboot, nothing is left to undo).
func (d *demo) undoHost() error {
	s, err := d.readHostState()
	if err != nil {
		return err
	}
	var errs []error
	if s.Loop != nil {
		errs = append(errs, detachLoop(s.Loop))
	}
	if s.TmpfsMount != "" {
		if err := unix.Unmount(s.TmpfsMount, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			// Busy (a shell sits in it): detach now, the kernel frees it when the last user leaves.
			errs = append(errs, unix.Unmount(s.TmpfsMount, unix.MNT_DETACH))
		}
	}
	if s.ShmDir != "" {
		errs = append(errs, os.RemoveAll(s.ShmDir))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	err = os.Remove(filepath.Join(d.stateDir, hostStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// scratchDirs returns a tmpfs directory and a directory on the disk under the demo's directory. As
// root the tmpfs is a fresh mount, sized like a ScratchVolume; otherwise a directory in /dev/shm.
func (d *demo) scratchDirs(s *hostState) (tmpfs, disk string, err error) {
	disk = filepath.Join(d.stateDir, "disk")
	// Start empty: files of a probe that was killed must not take the disk's space or skew it.
	if err := os.RemoveAll(disk); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(disk, 0o755); err != nil {
		return "", "", err
	}
	if os.Geteuid() == 0 {
		tmpfs = filepath.Join(d.stateDir, "tmpfs")
		if err := os.MkdirAll(tmpfs, 0o755); err != nil {
			return "", "", err
		}
		s.TmpfsMount = tmpfs
		if err := d.writeHostState(s); err != nil {
			return "", "", err
		}
		if err := unix.Mount("tmpfs", tmpfs, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1g,mode=0755"); err != nil {
			return "", "", fmt.Errorf("failed to mount a tmpfs on %s: %w", tmpfs, err)
		}
		return tmpfs, disk, nil
	}
	tmpfs, err = os.MkdirTemp("/dev/shm", "dbtune-demo-")
	if err != nil {
		return "", "", fmt.Errorf("no tmpfs to probe: %w", err)
	}
	s.ShmDir = tmpfs
	return tmpfs, disk, d.writeHostState(s)
}

// attachLoop attaches a loop device over a sparse image with the loop ioctls, and records it. It is
// not set to clear itself on last close: it must outlive this process until demo down.
func (d *demo) attachLoop(s *hostState) (*loopDevice, error) {
	image := filepath.Join(d.stateDir, "loop.img")
	f, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if err := f.Truncate(64 << 20); err != nil {
		return nil, err
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ctl.Close() }()
	// Another process can take the free device between the two ioctls; then the next one is tried.
	for range 10 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		l := &loopDevice{Name: "loop" + strconv.Itoa(n), Image: image}
		if err := configureLoop(l, f, func() error { s.Loop = l; return d.writeHostState(s) }); err != nil {
			s.Loop = nil
			if errors.Is(err, unix.EBUSY) {
				continue
			}
			return nil, errors.Join(err, d.writeHostState(s))
		}
		return l, d.writeHostState(s)
	}
	return nil, errors.New("found no free loop device after 10 tries")
}

// configureLoop attaches image to the device l names; record runs once the original read-ahead is
// known and before the device changes.
func configureLoop(l *loopDevice, image *os.File, record func() error) error {
	dev, err := openDevice("/dev/" + l.Name)
	if err != nil {
		return err
	}
	defer func() { _ = dev.Close() }()
	if l.OriginalSectors, err = unix.IoctlGetInt(int(dev.Fd()), unix.BLKRAGET); err != nil {
		return fmt.Errorf("BLKRAGET on /dev/%s: %w", l.Name, err)
	}
	if err := record(); err != nil {
		return err
	}
	cfg := unix.LoopConfig{Fd: uint32(image.Fd())}
	copy(cfg.Info.File_name[:], l.Image)
	err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return err
	}
	// Kernels before 5.8 have no LOOP_CONFIGURE.
	if err := unix.IoctlSetInt(int(dev.Fd()), unix.LOOP_SET_FD, int(image.Fd())); err != nil {
		return err
	}
	return unix.IoctlLoopSetStatus64(int(dev.Fd()), &cfg.Info)
}

// openDevice waits briefly for a device node that devtmpfs creates asynchronously.
func openDevice(path string) (*os.File, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || time.Now().After(deadline) {
			return f, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// detachLoop restores the device's read-ahead and detaches it, but only while it is still backed by
// our image: after a reboot the same name may serve someone else.
func detachLoop(l *loopDevice) error {
	dev, err := os.OpenFile("/dev/"+l.Name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = dev.Close() }()
	info, err := unix.IoctlLoopGetStatus64(int(dev.Fd()))
	if errors.Is(err, unix.ENXIO) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("LOOP_GET_STATUS64 on /dev/%s: %w", l.Name, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(l.Image, &st); err != nil || st.Ino != info.Inode || st.Dev != info.Device {
		return nil
	}
	if err := unix.IoctlSetInt(int(dev.Fd()), unix.BLKRASET, l.OriginalSectors); err != nil {
		return fmt.Errorf("failed to restore the read-ahead of /dev/%s: %w", l.Name, err)
	}
	if err := unix.IoctlSetInt(int(dev.Fd()), unix.LOOP_CLR_FD, 0); err != nil {
		return fmt.Errorf("failed to detach /dev/%s: %w", l.Name, err)
	}
	return os.Remove(l.Image)
}
