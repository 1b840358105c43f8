package readahead

import (
	"path"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// devOf is the device number of the files on a mount: the block device for most filesystems,
// an anonymous 0:N for tmpfs, overlay, NFS and btrfs.
func devOf(m mountinfo.Entry) DevNum { return DevNum{m.Major, m.Minor} }

// mountOf finds the mount a path lives on, as df does: the mount with the longest mount point
// that contains the path, comparing whole path components (/var/lib/mysql-old is not under
// /var/lib/mysql). On a tie the later line wins, since a later mount on the same point hides
// the earlier one.
func mountOf(mounts []mountinfo.Entry, p string) (mountinfo.Entry, bool) {
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
		return mountinfo.Entry{}, false
	}
	return mounts[best], true
}
