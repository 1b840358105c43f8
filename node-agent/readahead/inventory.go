package readahead

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// Device numbers the kernel fixes (include/uapi/linux/major.h); other drivers' majors are dynamic.
const (
	ramdiskMajor = 1
	loopMajor    = 7
)

// Paths says where the host's sysfs, device nodes and mount table are visible to this process.
type Paths struct {
	// Root is the host's "/": "/" when the agent runs on the host, the mount point of a
	// hostPath "/" volume in a pod, a fixture tree in tests. Empty means "/".
	Root string
	// MountInfo is the mount table that mount paths are resolved with. Empty means
	// <Root>/proc/self/mountinfo, which lists the mounts of this process's mount namespace; a
	// pod that must see the host's mounts runs with hostPID and sets /proc/1/mountinfo.
	MountInfo string
}

func (p Paths) root() string {
	if p.Root == "" {
		return "/"
	}
	return p.Root
}

// SysDir is <Root>/sys.
func (p Paths) SysDir() string { return filepath.Join(p.root(), "sys") }

// DevDir is <Root>/dev.
func (p Paths) DevDir() string { return filepath.Join(p.root(), "dev") }

// MountInfoPath is the mount table to read.
func (p Paths) MountInfoPath() string {
	if p.MountInfo != "" {
		return p.MountInfo
	}
	return filepath.Join(p.root(), "proc", "self", "mountinfo")
}

// Kind is what sort of block device a Device is.
type Kind string

// Device kinds, named as lsblk names them.
const (
	KindDisk      Kind = "disk"
	KindPartition Kind = "part"
	KindDM        Kind = "dm"
	KindLoop      Kind = "loop"
	// KindRAM is a device backed by memory: zram or the ram disk driver (brd).
	KindRAM Kind = "ram"
)

// Device is one block device as sysfs describes it.
type Device struct {
	// Name is the kernel name (sda, nvme0n1p2, dm-1).
	Name string
	// Dev is the device number.
	Dev DevNum
	// Kind is disk, part, dm, loop or ram.
	Kind Kind
	// Parent is the whole disk of a partition.
	Parent string
	// DMName is the device-mapper name (vg-mysql, the name under /dev/mapper) of a dm device.
	DMName string
	// Slaves are the devices this one is built on (the slaves/ directory), in name order.
	Slaves []string
	// Removable is the removable attribute (of the disk, for a partition).
	Removable bool
	// Hidden marks a device the kernel gives no device node, like an NVMe multipath path.
	Hidden bool
	// ReadOnly is the ro attribute.
	ReadOnly bool
	// Rotational is queue/rotational (of the disk, for a partition).
	Rotational bool
	// SizeBytes is the size (the size attribute counts 512-byte sectors whatever the block size).
	SizeBytes int64
	// ReadAheadKiB is queue/read_ahead_kb (of the disk, for a partition, since they share it),
	// or -1 when sysfs does not show it.
	ReadAheadKiB int64
}

// ID returns the device's name and number.
func (d *Device) ID() DeviceID { return DeviceID{Name: d.Name, Dev: d.Dev} }

// Inventory is a snapshot of a node's block devices and mounts. Selection works on the snapshot,
// so one reconcile sees one consistent view even while devices come and go.
type Inventory struct {
	// Devices are all block devices, partitions included, in natural name order (sda, sda2,
	// sda10, sdb).
	Devices []Device
	// Mounts are the mountinfo entries in file order.
	Mounts []mountinfo.Entry

	mountsErr error
	byName    map[string]int
	byDev     map[DevNum]string
	byDMName  map[string]string
}

// NewInventory builds an inventory from devices and mounts already known, for callers that fake
// the host. Every device that is not hidden is reachable by its number.
func NewInventory(devices []Device, mounts []mountinfo.Entry) *Inventory {
	index := map[DevNum]string{}
	for i := range devices {
		if !devices[i].Hidden {
			index[devices[i].Dev] = devices[i].Name
		}
	}
	return newInventory(devices, mounts, index, nil)
}

