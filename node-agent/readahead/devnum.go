package readahead

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DevNum is a block device number, written "MAJ:MIN" as in /sys/dev/block, the dev attribute and
// mountinfo.
type DevNum struct {
	Major, Minor uint32
}

// ParseDevNum parses "MAJ:MIN".
func ParseDevNum(s string) (DevNum, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	major, errMajor := strconv.ParseUint(a, 10, 32)
	minor, errMinor := strconv.ParseUint(b, 10, 32)
	if !ok || errMajor != nil || errMinor != nil {
		return DevNum{}, fmt.Errorf("malformed device number %q: want MAJ:MIN", s)
	}
	return DevNum{Major: uint32(major), Minor: uint32(minor)}, nil
}

func devNumFromRdev(rdev uint64) DevNum {
	return DevNum{Major: unix.Major(rdev), Minor: unix.Minor(rdev)}
}

// String returns "MAJ:MIN".
func (d DevNum) String() string {
	return strconv.FormatUint(uint64(d.Major), 10) + ":" + strconv.FormatUint(uint64(d.Minor), 10)
}

// IsZero reports whether d is 0:0, which no block device has: major 0 is for filesystems
// without a device (tmpfs, overlay, btrfs subvolumes).
func (d DevNum) IsZero() bool { return d == DevNum{} }

// MarshalText writes "MAJ:MIN", so the state file reads like sysfs.
func (d DevNum) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads "MAJ:MIN".
func (d *DevNum) UnmarshalText(b []byte) error {
	v, err := ParseDevNum(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// DeviceID names a device by kernel name and device number together. The kernel reuses names
// (unplug sdb, plug in another disk, it is sdb again), so a name alone could make the agent
// "restore" a value onto a disk it never changed; the pair catches that.
type DeviceID struct {
	Name string `json:"name"`
	Dev  DevNum `json:"majorMinor"`
}

// String returns "sda (8:0)".
func (id DeviceID) String() string { return id.Name + " (" + id.Dev.String() + ")" }
