package mountinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	table := `22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw,errors=remount-ro

36 22 0:30 / /dev/shm rw,nosuid,nodev shared:2 - tmpfs tmpfs rw,size=65536k
40 22 8:17 /data /srv/my\040data rw,noatime master:3 propagate_from:4 - xfs /dev/sdb1 rw,attr2
41 22 0:44 / /mnt/odd rw - fuse.sshfs host:/x\134y rw
`
	got, err := Parse(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{ID: 22, Major: 253, Minor: 1, Root: "/", MountPoint: "/", MountOptions: "rw,relatime", FSType: "ext4", Source: "/dev/mapper/vg-root", SuperOptions: "rw,errors=remount-ro"},
		{ID: 36, Major: 0, Minor: 30, Root: "/", MountPoint: "/dev/shm", MountOptions: "rw,nosuid,nodev", FSType: "tmpfs", Source: "tmpfs", SuperOptions: "rw,size=65536k"},
		{ID: 40, Major: 8, Minor: 17, Root: "/data", MountPoint: "/srv/my data", MountOptions: "rw,noatime", FSType: "xfs", Source: "/dev/sdb1", SuperOptions: "rw,attr2"},
		{ID: 41, Major: 0, Minor: 44, Root: "/", MountPoint: "/mnt/odd", MountOptions: "rw", FSType: "fuse.sshfs", Source: `host:/x\y`, SuperOptions: "rw"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	for _, table := range []string{
		"not a mount table\n",
		"22 1 253:1 / / rw,relatime shared:1 ext4 /dev/root rw\n", // no separator
		"22 1 253:1 / / rw,relatime - ext4\n",                     // no source
		"22 1 x:1 / / rw - ext4 /dev/root rw\n",                   // bad device number
		"x 1 253:1 / / rw - ext4 /dev/root rw\n",                  // bad mount ID
	} {
		if _, err := Parse(strings.NewReader("36 22 0:30 / /dev/shm rw - tmpfs tmpfs rw\n" + table)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("Parse(%q) = %v, want an error naming line 2", table, err)
		}
	}
}

func TestUnescapeLeavesNonOctalAlone(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:       "/plain",
		`/a\040b`:      "/a b",
		`/tab\011x`:    "/tab\tx",
		`/nl\012`:      "/nl\n",
		`/bs\134`:      `/bs\`,
		`/short\04`:    `/short\04`,
		`/notoctal\08`: `/notoctal\08`,
		`/end\`:        `/end\`,
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRead(t *testing.T) {
	if _, err := Read(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "failed to open the mount table") {
		t.Errorf("Read(missing) = %v, want an error saying the mount table could not be opened", err)
	}
	p := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(p, []byte("36 22 0:30 / /dev/shm rw - tmpfs tmpfs rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(p); err != nil || len(got) != 1 || got[0].MountPoint != "/dev/shm" {
		t.Errorf("Read = %+v, %v; want the one /dev/shm entry", got, err)
	}
	if got, err := Read("/proc/self/mountinfo"); err != nil || len(got) == 0 {
		t.Errorf("Read(/proc/self/mountinfo) = %d entries, %v; want this process's mounts", len(got), err)
	}
}

func TestContaining(t *testing.T) {
	const table = `29 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,discard
412 29 252:1 /srv/data /srv/my\040data rw,relatime shared:1 master:7 propagate_from:2 - ext4 /dev/vda1 rw
101 29 253:1 / /var/lib/mysql rw,noatime - ext4 /dev/mapper/vg-mysql rw
30 24 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64
31 24 0:26 / /dev/shm rw,nosuid,nodev - tmpfs shm rw
40 29 0:45 /@srv /srv/back\134slash rw unbindable - btrfs /dev/mapper/vg0-srv rw,subvol=/@srv
`
	entries, err := Parse(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	got := entries
	for path, wantSource := range map[string]string{
		"/var/lib/mysql":       "/dev/mapper/vg-mysql",
		"/var/lib/mysql/":      "/dev/mapper/vg-mysql",
		"/var/lib/mysql/a/../": "/dev/mapper/vg-mysql",
		"/var/lib/mysqlx":      "/dev/vda1",
		"/dev/shm/x":           "shm", // the later of two stacked mounts is the visible one
		"/srv/my data/x":       "/dev/vda1",
		"/":                    "/dev/vda1",
	} {
		m, ok := Containing(got, path)
		if !ok || m.Source != wantSource {
			t.Errorf("Containing(%q) = %+v, %t; want the mount from %s", path, m, ok, wantSource)
		}
	}
	if m, ok := Containing(got[2:3], "/etc"); ok {
		t.Errorf("Containing(/etc) without a root mount = %+v, want none", m)
	}
}
