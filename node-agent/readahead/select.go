package readahead

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// maxStackDepth bounds the walk down slaves/ links. Real stacks are two or three levels (LVM on
// dm-crypt on a partition); the bound only guards against a loop in a broken sysfs.
const maxStackDepth = 16

// Selection is what a DeviceSelector picks on one node.
type Selection struct {
	// Devices are the devices to tune, in natural name order.
	Devices []Selected
	// Skipped are devices the selector reached but does not tune (removable, loop, zram, …),
	// in natural name order. They are for diagnosis; Problems carries what a user must hear.
	Skipped []Skip
	// Problems say, for every name pattern and mount path that selected nothing, why: a
	// *NoMatchError or *MountPathError, names first, each in selector order.
	Problems []error
}

// Selected is a device to tune and what selected it.
type Selected struct {
	Device
	// Via lists the selector entries that led to the device, like `name "dm-*"` or
	// `mount /var/lib/mysql`, in selector order.
	Via []string
}

// Err joins the problems into one error, nil when there are none.
func (s *Selection) Err() error { return errors.Join(s.Problems...) }

// IDs returns the selected devices' IDs in order.
func (s *Selection) IDs() []DeviceID {
	ids := make([]DeviceID, 0, len(s.Devices))
	for i := range s.Devices {
		ids = append(ids, s.Devices[i].ID())
	}
	return ids
}

// Select picks the devices a selector asks for. Partitions stand for their disk, dm devices for
// what sel.DeviceMapper says, and only eligible devices are picked (see the package
// documentation).
func (inv *Inventory) Select(sel v1alpha1.DeviceSelector) *Selection {
	s := &selector{inv: inv, resolution: sel.DeviceMapper, picked: map[string]*Selected{}}
	if s.resolution == "" {
		s.resolution = v1alpha1.DeviceMapperDevice
	}
	switch s.resolution {
	case v1alpha1.DeviceMapperDevice, v1alpha1.DeviceMapperUnderlying, v1alpha1.DeviceMapperBoth:
	default:
		return &Selection{Problems: []error{fmt.Errorf("deviceMapper %q is not one of Device, Underlying, Both: %w", sel.DeviceMapper, ErrNoMatch)}}
	}
	for _, p := range sel.Names {
		s.byName(string(p))
	}
	for _, mp := range sel.MountPaths {
		s.byMount(string(mp))
	}
	return s.result()
}

type selector struct {
	inv        *Inventory
	resolution v1alpha1.DeviceMapperResolution
	picked     map[string]*Selected
	skipped    []Skip
	problems   []error
}

func (s *selector) byName(pattern string) {
	if _, err := path.Match(pattern, ""); err != nil {
		s.problems = append(s.problems, &NoMatchError{Pattern: pattern, Err: err})
		return
	}
	loopAllowed := strings.HasPrefix(pattern, "loop")
	via := fmt.Sprintf("name %q", pattern)
	var skips []Skip
	picked := 0
	for i := range s.inv.Devices {
		d := &s.inv.Devices[i]
		if ok, _ := path.Match(pattern, d.Name); !ok {
			continue
		}
		n, sk := s.take(d, loopAllowed, via)
		picked += n
		skips = append(skips, sk...)
	}
	s.skipped = append(s.skipped, skips...)
	if picked == 0 {
		s.problems = append(s.problems, &NoMatchError{Pattern: pattern, Skipped: dedupeSkips(skips)})
	}
}

func (s *selector) byMount(mountPath string) {
	fail := func(err error, format string, args ...any) {
		s.problems = append(s.problems, &MountPathError{Path: mountPath, Reason: fmt.Sprintf(format, args...), Err: err})
	}
	if s.inv.mountsErr != nil {
		fail(ErrMountNotFound, "the mount table could not be read: %v", s.inv.mountsErr)
		return
	}
	if !path.IsAbs(mountPath) {
		fail(ErrMountNotFound, "it is not an absolute path")
		return
	}
	m, ok := mountinfo.Containing(s.inv.Mounts, mountPath)
	if !ok {
		fail(ErrMountNotFound, "no mount in the mount table contains it")
		return
	}
	d, err := s.deviceOfMount(m)
	if err != nil {
		fail(err, "%s", mountDescription(m, err))
		return
	}
	n, skips := s.take(d, false, "mount "+mountPath)
	s.skipped = append(s.skipped, skips...)
	if n == 0 {
		fail(ErrNotEligible, "it is on %s (mounted on %s), and %s", d.Name, m.MountPoint, joinSkips(dedupeSkips(skips)))
	}
}

// deviceOfMount looks the mount's device number up in /sys/dev/block. Filesystems that report
// an anonymous device number (btrfs does, for every subvolume) still name their device as the
// mount source, so that is the fallback.
func (s *selector) deviceOfMount(m mountinfo.Entry) (*Device, error) {
	if m.Major != 0 {
		if d, ok := s.inv.DeviceByNumber(devOf(m)); ok {
			return d, nil
		}
		return nil, ErrDeviceNotFound
	}
	if name, ok := strings.CutPrefix(m.Source, "/dev/mapper/"); ok {
		if d, ok := s.inv.DeviceByDMName(name); ok {
			return d, nil
		}
	} else if name, ok := strings.CutPrefix(m.Source, "/dev/"); ok {
		if d, ok := s.inv.Device(name); ok {
			return d, nil
		}
	}
	return nil, ErrNotBlockDevice
}