func newInventory(devices []Device, mounts []mountinfo.Entry, index map[DevNum]string, mountsErr error) *Inventory {
	devices = slices.Clone(devices)
	slices.SortFunc(devices, func(a, b Device) int { return compareNatural(a.Name, b.Name) })
	inv := &Inventory{
		Devices:   devices,
		Mounts:    mounts,
		mountsErr: mountsErr,
		byName:    make(map[string]int, len(devices)),
		byDev:     index,
		byDMName:  map[string]string{},
	}
	for i := range devices {
		inv.byName[devices[i].Name] = i
		if devices[i].DMName != "" {
			inv.byDMName[devices[i].DMName] = devices[i].Name
		}
	}
	return inv
}

// Device returns the device with a kernel name.
func (inv *Inventory) Device(name string) (*Device, bool) {
	i, ok := inv.byName[name]
	if !ok {
		return nil, false
	}
	return &inv.Devices[i], true
}

// DeviceByNumber returns the device /sys/dev/block lists under a number.
func (inv *Inventory) DeviceByNumber(dev DevNum) (*Device, bool) {
	name, ok := inv.byDev[dev]
	if !ok {
		return nil, false
	}
	return inv.Device(name)
}

// DeviceByDMName returns the dm device with a device-mapper name (/dev/mapper/<name>).
func (inv *Inventory) DeviceByDMName(name string) (*Device, bool) {
	kernelName, ok := inv.byDMName[name]
	if !ok {
		return nil, false
	}
	return inv.Device(kernelName)
}

// WholeDevice returns the device whose read-ahead d uses: its disk for a partition, d otherwise.
func (inv *Inventory) WholeDevice(d *Device) (*Device, bool) {
	if d.Kind != KindPartition {
		return d, true
	}
	return inv.Device(d.Parent)
}

// ReadInventory reads the block devices from sysfs (/sys/class/block and /sys/block, indexed by
// /sys/dev/block) and the mounts from mountinfo. A device that disappears while it is being read
// is left out; an unreadable mount table only fails the mount paths that need it.
func ReadInventory(p Paths) (*Inventory, error) {
	sysDir := p.SysDir()
	devices, err := readDevices(sysDir)
	if err != nil {
		return nil, err
	}
	index, err := readDevIndex(filepath.Join(sysDir, "dev", "block"))
	if err != nil {
		return nil, err
	}
	mounts, mountsErr := mountinfo.Read(p.MountInfoPath())
	return newInventory(devices, mounts, index, mountsErr), nil
}

func readDevices(sysDir string) ([]Device, error) {
	names := map[string]bool{}
	for _, dir := range []string{filepath.Join(sysDir, "class", "block"), filepath.Join(sysDir, "block")} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("failed to list block devices in %s: %w", dir, err)
		}
		for _, e := range entries {
			names[e.Name()] = true
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("failed to find block devices: neither %s/class/block nor %s/block lists any (is sysfs mounted?)", sysDir, sysDir)
	}
	devices := make([]Device, 0, len(names))
	for name := range names {
		d, err := readDevice(sysDir, name)
		if vanished(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		devices = append(devices, d)
	}
	inheritFromDisks(devices)
	return devices, nil
}

// vanished says a sysfs read failed because the device went away during the scan: its files are
// gone (ENOENT), or were removed while open (ENODEV).
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV)
}

func deviceDir(sysDir, name string) string {
	dir := filepath.Join(sysDir, "class", "block", name)
	if _, err := os.Lstat(dir); err == nil {
		return dir
	}
	return filepath.Join(sysDir, "block", name)
}

func readDevice(sysDir, name string) (Device, error) {
	dir := deviceDir(sysDir, name)
	raw, err := os.ReadFile(filepath.Join(dir, "dev"))
	if err != nil {
		return Device{}, fmt.Errorf("failed to read %s/dev: %w", dir, err)
	}
	dev, err := ParseDevNum(string(raw))
	if err != nil {
		return Device{}, fmt.Errorf("failed to read %s/dev: %w", dir, err)
	}
	a := attrReader{dir: dir}
	d := Device{Name: name, Dev: dev, ReadAheadKiB: -1}
	d.SizeBytes = a.int("size", 0) * 512
	d.ReadOnly = a.bool("ro")
	switch {
	case a.exists("partition"):
		d.Kind = KindPartition
		d.Parent, err = partitionParent(dir)
		if err != nil {
			return Device{}, err
		}
	case a.exists("dm"):
		d.Kind = KindDM
		d.DMName = a.string("dm/name")
	case dev.Major == loopMajor:
		d.Kind = KindLoop
	case dev.Major == ramdiskMajor || strings.HasPrefix(name, "zram"):
		d.Kind = KindRAM
	default:
		d.Kind = KindDisk
	}
	if d.Kind != KindPartition {
		d.Removable = a.bool("removable")
		d.Hidden = a.bool("hidden")
		d.Rotational = a.bool("queue/rotational")
		d.ReadAheadKiB = a.int("queue/read_ahead_kb", -1)
		d.Slaves = a.names("slaves")
	}
	if a.err != nil {
		return Device{}, a.err
	}
	return d, nil
}

