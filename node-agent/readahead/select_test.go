package readahead_test

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

// outcome is a Selection in words: "dm-1 <- mount /var/lib/mysql", "sdc: removable media", and
// the problems' messages, which users read in conditions.
type outcome struct {
	Devices  []string
	Skipped  []string
	Problems []string
}

func outcomeOf(s *readahead.Selection) outcome {
	var o outcome
	for i := range s.Devices {
		o.Devices = append(o.Devices, s.Devices[i].Name+" <- "+strings.Join(s.Devices[i].Via, ", "))
	}
	for _, sk := range s.Skipped {
		o.Skipped = append(o.Skipped, sk.Name+": "+sk.Reason)
	}
	for _, p := range s.Problems {
		o.Problems = append(o.Problems, p.Error())
	}
	return o
}

func names(globs ...string) []v1alpha1.DeviceGlob {
	out := make([]v1alpha1.DeviceGlob, 0, len(globs))
	for _, g := range globs {
		out = append(out, v1alpha1.DeviceGlob(g))
	}
	return out
}

func mounts(paths ...string) []v1alpha1.AbsolutePath {
	out := make([]v1alpha1.AbsolutePath, 0, len(paths))
	for _, p := range paths {
		out = append(out, v1alpha1.AbsolutePath(p))
	}
	return out
}