func mountDescription(m mountinfo.Entry, err error) string {
	if errors.Is(err, ErrDeviceNotFound) {
		return fmt.Sprintf("it is on %s (%s from %s), which /sys/dev/block no longer lists: the device has gone away",
			m.MountPoint, devOf(m), m.Source)
	}
	return fmt.Sprintf("it is on %s, a %s filesystem (from %s) with no block device", m.MountPoint, m.FSType, m.Source)
}

// take resolves a device the selector reached to the devices whose read-ahead stands for it,
// picks the eligible ones and returns how many it picked and what it skipped.
func (s *selector) take(d *Device, loopAllowed bool, via string) (int, []Skip) {
	targets, skips := s.resolve(d, 0)
	picked := 0
	for _, t := range targets {
		if why := ineligibility(t, loopAllowed); why != "" {
			skips = append(skips, Skip{Name: t.Name, Reason: why})
			continue
		}
		s.pick(t, via)
		picked++
	}
	return picked, skips
}

func (s *selector) pick(d *Device, via string) {
	sel, ok := s.picked[d.Name]
	if !ok {
		sel = &Selected{Device: *d}
		s.picked[d.Name] = sel
	}
	if !slices.Contains(sel.Via, via) {
		sel.Via = append(sel.Via, via)
	}
}

func (s *selector) resolve(d *Device, depth int) ([]*Device, []Skip) {
	if depth > maxStackDepth {
		return nil, []Skip{{Name: d.Name, Reason: "part of a device stack deeper than sysfs should show"}}
	}
	switch d.Kind {
	case KindPartition:
		disk, ok := s.inv.Device(d.Parent)
		if !ok {
			return nil, []Skip{{Name: d.Name, Reason: fmt.Sprintf("a partition of %s, which is no longer listed", d.Parent)}}
		}
		return s.resolve(disk, depth+1)
	case KindDM:
		switch s.resolution {
		case v1alpha1.DeviceMapperUnderlying:
			return s.underlying(d, depth)
		case v1alpha1.DeviceMapperBoth:
			targets, skips := s.underlying(d, depth)
			return append([]*Device{d}, targets...), skips
		}
	}
	return []*Device{d}, nil
}

// underlying walks down a dm device's slaves to the disks at the bottom of the stack, resolving
// partitions to their disks; the dm devices in between are stepped through, not returned.
func (s *selector) underlying(d *Device, depth int) ([]*Device, []Skip) {
	if len(d.Slaves) == 0 {
		return nil, []Skip{{Name: d.Name, Reason: "a device-mapper device with no underlying devices"}}
	}
	var targets []*Device
	var skips []Skip
	for _, name := range d.Slaves {
		slave, ok := s.inv.Device(name)
		if !ok {
			skips = append(skips, Skip{Name: name, Reason: fmt.Sprintf("listed under %s but no longer present", d.Name)})
			continue
		}
		var t []*Device
		var sk []Skip
		if slave.Kind == KindDM {
			t, sk = s.underlying(slave, depth+1)
		} else {
			t, sk = s.resolve(slave, depth+1)
		}
		targets = append(targets, t...)
		skips = append(skips, sk...)
	}
	return targets, skips
}

// ineligibility says why a device is never tuned, or "" when it may be.
func ineligibility(d *Device, loopAllowed bool) string {
	switch {
	case d.Removable:
		return "removable media"
	case d.Kind == KindRAM:
		return "RAM-backed (zram or a ram disk), where read-ahead only fills the page cache"
	case d.Hidden:
		return "a hidden multipath path; tune the multipath device instead"
	case d.Kind == KindLoop && !loopAllowed:
		return `a loop device, which only a name pattern starting with "loop" selects`
	case d.SizeBytes == 0:
		return "empty (no medium, backing file or table)"
	}
	return ""
}

func (s *selector) result() *Selection {
	out := &Selection{Problems: s.problems}
	for _, sel := range s.picked {
		out.Devices = append(out.Devices, *sel)
	}
	slices.SortFunc(out.Devices, func(a, b Selected) int { return compareNatural(a.Name, b.Name) })
	for _, sk := range dedupeSkips(s.skipped) {
		if _, picked := s.picked[sk.Name]; !picked {
			out.Skipped = append(out.Skipped, sk)
		}
	}
	return out
}

// dedupeSkips keeps the first reason for each device and orders them by name.
func dedupeSkips(skips []Skip) []Skip {
	seen := map[string]bool{}
	var out []Skip
	for _, sk := range skips {
		if !seen[sk.Name] {
			seen[sk.Name] = true
			out = append(out, sk)
		}
	}
	slices.SortFunc(out, func(a, b Skip) int { return compareNatural(a.Name, b.Name) })
	return out
}
