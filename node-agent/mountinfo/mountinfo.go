// Package mountinfo reads the kernel's mount table, /proc/<pid>/mountinfo (see proc(5)), for the
// node agent's probe (which filesystem a target is on) and read-ahead selection (which device a
// mount path is on).
package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/dbtune/scratch-operator/api/paths"
)

// Entry is one line of mountinfo.
type Entry struct {
	// ID is the mount's unique ID, the one statx(2) returns as stx_mnt_id for files on it.
	ID uint64
	// Major and Minor are the st_dev of files on the mount: the block device for most
	// filesystems, an anonymous 0:N for tmpfs, overlay, NFS and btrfs.
	Major, Minor uint32
	// Root is the directory of the filesystem mounted there (not "/" for bind mounts and btrfs
	// subvolumes), unescaped.
	Root string
	// MountPoint is where the filesystem is mounted, unescaped.
	MountPoint string
	// MountOptions are the per-mount options (rw,nosuid,relatime).
	MountOptions string
	// FSType is the filesystem type (ext4, xfs, tmpfs).
	FSType string
	// Source is the mount source (/dev/mapper/vg-mysql), unescaped.
	Source string
	// SuperOptions are the superblock options (size=… for tmpfs).
	SuperOptions string
}

// Read parses the mountinfo file at path.
func Read(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open the mount table: %w", err)
	}
	defer func() { _ = f.Close() }()
	entries, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("failed to read the mount table %s: %w", path, err)
	}
	return entries, nil
}

// Parse parses lines of the form
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// The optional fields before "-" (shared:N, master:N, propagate_from:N, unbindable) vary in
// number, so the fields after them are found from the separator, not by position. Blank lines are
// skipped; any other line that does not parse is an error naming its number.
func Parse(r io.Reader) ([]Entry, error) {
	var entries []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		e, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return entries, nil
}

func parseLine(line string) (Entry, error) {
	fields := strings.Fields(line)
	sep := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || len(fields) < sep+3 {
		return Entry{}, fmt.Errorf("malformed mountinfo line %q", line)
	}
	id, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("bad mount ID %q in the mount table", fields[0])
	}
	major, minor, err := parseDevice(fields[2])
	if err != nil {
		return Entry{}, err
	}
	e := Entry{
		ID: id, Major: major, Minor: minor,
		Root:         unescape(fields[3]),
		MountPoint:   unescape(fields[4]),
		MountOptions: fields[5],
		FSType:       fields[sep+1],
		Source:       unescape(fields[sep+2]),
	}
	if len(fields) > sep+3 {
		e.SuperOptions = fields[sep+3]
	}
	return e, nil
}

func parseDevice(s string) (major, minor uint32, err error) {
	a, b, ok := strings.Cut(s, ":")
	ma, err1 := strconv.ParseUint(a, 10, 32)
	mi, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("bad device number %q in the mount table", s)
	}
	return uint32(ma), uint32(mi), nil
}

// unescape undoes the kernel's octal escaping of space, tab, newline and backslash in paths
// ("/srv/my\040data").
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			v, _ := strconv.ParseUint(s[i+1:i+4], 8, 8)
			b.WriteByte(byte(v))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	for _, c := range s {
		if c < '0' || c > '7' {
			return false
		}
	}
	return len(s) == 3
}

// Containing finds the mount a path lives on, as df does: the entry with the longest mount point
// that contains the path, comparing whole path components (/var/lib/mysql-old is not under
// /var/lib/mysql). On a tie the later entry wins, since a later mount on the same point hides the
// earlier one (a /dev/shm mounted over /dev/shm, as on some hosts).
func Containing(entries []Entry, p string) (Entry, bool) {
	p = path.Clean(p)
	best, bestLen := -1, -1
	for i := range entries {
		mp := entries[i].MountPoint
		if !paths.Within(p, mp) || len(mp) < bestLen {
			continue
		}
		best, bestLen = i, len(mp)
	}
	if best < 0 {
		return Entry{}, false
	}
	return entries[best], true
}
