package probe

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// wholeDiskDir finds the sysfs directory of the whole disk under a filesystem. It starts from the
// filesystem's device number; filesystems with an anonymous device number (btrfs, and anything
// with major 0) are found through their mount source instead. A partition's directory sits inside
// its disk's, and only the disk has the queue attributes we report, so a partition resolves to its
// parent.
func wholeDiskDir(sysRoot string, major, minor uint32, source string) (string, bool) {
	dir, ok := "", false
	if major != 0 {
		dir, ok = deviceDirByNumber(sysRoot, major, minor)
	}
	if !ok {
		dir, ok = deviceDirBySource(sysRoot, source)
	}
	if !ok {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir)
	}
	return dir, true
}

// deviceDirByNumber resolves /sys/dev/block/MAJ:MIN, falling back to a search of the dev files under
// /sys/class/block for sysfs trees without the dev/block index.
func deviceDirByNumber(sysRoot string, major, minor uint32) (string, bool) {
	number := strconv.FormatUint(uint64(major), 10) + ":" + strconv.FormatUint(uint64(minor), 10)
	if dir, err := filepath.EvalSymlinks(filepath.Join(sysRoot, "dev", "block", number)); err == nil {
		return dir, true
	}
	classDir := filepath.Join(sysRoot, "class", "block")
	entries, _ := os.ReadDir(classDir)
	for _, e := range entries {
		if readTrimmed(filepath.Join(classDir, e.Name(), "dev")) == number {
			return resolve(filepath.Join(classDir, e.Name()))
		}
	}
	return "", false
}

// deviceDirBySource maps a mount source such as /dev/sda2 or /dev/mapper/vg-data to its sysfs
// directory; device-mapper names are matched against each dm device's dm/name.
func deviceDirBySource(sysRoot, source string) (string, bool) {
	if !strings.HasPrefix(source, "/dev/") {
		return "", false
	}
	classDir := filepath.Join(sysRoot, "class", "block")
	name := filepath.Base(source)
	if dir, ok := resolve(filepath.Join(classDir, name)); ok {
		return dir, true
	}
	if !strings.HasPrefix(source, "/dev/mapper/") {
		return "", false
	}
	matches, _ := filepath.Glob(filepath.Join(classDir, "dm-*"))
	for _, m := range matches {
		if readTrimmed(filepath.Join(m, "dm", "name")) == name {
			return resolve(m)
		}
	}
	return "", false
}

// queueAttributes reads the attributes of a whole-disk directory that tell how it was measured.
// Missing or unreadable attributes are left unset: provenance is best effort, not a reason to fail.
func queueAttributes(diskDir string, p *Provenance) {
	p.Device = filepath.Base(diskDir)
	queue := filepath.Join(diskDir, "queue")
	switch readTrimmed(filepath.Join(queue, "rotational")) {
	case "0":
		p.Rotational = new(false)
	case "1":
		p.Rotational = new(true)
	}
	p.Scheduler = activeScheduler(readTrimmed(filepath.Join(queue, "scheduler")))
	if ra, err := strconv.ParseInt(readTrimmed(filepath.Join(queue, "read_ahead_kb")), 10, 64); err == nil {
		p.ReadAheadKiB = &ra
	}
}

// activeScheduler returns the bracketed entry of queue/scheduler ("none [mq-deadline] kyber" →
// "mq-deadline"). A device with a single choice may print it without brackets ("none").
func activeScheduler(s string) string {
	if _, rest, ok := strings.Cut(s, "["); ok {
		if name, _, ok := strings.Cut(rest, "]"); ok {
			return name
		}
		return ""
	}
	if f := strings.Fields(s); len(f) == 1 {
		return f[0]
	}
	return ""
}

func resolve(path string) (string, bool) {
	dir, err := filepath.EvalSymlinks(path)
	return dir, err == nil
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