func TestSelect(t *testing.T) {
	const (
		device     = v1alpha1.DeviceMapperDevice
		underlying = v1alpha1.DeviceMapperUnderlying
		both       = v1alpha1.DeviceMapperBoth
	)
	const loopReason = `a loop device, which only a name pattern starting with "loop" selects`
	tests := []struct {
		name    string
		fixture string
		sel     v1alpha1.DeviceSelector
		want    outcome
		wantIs  []error // errors the problems must match
	}{
		// LVM: vg-mysql (dm-1) spans sda2 and sdb1.
		{
			name: "mount on LVM, default resolution is the dm device", fixture: "lvm",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql")},
			want: outcome{Devices: []string{"dm-1 <- mount /var/lib/mysql"}},
		},
		{
			name: "mount on LVM, Underlying is the disks under both physical volumes", fixture: "lvm",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql"), DeviceMapper: underlying},
			want: outcome{Devices: []string{"sda <- mount /var/lib/mysql", "sdb <- mount /var/lib/mysql"}},
		},
		{
			name: "mount on LVM, Both", fixture: "lvm",
			sel: v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql"), DeviceMapper: both},
			want: outcome{Devices: []string{
				"dm-1 <- mount /var/lib/mysql", "sda <- mount /var/lib/mysql", "sdb <- mount /var/lib/mysql",
			}},
		},
		{
			name: "a path below a mount point resolves to that mount", fixture: "lvm",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql/data/ibdata1")},
			want: outcome{Devices: []string{"dm-1 <- mount /var/lib/mysql/data/ibdata1"}},
		},
		{
			name: "mount points match whole path components", fixture: "lvm",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql-old")},
			want: outcome{Devices: []string{"dm-0 <- mount /var/lib/mysql-old"}},
		},
		{
			name: "a mount on a partition selects its disk", fixture: "lvm",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/boot")},
			want: outcome{Devices: []string{"sda <- mount /boot"}},
		},
		{
			name: "tmpfs stacked on the data directory", fixture: "lvm",
			sel: v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql/tmp")},
			want: outcome{Problems: []string{
				"mount path /var/lib/mysql/tmp selects no device: it is on /var/lib/mysql/tmp, a tmpfs filesystem (from tmpfs) with no block device",
			}},
			wantIs: []error{readahead.ErrNotBlockDevice},
		},
		{
			name: "a USB stick is never tuned, even by mount path", fixture: "lvm",
			sel: v1alpha1.DeviceSelector{MountPaths: mounts("/media/usb")},
			want: outcome{
				Skipped: []string{"sdc: removable media"},
				Problems: []string{
					"mount path /media/usb selects no device: it is on sdc1 (mounted on /media/usb), and sdc is removable media",
				},
			},
			wantIs: []error{readahead.ErrNotEligible},
		},
		{
			name: "a mount whose device was pulled out", fixture: "lvm",
			sel: v1alpha1.DeviceSelector{MountPaths: mounts("/media/backup")},
			want: outcome{Problems: []string{
				"mount path /media/backup selects no device: it is on /media/backup (8:49 from /dev/sdd1), which /sys/dev/block no longer lists: the device has gone away",
			}},
			wantIs: []error{readahead.ErrDeviceNotFound},
		},
		{
			name: "a wildcard skips removable media quietly", fixture: "lvm",
			sel: v1alpha1.DeviceSelector{Names: names("sd?")},
			want: outcome{
				Devices: []string{`sda <- name "sd?"`, `sdb <- name "sd?"`},
				Skipped: []string{"sdc: removable media"},
			},
		},
		{
			name: "a pattern that reaches only removable media is a problem", fixture: "lvm",
			sel: v1alpha1.DeviceSelector{Names: names("sdc*")},
			want: outcome{
				Skipped:  []string{"sdc: removable media"},
				Problems: []string{`name pattern "sdc*" matches no eligible block device: sdc is removable media`},
			},
			wantIs: []error{readahead.ErrNoMatch},
		},
		{
			name: "a pattern that matches nothing", fixture: "lvm",
			sel:    v1alpha1.DeviceSelector{Names: names("nvme*n1")},
			want:   outcome{Problems: []string{`name pattern "nvme*n1" matches no block device on this node`}},
			wantIs: []error{readahead.ErrNoMatch},
		},
		{
			name: "a malformed pattern", fixture: "lvm",
			sel:    v1alpha1.DeviceSelector{Names: names("sd[a-")},
			want:   outcome{Problems: []string{`name pattern "sd[a-" is malformed: syntax error in pattern`}},
			wantIs: []error{readahead.ErrNoMatch, path.ErrBadPattern},
		},
		{
			name: "dm glob, Underlying, disks listed once", fixture: "lvm",
			sel:  v1alpha1.DeviceSelector{Names: names("dm-*"), DeviceMapper: underlying},
			want: outcome{Devices: []string{`sda <- name "dm-*"`, `sdb <- name "dm-*"`}},
		},
		{
			name: "names and mount paths together say everything that selected a device", fixture: "lvm",
			sel: v1alpha1.DeviceSelector{Names: names("dm-1", "sdb1"), MountPaths: mounts("/var/lib/mysql", "/boot"), DeviceMapper: both},
			want: outcome{Devices: []string{
				`dm-1 <- name "dm-1", mount /var/lib/mysql`,
				`sda <- name "dm-1", mount /var/lib/mysql, mount /boot`,
				`sdb <- name "dm-1", name "sdb1", mount /var/lib/mysql`,
			}},
		},

		// dm-crypt with LVM inside: vg0-mysql (dm-2) on luks (dm-0) on nvme0n1p3.
		{
			name: "two dm levels, Underlying walks down to the disk", fixture: "crypt",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql"), DeviceMapper: underlying},
			want: outcome{Devices: []string{"nvme0n1 <- mount /var/lib/mysql"}},
		},
		{
			name: "two dm levels, Both leaves the LUKS layer alone", fixture: "crypt",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql"), DeviceMapper: both},
			want: outcome{Devices: []string{"dm-2 <- mount /var/lib/mysql", "nvme0n1 <- mount /var/lib/mysql"}},
		},
		{
			name: "btrfs reports an anonymous device number; its source names the device", fixture: "crypt",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/srv/www")},
			want: outcome{Devices: []string{"dm-3 <- mount /srv/www"}},
		},
		{
			name: "dm glob, Device", fixture: "crypt",
			sel: v1alpha1.DeviceSelector{Names: names("dm-*"), DeviceMapper: device},
			want: outcome{Devices: []string{
				`dm-0 <- name "dm-*"`, `dm-1 <- name "dm-*"`, `dm-2 <- name "dm-*"`, `dm-3 <- name "dm-*"`,
			}},
		},

		// Cloud VM: vda, a snap on loop0, an unattached loop1, zram swap.
		{
			name: "everything means every real disk", fixture: "vm",
			sel: v1alpha1.DeviceSelector{Names: names("*")},
			want: outcome{
				Devices: []string{`vda <- name "*"`},
				Skipped: []string{
					"loop0: " + loopReason,
					"loop1: " + loopReason,
					"zram0: RAM-backed (zram or a ram disk), where read-ahead only fills the page cache",
				},
			},
		},
		{
			name: "loop devices when the pattern asks for them; empty ones never", fixture: "vm",
			sel: v1alpha1.DeviceSelector{Names: names("loop*")},
			want: outcome{
				Devices: []string{`loop0 <- name "loop*"`},
				Skipped: []string{"loop1: empty (no medium, backing file or table)"},
			},
		},
		{
			name: "zram even when named", fixture: "vm",
			sel: v1alpha1.DeviceSelector{Names: names("zram0")},
			want: outcome{
				Skipped: []string{"zram0: RAM-backed (zram or a ram disk), where read-ahead only fills the page cache"},
				Problems: []string{
					`name pattern "zram0" matches no eligible block device: zram0 is RAM-backed (zram or a ram disk), where read-ahead only fills the page cache`,
				},
			},
			wantIs: []error{readahead.ErrNoMatch},
		},
		{
			name: "a loop device is not picked through its mount", fixture: "vm",
			sel: v1alpha1.DeviceSelector{MountPaths: mounts("/snap/core20/2318")},
			want: outcome{
				Skipped: []string{"loop0: " + loopReason},
				Problems: []string{
					"mount path /snap/core20/2318 selects no device: it is on loop0 (mounted on /snap/core20/2318), and loop0 is " + loopReason,
				},
			},
			wantIs: []error{readahead.ErrNotEligible},
		},
		{
			name: "escaped mount points", fixture: "vm",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/srv/my data/db")},
			want: outcome{Devices: []string{"vda <- mount /srv/my data/db"}},
		},
		{
			name: "an emptyDir is tmpfs", fixture: "vm",
			sel: v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/kubelet/pods/5f0c2a7e-1b7e-4c41-9d55-0c3f4b9a1e11/volumes/kubernetes.io~empty-dir/scratch")},
			want: outcome{Problems: []string{
				"mount path /var/lib/kubelet/pods/5f0c2a7e-1b7e-4c41-9d55-0c3f4b9a1e11/volumes/kubernetes.io~empty-dir/scratch selects no device: " +
					"it is on /var/lib/kubelet/pods/5f0c2a7e-1b7e-4c41-9d55-0c3f4b9a1e11/volumes/kubernetes.io~empty-dir/scratch, a tmpfs filesystem (from tmpfs) with no block device",
			}},
			wantIs: []error{readahead.ErrNotBlockDevice},
		},
		{
			name: "a relative path", fixture: "vm",
			sel:    v1alpha1.DeviceSelector{MountPaths: mounts("var/lib/mysql")},
			want:   outcome{Problems: []string{"mount path var/lib/mysql selects no device: it is not an absolute path"}},
			wantIs: []error{readahead.ErrMountNotFound},
		},
		{
			name: "a partition name selects its disk", fixture: "vm",
			sel:  v1alpha1.DeviceSelector{Names: names("vda1")},
			want: outcome{Devices: []string{`vda <- name "vda1"`}},
		},

		// NVMe: nvme1n1 is a multipath head, nvme1c1n1 its hidden path.
		{
			name: "the hidden multipath path is skipped", fixture: "nvme",
			sel: v1alpha1.DeviceSelector{Names: names("nvme*n1")},
			want: outcome{
				Devices: []string{`nvme0n1 <- name "nvme*n1"`, `nvme1n1 <- name "nvme*n1"`},
				Skipped: []string{"nvme1c1n1: a hidden multipath path; tune the multipath device instead"},
			},
		},
		{
			name: "whole-disk filesystem and partitioned root", fixture: "nvme",
			sel:  v1alpha1.DeviceSelector{MountPaths: mounts("/var/lib/mysql", "/")},
			want: outcome{Devices: []string{"nvme0n1 <- mount /", "nvme1n1 <- mount /var/lib/mysql"}},
		},
		{
			name: "an unknown resolution selects nothing", fixture: "nvme",
			sel:    v1alpha1.DeviceSelector{Names: names("nvme0n1"), DeviceMapper: "Sideways"},
			want:   outcome{Problems: []string{`deviceMapper "Sideways" is not one of Device, Underlying, Both: no device matches`}},
			wantIs: []error{readahead.ErrNoMatch},
		},
	}
	inventories := map[string]*readahead.Inventory{}
	for _, f := range readaheadtest.Fixtures() {
		inv, err := readahead.ReadInventory(readaheadtest.Fixture(t, f))
		if err != nil {
			t.Fatal(err)
		}
		inventories[f] = inv
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel := inventories[tt.fixture].Select(tt.sel)
			if diff := cmp.Diff(tt.want, outcomeOf(sel)); diff != "" {
				t.Errorf("Select mismatch (-want +got):\n%s", diff)
			}
			for _, target := range tt.wantIs {
				if !errors.Is(sel.Err(), target) {
					t.Errorf("Err() = %v, which does not match %v", sel.Err(), target)
				}
			}
			if got := sel.Err() != nil; got != (len(tt.want.Problems) > 0) {
				t.Errorf("Err() = %v, want an error exactly when there are problems", sel.Err())
			}
		})
	}
}

