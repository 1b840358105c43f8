package probe

import (
	"strings"

	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// findMount picks the mount a path lives on among the entries with the path's device number: the
// one mountinfo.Containing finds. When no mount point contains the path (it was reached through a
// bind mount from elsewhere), the last entry with the device number still tells the filesystem.
func findMount(entries []mountinfo.Entry, major, minor uint32, path string) (mountinfo.Entry, bool) {
	var same []mountinfo.Entry
	for _, e := range entries {
		if e.Major == major && e.Minor == minor {
			same = append(same, e)
		}
	}
	if m, ok := mountinfo.Containing(same, path); ok {
		return m, true
	}
	if len(same) == 0 {
		return mountinfo.Entry{}, false
	}
	return same[len(same)-1], true
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
