package readahead

import (
	"path"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// Mount is one line of mountinfo (proc(5)).
type Mount struct {
	// MountPoint is where the filesystem is mounted, unescaped.
	MountPoint string
	// Root is the directory of the filesystem mounted there (not "/" for bind mounts and btrfs
	// subvolumes).
	Root string
	// Dev is the st_dev of files on the mount: the block device for most filesystems, an
	// anonymous 0:N for tmpfs, overlay, NFS and btrfs.
	Dev DevNum
	// FSType is the filesystem type (ext4, xfs, tmpfs).
	FSType string
	// Source is the mount source (/dev/mapper/vg-mysql), unescaped.
	Source string
}

func readMountInfo(file string) ([]Mount, error) {
	entries, err := mountinfo.Read(file)
	if err != nil {
		return nil, err
	}
	return mountsOf(entries), nil
}

func mountsOf(entries []mountinfo.Entry) []Mount {
	mounts := make([]Mount, len(entries))
	for i, e := range entries {
		mounts[i] = Mount{MountPoint: e.MountPoint, Root: e.Root, Dev: DevNum{e.Major, e.Minor}, FSType: e.FSType, Source: e.Source}
	}
	return mounts
}

// mountOf finds the mount a path lives on, as df does: the mount with the longest mount point
// that contains the path, comparing whole path components (/var/lib/mysql-old is not under
// /var/lib/mysql). On a tie the later line wins, since a later mount on the same point hides
// the earlier one.
func mountOf(mounts []Mount, p string) (Mount, bool) {
	p = path.Clean(p)
	best, bestLen := -1, -1
	for i := range mounts {
		mp := mounts[i].MountPoint
		if !paths.Within(p, mp) || len(mp) < bestLen {
			continue
		}
		best, bestLen = i, len(mp)
	}
	if best < 0 {
		return Mount{}, false
	}
	return mounts[best], true
}