func TestSelectIsDeterministic(t *testing.T) {
	inv, err := readahead.ReadInventory(readaheadtest.Fixture(t, "lvm"))
	if err != nil {
		t.Fatal(err)
	}
	sel := v1alpha1.DeviceSelector{Names: names("*"), MountPaths: mounts("/var/lib/mysql", "/boot"), DeviceMapper: v1alpha1.DeviceMapperBoth}
	first := outcomeOf(inv.Select(sel))
	for range 20 {
		if diff := cmp.Diff(first, outcomeOf(inv.Select(sel))); diff != "" {
			t.Fatalf("Select is not deterministic (-first +later):\n%s", diff)
		}
	}
}

func TestSelectProblemTypes(t *testing.T) {
	inv, err := readahead.ReadInventory(readaheadtest.Fixture(t, "lvm"))
	if err != nil {
		t.Fatal(err)
	}
	sel := inv.Select(v1alpha1.DeviceSelector{Names: names("sdc"), MountPaths: mounts("/media/backup")})
	var noMatch *readahead.NoMatchError
	if !errors.As(sel.Problems[0], &noMatch) || noMatch.Pattern != "sdc" || len(noMatch.Skipped) != 1 {
		t.Errorf("first problem = %#v, want a *NoMatchError for sdc listing the skipped device", sel.Problems[0])
	}
	var mountErr *readahead.MountPathError
	if !errors.As(sel.Problems[1], &mountErr) || mountErr.Path != "/media/backup" {
		t.Errorf("second problem = %#v, want a *MountPathError for /media/backup", sel.Problems[1])
	}
}