// partitionParent finds a partition's disk the way the kernel lays it out: the partition's
// directory sits inside the disk's (.../block/sda/sda2).
func partitionParent(dir string) (string, error) {
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("failed to resolve %s: %w", dir, err)
	}
	parent := filepath.Dir(resolved)
	if _, err := os.Stat(filepath.Join(parent, "dev")); err != nil {
		return "", fmt.Errorf("failed to find the disk of partition %s: %s is not a block device directory: %w", dir, parent, err)
	}
	return filepath.Base(parent), nil
}

// inheritFromDisks copies to each partition what belongs to its disk: sysfs shows it only there.
func inheritFromDisks(devices []Device) {
	byName := make(map[string]*Device, len(devices))
	for i := range devices {
		byName[devices[i].Name] = &devices[i]
	}
	for i := range devices {
		d := &devices[i]
		disk, ok := byName[d.Parent]
		if d.Kind != KindPartition || !ok {
			continue
		}
		d.Removable, d.Hidden, d.Rotational, d.ReadAheadKiB = disk.Removable, disk.Hidden, disk.Rotational, disk.ReadAheadKiB
	}
}

// readDevIndex reads /sys/dev/block, whose entries MAJ:MIN link to the device directories.
func readDevIndex(dir string) (map[DevNum]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to list %s: %w", dir, err)
	}
	index := make(map[DevNum]string, len(entries))
	for _, e := range entries {
		dev, err := ParseDevNum(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		index[dev] = filepath.Base(target)
	}
	return index, nil
}

// attrReader reads sysfs attributes of one device directory and keeps the first unexpected
// error, so readDevice can read a dozen attributes and check once. A missing attribute is not an
// error: older kernels and some drivers lack some of them.
type attrReader struct {
	dir string
	err error
}

func (a *attrReader) read(name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(a.dir, name))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && a.err == nil {
			a.err = fmt.Errorf("failed to read %s: %w", filepath.Join(a.dir, name), err)
		}
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func (a *attrReader) string(name string) string {
	s, _ := a.read(name)
	return s
}

func (a *attrReader) int(name string, missing int64) int64 {
	s, ok := a.read(name)
	if !ok {
		return missing
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("failed to parse %s: %w", filepath.Join(a.dir, name), err)
	}
	return v
}

func (a *attrReader) bool(name string) bool {
	s, _ := a.read(name)
	return s == "1"
}

func (a *attrReader) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(a.dir, name))
	return err == nil
}

func (a *attrReader) names(name string) []string {
	entries, err := os.ReadDir(filepath.Join(a.dir, name))
	if err != nil || len(entries) == 0 {
		return nil
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.SortFunc(out, compareNatural)
	return out
}

// compareNatural orders names as people number devices: runs of digits compare as numbers, so
// dm-2 comes before dm-10 and sda2 before sda10.
func compareNatural(a, b string) int {
	x, y := a, b
	for x != "" && y != "" {
		if isDigit(x[0]) && isDigit(y[0]) {
			i, j := digitRun(x), digitRun(y)
			nx, ny := strings.TrimLeft(x[:i], "0"), strings.TrimLeft(y[:j], "0")
			if c := cmp.Compare(len(nx), len(ny)); c != 0 {
				return c
			}
			if c := strings.Compare(nx, ny); c != 0 {
				return c
			}
			x, y = x[i:], y[j:]
			continue
		}
		if c := cmp.Compare(x[0], y[0]); c != 0 {
			return c
		}
		x, y = x[1:], y[1:]
	}
	if c := cmp.Compare(len(x), len(y)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digitRun(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
