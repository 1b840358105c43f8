package probe

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

const fixtureSys = "testdata/sysfs"

func readMountInfoFixture(t *testing.T, name string) []mountinfo.Entry {
	t.Helper()
	entries, err := mountinfo.Read(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// The fixtures are shaped like real hosts' tables; the parser itself is tested in mountinfo.
func TestMountInfoFixtures(t *testing.T) {
	entries := readMountInfoFixture(t, "mountinfo")
	if len(entries) != 7 {
		t.Fatalf("parsed %d entries, want 7", len(entries))
	}
	want := mountinfo.Entry{
		ID: 42, Major: 0, Minor: 45, Root: "/@data", MountPoint: "/srv/my data", MountOptions: "rw,relatime",
		FSType: "btrfs", Source: "/dev/mapper/vg-data", SuperOptions: "rw,space_cache=v2,subvolid=257,subvol=/@data",
	}
	if entries[5] != want {
		t.Errorf("escaped btrfs line = %+v, want %+v", entries[5], want)
	}
	if e := entries[4]; e.FSType != "xfs" || e.Major != 259 || e.Minor != 2 || e.Source != "/dev/nvme0n1p2" {
		t.Errorf("line with two optional fields = %+v", e)
	}
	if _, err := mountinfo.Read(filepath.Join("testdata", "mountinfo-bad")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a line without the separator gave %v, want an error naming line 1", err)
	}
}

func TestFindMount(t *testing.T) {
	entries := readMountInfoFixture(t, "mountinfo")
	tests := []struct {
		name         string
		major, minor uint32
		path         string
		wantPoint    string
		wantOptions  string
		found        bool
	}{
		{"root filesystem", 254, 0, "/var/tmp", "/", "rw,relatime,discard,errors=remount-ro", true},
		{"the later of two mounts on /dev/shm wins", 0, 27, "/dev/shm", "/dev/shm", "rw,relatime,size=65536k", true},
		{"longest mount point of the same device", 259, 2, "/var/lib/mysql/tmp/x", "/var/lib/mysql/tmp", "rw,noatime,attr2,inode64,logbufs=8,noquota", true},
		{"a sibling directory is not inside a mount point", 259, 2, "/var/lib/mysql2", "/var/lib/mysql/tmp", "rw,noatime,attr2,inode64,logbufs=8,noquota", true},
		{"escaped mount point", 0, 45, "/srv/my data/db", "/srv/my data", "rw,relatime,space_cache=v2,subvolid=257,subvol=/@data", true},
		{"unknown device", 8, 1, "/", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := findMount(entries, tt.major, tt.minor, tt.path)
			if ok != tt.found || m.MountPoint != tt.wantPoint {
				t.Fatalf("findMount = %q, %v, want %q, %v", m.MountPoint, ok, tt.wantPoint, tt.found)
			}
			if got := mergeOptions(m.MountOptions, m.SuperOptions); ok && got != tt.wantOptions {
				t.Errorf("options = %q, want %q", got, tt.wantOptions)
			}
		})
	}
}

func TestActiveScheduler(t *testing.T) {
	for in, want := range map[string]string{
		"none [mq-deadline] kyber bfq": "mq-deadline",
		"[none] mq-deadline":           "none",
		"mq-deadline kyber [bfq] none": "bfq",
		"none":                         "none",
		"":                             "",
		"none mq-deadline":             "",
		"[broken":                      "",
	} {
		if got := activeScheduler(in); got != want {
			t.Errorf("activeScheduler(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWholeDiskFromFixtureSysfs(t *testing.T) {
	tests := []struct {
		name         string
		major, minor uint32
		source       string
		want         Provenance
	}{
		{"virtio disk", 254, 0, "/dev/vda", Provenance{Device: "vda", Rotational: new(true), Scheduler: "mq-deadline", ReadAheadKiB: new(int64(8192))}},
		{"nvme partition maps to its disk", 259, 2, "/dev/nvme0n1p2", Provenance{Device: "nvme0n1", Rotational: new(false), Scheduler: "none", ReadAheadKiB: new(int64(128))}},
		{"sata partition maps to its disk", 8, 1, "/dev/sda1", Provenance{Device: "sda", Rotational: new(true), Scheduler: "bfq", ReadAheadKiB: new(int64(4096))}},
		{"device-mapper device", 253, 0, "/dev/mapper/vg-data", Provenance{Device: "dm-0", Rotational: new(false), Scheduler: "none", ReadAheadKiB: new(int64(131072))}},
		{"btrfs anonymous device found by its mapper source", 0, 45, "/dev/mapper/vg-data", Provenance{Device: "dm-0", Rotational: new(false), Scheduler: "none", ReadAheadKiB: new(int64(131072))}},
		{"anonymous device found by its source name", 0, 46, "/dev/sda1", Provenance{Device: "sda", Rotational: new(true), Scheduler: "bfq", ReadAheadKiB: new(int64(4096))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, ok := wholeDiskDir(fixtureSys, tt.major, tt.minor, tt.source)
			if !ok {
				t.Fatal("device not found")
			}
			var got Provenance
			queueAttributes(dir, &got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %s, want %s", describeProvenance(got), describeProvenance(tt.want))
			}
		})
	}
	for _, src := range []string{"overlay", "/dev/mapper/missing", "tmpfs"} {
		if dir, ok := wholeDiskDir(fixtureSys, 0, 99, src); ok {
			t.Errorf("source %q resolved to %s, want nothing", src, dir)
		}
	}
}

// TestWholeDiskByDevBlockIndex covers the usual path, /sys/dev/block/MAJ:MIN. The link is made at
// run time because file names with a colon do not belong in a module's testdata.
func TestWholeDiskByDevBlockIndex(t *testing.T) {
	sys := t.TempDir()
	part, err := filepath.Abs(filepath.Join(fixtureSys, "class", "block", "nvme0n1p2"))
	if err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, filepath.Join(sys, "dev", "block"))
	if err := os.Symlink(part, filepath.Join(sys, "dev", "block", "259:2")); err != nil {
		t.Fatal(err)
	}
	dir, ok := wholeDiskDir(sys, 259, 2, "")
	if !ok || filepath.Base(dir) != "nvme0n1" {
		t.Errorf("wholeDiskDir = %q, %v, want the nvme0n1 directory", dir, ok)
	}
}

// TestInspectWithFixtureRoots runs Inspect on a real directory with procfs and sysfs replaced by
// fixtures that describe the directory's real device number.
func TestInspectWithFixtureRoots(t *testing.T) {
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	number := strconv.Itoa(int(unix.Major(st.Dev))) + ":" + strconv.Itoa(int(unix.Minor(st.Dev)))
	proc, sys := t.TempDir(), t.TempDir()
	mustMkdir(t, filepath.Join(proc, "self"))
	line := "27 1 " + number + " / / rw,noatime shared:1 - ext4 /dev/vda rw,discard\n"
	if err := os.WriteFile(filepath.Join(proc, "self", "mountinfo"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	vda, _ := filepath.Abs(filepath.Join(fixtureSys, "class", "block", "vda"))
	mustMkdir(t, filepath.Join(sys, "dev", "block"))
	if err := os.Symlink(vda, filepath.Join(sys, "dev", "block", number)); err != nil {
		t.Fatal(err)
	}
	kind, prov, err := Inspect(dir, Options{SysfsRoot: sys, ProcfsRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	if kind == KindTmpfs {
		t.Skip("the temporary directory is on tmpfs, which has no device to describe")
	}
	want := Provenance{
		FilesystemType: "ext4", MountPoint: "/", MountOptions: "rw,noatime,discard",
		Device: "vda", Rotational: new(true), Scheduler: "mq-deadline", ReadAheadKiB: new(int64(8192)),
	}
	if !reflect.DeepEqual(prov, want) {
		t.Errorf("Inspect = %s, want %s", describeProvenance(prov), describeProvenance(want))
	}
}

func TestInspectMissingPath(t *testing.T) {
	if _, _, err := Inspect(filepath.Join(t.TempDir(), "missing"), DefaultOptions()); err == nil {
		t.Error("Inspect of a missing path succeeded")
	}
}

func describeProvenance(p Provenance) string {
	s := p.FilesystemType + " " + p.MountPoint + " " + p.MountOptions + " " + p.Device + " " + p.Scheduler
	if p.Rotational != nil {
		s += " rotational=" + strconv.FormatBool(*p.Rotational)
	}
	if p.ReadAheadKiB != nil {
		s += " ra=" + strconv.FormatInt(*p.ReadAheadKiB, 10)
	}
	return "{" + s + "}"
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
