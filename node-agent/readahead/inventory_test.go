package readahead_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

// describe renders a device on one line, so a fixture's whole inventory fits in a table.
func describe(d *readahead.Device) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", d.Name, d.Dev, d.Kind)
	if d.Parent != "" {
		b.WriteString(" of " + d.Parent)
	}
	if d.DMName != "" {
		b.WriteString(" " + d.DMName)
	}
	if len(d.Slaves) > 0 {
		b.WriteString(" on " + strings.Join(d.Slaves, ","))
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{d.Removable, "removable"}, {d.Hidden, "hidden"}, {d.ReadOnly, "ro"}, {d.Rotational, "rotational"}} {
		if f.set {
			b.WriteString(" " + f.name)
		}
	}
	fmt.Fprintf(&b, " ra=%d size=%d", d.ReadAheadKiB, d.SizeBytes)
	return b.String()
}

func TestReadInventory(t *testing.T) {
	tests := map[string][]string{
		"vm": {
			"loop0 7:0 loop ro ra=128 size=66842624",
			"loop1 7:1 loop ra=128 size=0",
			"vda 252:0 disk rotational ra=128 size=21474836480",
			"vda1 252:1 part of vda rotational ra=128 size=21358427648",
			"vda14 252:14 part of vda rotational ra=128 size=4194304",
			"vda15 252:15 part of vda rotational ra=128 size=111149056",
			"zram0 251:0 ram ra=128 size=4294967296",
		},
		"nvme": {
			"nvme0n1 259:0 disk ra=128 size=960197124096",
			"nvme0n1p1 259:1 part of nvme0n1 ra=128 size=536870912",
			"nvme0n1p2 259:2 part of nvme0n1 ra=128 size=1073741824",
			"nvme0n1p3 259:3 part of nvme0n1 ra=128 size=958584586240",
			"nvme1c1n1 259:5 disk hidden ra=128 size=3840755982336",
			"nvme1n1 259:4 disk ra=128 size=3840755982336",
		},
		"lvm": {
			"dm-0 253:0 dm vg-root on sda2 rotational ra=128 size=53687091200",
			"dm-1 253:1 dm vg-mysql on sda2,sdb1 rotational ra=4096 size=3584000000000",
			"sda 8:0 disk rotational ra=128 size=2000398934016",
			"sda1 8:1 part of sda rotational ra=128 size=1073741824",
			"sda2 8:2 part of sda rotational ra=128 size=1999324126720",
			"sdb 8:16 disk rotational ra=128 size=2000398934016",
			"sdb1 8:17 part of sdb rotational ra=128 size=2000397868544",
			"sdc 8:32 disk removable rotational ra=128 size=30752636928",
			"sdc1 8:33 part of sdc removable rotational ra=128 size=30751588352",
		},
		"crypt": {
			"dm-0 253:0 dm luks-3f6b0c1e-8d2a-4b7e-9a51-2c7d4e9f0a13 on nvme0n1p3 ra=128 size=509406609408",
			"dm-1 253:1 dm vg0-root on dm-0 ra=128 size=107374182400",
			"dm-2 253:2 dm vg0-mysql on dm-0 ra=128 size=322122547200",
			"dm-3 253:3 dm vg0-srv on dm-0 ra=128 size=53687091200",
			"nvme0n1 259:0 disk ra=128 size=512110190592",
			"nvme0n1p1 259:1 part of nvme0n1 ra=128 size=536870912",
			"nvme0n1p2 259:2 part of nvme0n1 ra=128 size=2147483648",
			"nvme0n1p3 259:3 part of nvme0n1 ra=128 size=509423386624",
		},
	}
	if got, want := len(readaheadtest.Fixtures()), len(tests); got != want {
		t.Errorf("%d fixtures, but the test covers %d", got, want)
	}
	for fixture, want := range tests {
		t.Run(fixture, func(t *testing.T) {
			inv, err := readahead.ReadInventory(readaheadtest.Fixture(t, fixture))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range inv.Devices {
				got = append(got, describe(&inv.Devices[i]))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("inventory mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInventoryLookups(t *testing.T) {
	inv, err := readahead.ReadInventory(readaheadtest.Fixture(t, "lvm"))
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := inv.DeviceByNumber(readahead.DevNum{Major: 8, Minor: 17}); !ok || d.Name != "sdb1" {
		t.Errorf("DeviceByNumber(8:17) = %v, %t; want sdb1", d, ok)
	}
	if _, ok := inv.DeviceByNumber(readahead.DevNum{Major: 8, Minor: 49}); ok {
		t.Error("DeviceByNumber(8:49) found the pulled USB disk")
	}
	if d, ok := inv.DeviceByDMName("vg-mysql"); !ok || d.Name != "dm-1" {
		t.Errorf("DeviceByDMName(vg-mysql) = %v, %t; want dm-1", d, ok)
	}
	part, _ := inv.Device("sda2")
	if d, ok := inv.WholeDevice(part); !ok || d.Name != "sda" {
		t.Errorf("WholeDevice(sda2) = %v, %t; want sda", d, ok)
	}
}

func TestReadInventoryWithoutSysfs(t *testing.T) {
	_, err := readahead.ReadInventory(readahead.Paths{Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "is sysfs mounted?") {
		t.Errorf("ReadInventory on an empty root: %v, want an error asking whether sysfs is mounted", err)
	}
}

func TestPathsDefaults(t *testing.T) {
	p := readahead.Paths{}
	got := []string{p.SysDir(), p.DevDir(), p.MountInfoPath()}
	want := []string{"/sys", "/dev", "/proc/self/mountinfo"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default paths mismatch (-want +got):\n%s", diff)
	}
	p = readahead.Paths{Root: "/host", MountInfo: "/proc/1/mountinfo"}
	got = []string{p.SysDir(), p.DevDir(), p.MountInfoPath()}
	want = []string{"/host/sys", "/host/dev", "/proc/1/mountinfo"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths under /host mismatch (-want +got):\n%s", diff)
	}
}
