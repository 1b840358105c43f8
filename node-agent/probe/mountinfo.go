package probe

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mountEntry is one line of /proc/<pid>/mountinfo (see proc(5)).
type mountEntry struct {
	Major, Minor uint32
	MountPoint   string
	MountOptions string
	FSType       string
	Source       string
	SuperOptions string
}

// parseMountInfo parses mountinfo. Lines are "id parent maj:min root mountpoint options [optional
// fields…] - fstype source superoptions"; the optional fields vary in number, hence the search for
// the "-" separator rather than fixed positions.
func parseMountInfo(r io.Reader) ([]mountEntry, error) {
	var entries []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		e, err := parseMountLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("failed to parse mountinfo line %d: %w", line, err)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read mountinfo: %w", err)
	}
	return entries, nil
}

func parseMountLine(line string) (mountEntry, error) {
	fields := strings.Fields(line)
	sep := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if len(fields) < 6 || sep < 0 || len(fields) < sep+3 {
		return mountEntry{}, fmt.Errorf("unexpected format %q", line)
	}
	major, minor, err := parseMajorMinor(fields[2])
	if err != nil {
		return mountEntry{}, err
	}
	e := mountEntry{
		Major: major, Minor: minor,
		MountPoint:   unescapeMountField(fields[4]),
		MountOptions: fields[5],
		FSType:       fields[sep+1],
		Source:       unescapeMountField(fields[sep+2]),
	}
	if len(fields) > sep+3 {
		e.SuperOptions = fields[sep+3]
	}
	return e, nil
}

func parseMajorMinor(s string) (major, minor uint32, err error) {
	a, b, ok := strings.Cut(s, ":")
	ma, err1 := strconv.ParseUint(a, 10, 32)
	mi, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("bad device number %q", s)
	}
	return uint32(ma), uint32(mi), nil
}

// unescapeMountField undoes the kernel's octal escaping of space, tab, newline and backslash
// ("\040" for a space) in mount points and sources.
func unescapeMountField(s string) string {
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

// findMount picks the mount a path lives on: among the entries with the path's device number, the
// one with the longest mount point that contains the path, the later one on a tie because a later
// mount on the same point hides the earlier (a /dev/shm mounted over /dev/shm, as on some hosts).
// When no mount point contains the path (it was reached through a bind mount from elsewhere), the
// last entry with the device number still tells the filesystem.
func findMount(entries []mountEntry, major, minor uint32, path string) (mountEntry, bool) {
	best, bestLen, found := mountEntry{}, -1, false
	for _, e := range entries {
		if e.Major != major || e.Minor != minor {
			continue
		}
		l := -1
		if pathWithin(path, e.MountPoint) {
			l = len(e.MountPoint)
		}
		if !found || l >= bestLen {
			best, bestLen, found = e, l, true
		}
	}
	return best, found
}

func pathWithin(path, mountPoint string) bool {
	if mountPoint == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == mountPoint || strings.HasPrefix(path, mountPoint+"/")
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
