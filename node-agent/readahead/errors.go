package readahead

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Sentinel errors. Every error this package returns for one of these situations matches it with
// errors.Is, so a caller can pick a condition reason without parsing messages; the errno (when
// there is one) matches too.
var (
	// ErrDeviceNotFound: the device does not exist, or went away (ENOENT, ENXIO, ENODEV).
	ErrDeviceNotFound = errors.New("block device not found")
	// ErrDeviceChanged: the name now belongs to a different device number than the one expected,
	// so the device we knew is gone and another took its name.
	ErrDeviceChanged = errors.New("device name now belongs to a different device")
	// ErrPermission: EPERM or EACCES. The BLKRASET ioctl needs CAP_SYS_ADMIN; writing sysfs
	// needs root.
	ErrPermission = errors.New("permission denied")
	// ErrReadOnly: EROFS, typically /sys mounted read-only in an unprivileged container.
	ErrReadOnly = errors.New("read-only file system")
	// ErrNoMatch: a name pattern selected no eligible device.
	ErrNoMatch = errors.New("no device matches")
	// ErrMountNotFound: no mount in mountinfo covers a mount path.
	ErrMountNotFound = errors.New("mount path not found")
	// ErrNotBlockDevice: a mount path is on a filesystem without a block device (tmpfs, overlay,
	// NFS).
	ErrNotBlockDevice = errors.New("not on a block device")
	// ErrNotEligible: a device was asked for but is never tuned (see the package documentation).
	ErrNotEligible = errors.New("device not eligible")
	// ErrCorruptState: the state file cannot be parsed or has an unknown version.
	ErrCorruptState = errors.New("corrupt read-ahead state file")
	// ErrNotSaved: the state file has no entry for the device, so there is nothing to restore.
	ErrNotSaved = errors.New("no saved read-ahead for the device")
)

// DeviceError is a failed read or write of one device's read-ahead.
type DeviceError struct {
	// Op is what failed: "read read-ahead" or "set read-ahead".
	Op string
	// Device is the device operated on.
	Device DeviceID
	// Path is the device node or sysfs file used.
	Path string
	// Err is the cause: an errno, ErrDeviceChanged, or a parse error.
	Err error
}

func (e *DeviceError) Error() string {
	msg := fmt.Sprintf("failed to %s of %s through %s: %v", e.Op, e.Device, e.Path, e.Err)
	if hint := hintFor(e.Err); hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

// Unwrap exposes the cause and, when the cause is an errno, the sentinel it stands for.
func (e *DeviceError) Unwrap() []error {
	if kind := classify(e.Err); kind != nil {
		return []error{kind, e.Err}
	}
	return []error{e.Err}
}

func classify(err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return nil
	}
	switch errno {
	case syscall.ENOENT, syscall.ENXIO, syscall.ENODEV:
		return ErrDeviceNotFound
	case syscall.EPERM, syscall.EACCES:
		return ErrPermission
	case syscall.EROFS:
		return ErrReadOnly
	}
	return nil
}

func hintFor(err error) string {
	kind := classify(err)
	switch {
	case errors.Is(err, ErrDeviceChanged):
		return "the device was replaced; nothing was changed on the new one"
	case errors.Is(kind, ErrDeviceNotFound):
		return "the device does not exist or has gone away"
	case errors.Is(kind, ErrPermission):
		return "setting read-ahead needs CAP_SYS_ADMIN for the ioctl, or root for sysfs"
	case errors.Is(kind, ErrReadOnly):
		return "/sys is mounted read-only; the agent needs a privileged container"
	}
	return ""
}

// Skip is a device a selector reached but does not tune.
type Skip struct {
	// Name is the kernel name of the device.
	Name string
	// Reason says why it is not tuned, as a sentence fragment ("removable media").
	Reason string
}

func (s Skip) String() string { return s.Name + " is " + s.Reason }

// NoMatchError says a name pattern selected no device.
type NoMatchError struct {
	// Pattern is the name pattern as written in the policy.
	Pattern string
	// Skipped are the devices the pattern matched that are not eligible; empty when the pattern
	// matched no device at all.
	Skipped []Skip
	// Err is set when the pattern is malformed (path.ErrBadPattern).
	Err error
}

func (e *NoMatchError) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("name pattern %q is malformed: %v", e.Pattern, e.Err)
	case len(e.Skipped) == 0:
		return fmt.Sprintf("name pattern %q matches no block device on this node", e.Pattern)
	}
	return fmt.Sprintf("name pattern %q matches no eligible block device: %s", e.Pattern, joinSkips(e.Skipped))
}

// Unwrap returns ErrNoMatch, and the pattern error when there is one.
func (e *NoMatchError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrNoMatch, e.Err}
	}
	return []error{ErrNoMatch}
}

// MountPathError says a mount path selected no device.
type MountPathError struct {
	// Path is the mount path as written in the policy.
	Path string
	// Reason says what was found instead.
	Reason string
	// Err is ErrMountNotFound, ErrNotBlockDevice, ErrDeviceNotFound or ErrNotEligible.
	Err error
}

func (e *MountPathError) Error() string {
	return fmt.Sprintf("mount path %s selects no device: %s", e.Path, e.Reason)
}

func (e *MountPathError) Unwrap() error { return e.Err }

// CorruptStateError says the state file cannot be trusted. The agent must then change nothing:
// treating the file as empty would forget the originals it holds.
type CorruptStateError struct {
	// Path is the state file.
	Path string
	// Err is what is wrong with it.
	Err error
}

func (e *CorruptStateError) Error() string {
	return fmt.Sprintf("read-ahead state file %s is corrupt: %v; it holds the original read-ahead of "+
		"the devices the agent changed, so the agent changes nothing until the file is repaired or moved aside", e.Path, e.Err)
}

// Unwrap returns ErrCorruptState and the parse error.
func (e *CorruptStateError) Unwrap() []error { return []error{ErrCorruptState, e.Err} }

func joinSkips(skips []Skip) string {
	parts := make([]string, 0, len(skips))
	for _, s := range skips {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "; ")
}
