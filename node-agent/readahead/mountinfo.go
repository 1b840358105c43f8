package readahead

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
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
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("failed to open the mount table: %w", err)
	}
	defer func() { _ = f.Close() }()
	mounts, err := parseMountInfo(f)
	if err != nil {
		return nil, fmt.Errorf("failed to read the mount table %s: %w", file, err)
	}
	return mounts, nil
}

// parseMountInfo parses lines of the form
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// The optional fields before "-" (shared:N, master:N, propagate_from:N, unbindable) vary in
// number, so the fields after them are found from the separator, not by position.
func parseMountInfo(r io.Reader) ([]Mount, error) {
	var mounts []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		m, err := parseMountLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		mounts = append(mounts, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return mounts, nil
}

func parseMountLine(line string) (Mount, error) {
	fields := strings.Fields(line)
	sep := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || len(fields) < sep+3 {
		return Mount{}, fmt.Errorf("malformed mountinfo line %q", line)
	}
	dev, err := ParseDevNum(fields[2])
	if err != nil {
		return Mount{}, err
	}
	return Mount{
		MountPoint: unescapeOctal(fields[4]),
		Root:       unescapeOctal(fields[3]),
		Dev:        dev,
		FSType:     fields[sep+1],
		Source:     unescapeOctal(fields[sep+2]),
	}, nil
}

// unescapeOctal undoes the kernel's escaping of space, tab, newline and backslash in mountinfo
// paths ("/srv/my\040data").
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
		if !within(p, mp) || len(mp) < bestLen {
			continue
		}
		best, bestLen = i, len(mp)
	}
	if best < 0 {
		return Mount{}, false
	}
	return mounts[best], true
}

func within(p, mountPoint string) bool {
	if mountPoint == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == mountPoint || strings.HasPrefix(p, mountPoint+"/")
}
