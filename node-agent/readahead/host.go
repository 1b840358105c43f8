package readahead

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Host reads and sets the read-ahead of block devices, in KiB. The reconciler talks to the
// node through it, so its tests can use a fake.
//
// Both operations check that the device still has the number in its ID and fail with
// ErrDeviceChanged when it does not, and with an error matching ErrDeviceNotFound when the device
// is gone. A partition's read-ahead is its disk's.
type Host interface {
	ReadAhead(id DeviceID) (int64, error)
	SetReadAhead(id DeviceID, kib int64) error
}

// sectorsPerKiB converts the ioctls' unit, 512-byte sectors whatever the device's block size.
const sectorsPerKiB = 2

// IoctlHost uses the BLKRAGET and BLKRASET ioctls on the device node, as `blockdev --getra` and
// `--setra` do. It is the primary way because it works on the open file: the number check and the
// change hit the same device even if the name is reused in between. Setting needs CAP_SYS_ADMIN.
type IoctlHost struct {
	// DevDir is the directory with the device nodes, "/dev" on the host.
	DevDir string
}

// ReadAhead returns the device's read-ahead in KiB.
func (h IoctlHost) ReadAhead(id DeviceID) (int64, error) {
	var kib int64
	err := h.withDevice(id, "read read-ahead", func(fd int) error {
		sectors, err := unix.IoctlGetInt(fd, unix.BLKRAGET)
		kib = int64(sectors) / sectorsPerKiB
		return err
	})
	return kib, err
}

// SetReadAhead asks the kernel for a read-ahead in KiB; it keeps whole pages.
func (h IoctlHost) SetReadAhead(id DeviceID, kib int64) error {
	return h.withDevice(id, "set read-ahead", func(fd int) error {
		return unix.IoctlSetInt(fd, unix.BLKRASET, int(kib*sectorsPerKiB))
	})
}

func (h IoctlHost) withDevice(id DeviceID, op string, f func(fd int) error) error {
	node := filepath.Join(h.DevDir, id.Name)
	fail := func(err error) error { return &DeviceError{Op: op, Device: id, Path: node, Err: err} }
	// O_NONBLOCK lets a drive with no medium open; O_RDONLY suffices for both ioctls.
	fd, err := unix.Open(node, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return fail(fmt.Errorf("not a block device node: %w", ErrDeviceChanged))
	}
	if got := devNumFromRdev(st.Rdev); got != id.Dev {
		return fail(fmt.Errorf("%s is now %s: %w", node, got, ErrDeviceChanged))
	}
	if err := f(fd); err != nil {
		return fail(err)
	}
	return nil
}

// SysfsHost uses queue/read_ahead_kb in sysfs. It needs no device node, so it works where /dev
// is not the host's, but writing needs root and a writable /sys.
type SysfsHost struct {
	// SysDir is where sysfs is mounted, "/sys" on the host.
	SysDir string
}

// ReadAhead returns the device's read-ahead in KiB.
func (h SysfsHost) ReadAhead(id DeviceID) (int64, error) {
	file, err := h.readAheadFile(id)
	if err != nil {
		return 0, &DeviceError{Op: "read read-ahead", Device: id, Path: file, Err: err}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, &DeviceError{Op: "read read-ahead", Device: id, Path: file, Err: unwrapPathError(err)}
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, &DeviceError{Op: "read read-ahead", Device: id, Path: file, Err: err}
	}
	return kib, nil
}

// SetReadAhead writes the read-ahead in KiB; the kernel keeps whole pages.
func (h SysfsHost) SetReadAhead(id DeviceID, kib int64) error {
	file, err := h.readAheadFile(id)
	if err == nil {
		err = writeAttr(file, strconv.FormatInt(kib, 10))
	}
	if err != nil {
		return &DeviceError{Op: "set read-ahead", Device: id, Path: file, Err: unwrapPathError(err)}
	}
	return nil
}

// readAheadFile checks the device's number and returns its disk's queue/read_ahead_kb.
func (h SysfsHost) readAheadFile(id DeviceID) (string, error) {
	dir := deviceDir(h.SysDir, id.Name)
	raw, err := os.ReadFile(filepath.Join(dir, "dev"))
	if err != nil {
		return filepath.Join(dir, "dev"), unwrapPathError(err)
	}
	got, err := ParseDevNum(string(raw))
	if err != nil {
		return filepath.Join(dir, "dev"), err
	}
	if got != id.Dev {
		return filepath.Join(dir, "dev"), fmt.Errorf("%s is now %s: %w", id.Name, got, ErrDeviceChanged)
	}
	if _, err := os.Lstat(filepath.Join(dir, "partition")); err == nil {
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return dir, unwrapPathError(err)
		}
		dir = filepath.Dir(dir)
	}
	return filepath.Join(dir, "queue", "read_ahead_kb"), nil
}

func writeAttr(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// unwrapPathError drops the *fs.PathError layer: DeviceError already names the path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// NewHost returns the Host the agent uses: the ioctls on <Root>/dev, and sysfs when they cannot
// be used, because the device node is missing (a pod without the host's /dev) or the ioctl is
// refused (no CAP_SYS_ADMIN, while root may still write sysfs).
func NewHost(p Paths) Host {
	return fallbackHost{primary: IoctlHost{DevDir: p.DevDir()}, secondary: SysfsHost{SysDir: p.SysDir()}}
}

type fallbackHost struct {
	primary, secondary Host
}

func (h fallbackHost) ReadAhead(id DeviceID) (int64, error) {
	kib, err := h.primary.ReadAhead(id)
	if !shouldFallBack(err) {
		return kib, err
	}
	kib, err2 := h.secondary.ReadAhead(id)
	if err2 != nil {
		return 0, bothFailed(err, err2)
	}
	return kib, nil
}

func (h fallbackHost) SetReadAhead(id DeviceID, kib int64) error {
	err := h.primary.SetReadAhead(id, kib)
	if !shouldFallBack(err) {
		return err
	}
	if err2 := h.secondary.SetReadAhead(id, kib); err2 != nil {
		return bothFailed(err, err2)
	}
	return nil
}

// bothFailed keeps sysfs's word alone when it says the device is gone or replaced, since sysfs
// is where devices are listed; otherwise both failures matter.
func bothFailed(primary, secondary error) error {
	if errors.Is(secondary, ErrDeviceNotFound) || errors.Is(secondary, ErrDeviceChanged) {
		return secondary
	}
	return errors.Join(primary, secondary)
}

func shouldFallBack(err error) bool {
	return errors.Is(err, ErrDeviceNotFound) || errors.Is(err, ErrPermission)
}
