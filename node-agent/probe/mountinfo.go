package probe

import (
	"strings"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// findMount picks the mount a path lives on: among the entries with the path's device number, the
// one with the longest mount point that contains the path, the later one on a tie because a later
// mount on the same point hides the earlier (a /dev/shm mounted over /dev/shm, as on some hosts).
// When no mount point contains the path (it was reached through a bind mount from elsewhere), the
// last entry with the device number still tells the filesystem.
func findMount(entries []mountinfo.Entry, major, minor uint32, path string) (mountinfo.Entry, bool) {
	best, bestLen, found := mountinfo.Entry{}, -1, false
	for _, e := range entries {
		if e.Major != major || e.Minor != minor {
			continue
		}
		l := -1
		if paths.Within(path, e.MountPoint) {
			l = len(e.MountPoint)
		}
		if !found || l >= bestLen {
			best, bestLen, found = e, l, true
		}
	}
	return best, found
}

// mergeOptions lists the per-mount options, then the superblock options not already among them:
// both matter (ro may come from either, size= only from the superblock).
func mergeOptions(mount, super string) string {
	seen := map[string]bool{}
	var out []string
	for _, o := range strings.Split(mount+","+super, ",") {
		if o != "" && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}