func TestSelectWithUnreadableMountTable(t *testing.T) {
	paths := readaheadtest.Fixture(t, "lvm")
	paths.MountInfo = paths.Root + "/proc/1/mountinfo"
	inv, err := readahead.ReadInventory(paths)
	if err != nil {
		t.Fatalf("an unreadable mount table must only fail mount paths: %v", err)
	}
	sel := inv.Select(v1alpha1.DeviceSelector{Names: names("sda"), MountPaths: mounts("/var/lib/mysql")})
	if len(sel.Devices) != 1 || len(sel.Problems) != 1 || !errors.Is(sel.Problems[0], readahead.ErrMountNotFound) ||
		!strings.Contains(sel.Problems[0].Error(), "the mount table could not be read") {
		t.Errorf("Select = %+v, want sda selected and the mount path failed for the unreadable mount table", outcomeOf(sel))
	}
}

func TestNewInventoryForFakes(t *testing.T) {
	inv := readahead.NewInventory([]readahead.Device{
		{Name: "sdb", Dev: readahead.DevNum{Major: 8, Minor: 16}, Kind: readahead.KindDisk, SizeBytes: 1 << 30},
		{Name: "sda", Dev: readahead.DevNum{Major: 8, Minor: 0}, Kind: readahead.KindDisk, SizeBytes: 1 << 30},
	}, []mountinfo.Entry{{MountPoint: "/data", Major: 8, Minor: 16, FSType: "xfs", Source: "/dev/sdb"}})
	got := outcomeOf(inv.Select(v1alpha1.DeviceSelector{Names: names("sda"), MountPaths: mounts("/data")}))
	want := outcome{Devices: []string{`sda <- name "sda"`, "sdb <- mount /data"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Select mismatch (-want +got):\n%s", diff)
	}
}
