// Package readaheadtest helps test code that uses package readahead: host fixture trees shaped
// like real machines, an in-memory Host, and real loop devices for tests that run as root.
package readaheadtest

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

// The fixtures are descriptions, built into real trees at test time: sysfs paths hold ':' (8:0,
// pci0000:00) and symlinks, which neither module zips nor every checkout can carry.
//
//go:embed testdata
var fixtures embed.FS

// Fixtures lists the fixture hosts: "vm" (virtio disk, snap loop device, zram), "nvme"
// (partitioned NVMe, whole-disk NVMe behind native multipath), "lvm" (LVM over two disks, USB
// stick, pulled USB disk), "crypt" (LVM on LUKS on an NVMe partition, btrfs).
func Fixtures() []string {
	entries, _ := fixtures.ReadDir("testdata")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Fixture builds a fixture host in a new temporary directory and returns its paths.
func Fixture(t testing.TB, name string) readahead.Paths {
	t.Helper()
	root := t.TempDir()
	if err := BuildFixture(root, name); err != nil {
		t.Fatal(err)
	}
	return readahead.Paths{Root: root}
}

// BuildFixture writes the fixture host's sys and proc/self/mountinfo under root, laid out as the
// kernel lays out sysfs: device directories under sys/devices (partitions inside their disk),
// and sys/block, sys/class/block and sys/dev/block as symlinks to them.
//
// A fixture's devices file has one line per device: its directory under /sys/devices, then
// attributes as file=value (dev=8:0, queue/read_ahead_kb=128, partition=1, dm/name=vg-mysql),
// where slaves=a,b links the named devices as slaves and this device as their holder. A device
// with hidden=1 gets no /sys/dev/block entry, as the kernel gives it no device node.
func BuildFixture(root, name string) error {
	devices, err := fs.ReadFile(fixtures, path.Join("testdata", name, "devices"))
	if err != nil {
		return fmt.Errorf("unknown fixture %q (have %v): %w", name, Fixtures(), err)
	}
	mountinfo, err := fs.ReadFile(fixtures, path.Join("testdata", name, "mountinfo"))
	if err != nil {
		return err
	}
	b := &treeBuilder{root: root, dirs: map[string]string{}, slaves: map[string][]string{}}
	for n, line := range strings.Split(string(devices), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := b.device(line); err != nil {
			return fmt.Errorf("fixture %s line %d: %w", name, n+1, err)
		}
	}
	if err := b.linkSlaves(); err != nil {
		return fmt.Errorf("fixture %s: %w", name, err)
	}
	return writeFile(filepath.Join(root, "proc", "self", "mountinfo"), string(mountinfo))
}

type treeBuilder struct {
	root   string
	dirs   map[string]string
	slaves map[string][]string
	order  []string
}

func (b *treeBuilder) device(line string) error {
	fields := strings.Fields(line)
	name := path.Base(fields[0])
	dir := filepath.Join(b.root, "sys", "devices", filepath.FromSlash(fields[0]))
	attrs := map[string]string{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("attribute %q is not file=value", f)
		}
		attrs[k] = v
		if k == "slaves" {
			b.slaves[name] = strings.Split(v, ",")
			continue
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(k)), v+"\n"); err != nil {
			return err
		}
	}
	if attrs["dev"] == "" {
		return fmt.Errorf("device %s has no dev=MAJ:MIN", name)
	}
	subdirs := []string{"holders"}
	if _, part := attrs["partition"]; !part {
		subdirs = append(subdirs, "slaves")
	}
	for _, sub := range subdirs {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	links := []string{filepath.Join(b.root, "sys", "class", "block", name)}
	if _, part := attrs["partition"]; !part {
		links = append(links, filepath.Join(b.root, "sys", "block", name))
	}
	if attrs["hidden"] != "1" {
		links = append(links, filepath.Join(b.root, "sys", "dev", "block", attrs["dev"]))
	}
	for _, l := range links {
		if err := symlink(dir, l); err != nil {
			return err
		}
	}
	b.dirs[name] = dir
	b.order = append(b.order, name)
	return nil
}

func (b *treeBuilder) linkSlaves() error {
	for _, holder := range b.order {
		for _, slave := range b.slaves[holder] {
			slaveDir, ok := b.dirs[slave]
			if !ok {
				return fmt.Errorf("%s lists slave %s, which is not described", holder, slave)
			}
			if err := symlink(slaveDir, filepath.Join(b.dirs[holder], "slaves", slave)); err != nil {
				return err
			}
			if err := symlink(b.dirs[holder], filepath.Join(slaveDir, "holders", holder)); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFile(file, content string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(content), 0o644)
}

// symlink links relatively, as sysfs does, so the tree can be moved or copied.
func symlink(target, link string) error {
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(link), target)
	if err != nil {
		return err
	}
	return os.Symlink(rel, link)
}
