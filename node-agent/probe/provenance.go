package probe

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// Inspect tells what kind of storage path is on and where it comes from: filesystem type and mount
// options from mountinfo, and for a disk the whole-disk device with its rotational flag, scheduler
// and read-ahead from sysfs. Only a path that cannot be examined at all is an error; missing
// details are left empty.
func Inspect(path string, o Options) (Kind, Provenance, error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return "", Provenance{}, ioFailure(path, err, "failed to statfs %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", Provenance{}, ioFailure(path, err, "failed to stat %s: %w", path, err)
	}
	kind := kindFromMagic(sfs.Type)
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	prov := Provenance{FilesystemType: fsTypeFromMagic(sfs.Type)}
	var source string
	if m, ok := lookupMount(o.procfsRoot(), path, major, minor); ok {
		prov.FilesystemType = m.FSType
		prov.MountPoint = m.MountPoint
		prov.MountOptions = mergeOptions(m.MountOptions, m.SuperOptions)
		source = m.Source
	}
	if kind == KindDisk {
		if dir, ok := wholeDiskDir(o.sysfsRoot(), major, minor, source); ok {
			queueAttributes(dir, &prov)
		}
	}
	return kind, prov, nil
}

func lookupMount(procRoot, path string, major, minor uint32) (mountinfo.Entry, bool) {
	entries, err := mountinfo.Read(filepath.Join(procRoot, "self", "mountinfo"))
	if err != nil {
		return mountinfo.Entry{}, false
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return findMount(entries, major, minor, path)
}

// kindFromMagic classifies by the statfs magic number: only RAM-backed filesystems are Tmpfs.
func kindFromMagic(magic int64) Kind {
	switch magic {
	case unix.TMPFS_MAGIC, unix.RAMFS_MAGIC:
		return KindTmpfs
	default:
		return KindDisk
	}
}

// fsTypeFromMagic names common filesystems for when mountinfo cannot be read.
func fsTypeFromMagic(magic int64) string {
	switch magic {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.RAMFS_MAGIC:
		return "ramfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext2/ext3/ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	default:
		return fmt.Sprintf("unknown (magic 0x%x)", magic)
	}
}

// kernelRelease is uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
