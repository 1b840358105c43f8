package readahead

import "github.com/dbtune/scratch-operator/node-agent/mountinfo"

// devOf is the device number of the files on a mount: the block device for most filesystems,
// an anonymous 0:N for tmpfs, overlay, NFS and btrfs.
func devOf(m mountinfo.Entry) DevNum { return DevNum{m.Major, m.Minor} }
