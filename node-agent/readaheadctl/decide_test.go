package readaheadctl

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

var t0 = readaheadtest.PolicyTime

// testInventory is a small host: two SATA disks (sda partitioned), an LVM volume on sdb1
// mounted on /var/lib/mysql, and a USB stick.
func testInventory() *readahead.Inventory {
	disk := func(name string, major, minor uint32) readahead.Device {
		return readahead.Device{Name: name, Dev: readahead.DevNum{Major: major, Minor: minor}, Kind: readahead.KindDisk,
			SizeBytes: 1 << 40, ReadAheadKiB: 128}
	}
	part := func(name, parent string, major, minor uint32) readahead.Device {
		return readahead.Device{Name: name, Dev: readahead.DevNum{Major: major, Minor: minor}, Kind: readahead.KindPartition,
			Parent: parent, SizeBytes: 1 << 39, ReadAheadKiB: 128}
	}
	usb := disk("sdc", 8, 32)
	usb.Removable = true
	dm := disk("dm-0", 253, 0)
	dm.Kind, dm.DMName, dm.Slaves = readahead.KindDM, "vg-mysql", []string{"sdb1"}
	devices := []readahead.Device{
		disk("sda", 8, 0), part("sda1", "sda", 8, 1), disk("sdb", 8, 16), part("sdb1", "sdb", 8, 17), usb, dm,
	}
	mounts := []mountinfo.Entry{{MountPoint: "/var/lib/mysql", Major: 253, FSType: "ext4", Source: "/dev/mapper/vg-mysql"}}
	return readahead.NewInventory(devices, mounts)
}

func id(name string, major, minor uint32) readahead.DeviceID {
	return readahead.DeviceID{Name: name, Dev: readahead.DevNum{Major: major, Minor: minor}}
}

var (
	sda = id("sda", 8, 0)
	sdb = id("sdb", 8, 16)
	dm0 = id("dm-0", 253, 0)
)

func deleting(p *v1alpha1.ReadAheadPolicy) {
	now := metav1.NewTime(t0.Add(time.Hour))
	p.DeletionTimestamp = &now
}

func saved(d readahead.DeviceID, original, applied int64, policy string) readahead.Entry {
	return readahead.Entry{DeviceID: d, OriginalKiB: original, AppliedKiB: &applied, Policy: policy, SavedAt: t0}
}

// planView is a plan in words, for readable diffs.
type planView struct {
	Targets  []string
	Restores []string
	Problems []string
	Blocked  string
}

func viewPlan(p plan) planView {
	var v planView
	for _, t := range p.targets {
		s := fmt.Sprintf("%s=%s", t.device.Name, t.policy.Name)
		if len(t.losers) > 0 {
			s += " over " + strings.Join(t.losers, ",")
		}
		if t.saved != nil {
			s += " (saved)"
		}
		v.Targets = append(v.Targets, s)
	}
	for _, e := range p.restores {
		v.Restores = append(v.Restores, e.String())
	}
	for _, pr := range p.problems {
		v.Problems = append(v.Problems, pr.reason+" "+pr.subject)
	}
	if p.blocked != nil {
		v.Blocked = p.blocked.reason
	}
	return v
}

func TestDecide(t *testing.T) {
	dbNodes := &metav1.LabelSelector{MatchLabels: map[string]string{"role": "db"}}
	tests := []struct {
		name string
		in   input
		want planView
	}{{
		name: "an omitted nodeSelector selects every node",
		in:   input{policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sd?"})}},
		want: planView{Targets: []string{"sda=scan", "sdb=scan"}},
	}, {
		name: "a nodeSelector that matches",
		in: input{nodeLabels: map[string]string{"role": "db"},
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"}, readaheadtest.NodeSelector(dbNodes))}},
		want: planView{Targets: []string{"sda=scan"}},
	}, {
		name: "a nodeSelector that does not match",
		in: input{nodeLabels: map[string]string{"role": "web"},
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"}, readaheadtest.NodeSelector(dbNodes))}},
		want: planView{},
	}, {
		name: "matchExpressions",
		in: input{nodeLabels: map[string]string{"disk": "hdd"},
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"}, readaheadtest.NodeSelector(&metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "disk", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ssd"}}},
			}))}},
		want: planView{Targets: []string{"sda=scan"}},
	}, {
		name: "an invalid nodeSelector is a problem and selects nothing",
		in: input{policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"}, readaheadtest.NodeSelector(&metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "disk", Operator: "Near"}},
		}))}},
		want: planView{Problems: []string{"InvalidNodeSelector ReadAheadPolicy scan"}},
	}, {
		name: "on an overlap the higher priority wins and the loser is recorded",
		in: input{policies: []*v1alpha1.ReadAheadPolicy{
			readaheadtest.Policy("bulk", 8192, []string{"sd?"}, readaheadtest.Priority(10), readaheadtest.CreatedAt(t0.Add(time.Hour))),
			readaheadtest.Policy("base", 1024, []string{"sda"}),
		}},
		want: planView{Targets: []string{"sda=bulk over base", "sdb=bulk"}},
	}, {
		name: "on a priority tie the older policy wins",
		in: input{policies: []*v1alpha1.ReadAheadPolicy{
			readaheadtest.Policy("a-newer", 8192, []string{"sda"}, readaheadtest.CreatedAt(t0.Add(time.Minute))),
			readaheadtest.Policy("z-older", 1024, []string{"sda"}),
		}},
		want: planView{Targets: []string{"sda=z-older over a-newer"}},
	}, {
		name: "on a tie in priority and age the first name wins",
		in: input{policies: []*v1alpha1.ReadAheadPolicy{
			readaheadtest.Policy("b", 8192, []string{"sda"}), readaheadtest.Policy("a", 1024, []string{"sda"}), readaheadtest.Policy("c", 1024, []string{"sda"}),
		}},
		want: planView{Targets: []string{"sda=a over b,c"}},
	}, {
		name: "a partition and a mount path resolve to their disk and dm device",
		in: input{policies: []*v1alpha1.ReadAheadPolicy{
			readaheadtest.Policy("parts", 4096, []string{"sda1"}), readaheadtest.Policy("mysql", 8192, nil, readaheadtest.MountPaths("/var/lib/mysql")),
		}},
		want: planView{Targets: []string{"dm-0=mysql", "sda=parts"}},
	}, {
		name: "a device no longer selected is restored, one still selected keeps its entry",
		in: input{
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"})},
			saved:    []readahead.Entry{saved(sda, 128, 4096, "scan"), saved(sdb, 256, 4096, "scan")},
		},
		want: planView{Targets: []string{"sda=scan (saved)"}, Restores: []string{"sdb (8:16)"}},
	}, {
		name: "a deleted policy's devices are restored",
		in:   input{saved: []readahead.Entry{saved(sda, 128, 4096, "scan"), saved(dm0, 128, 4096, "scan")}},
		want: planView{Restores: []string{"sda (8:0)", "dm-0 (253:0)"}},
	}, {
		name: "a policy being deleted no longer applies",
		in: input{
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"}, deleting)},
			saved:    []readahead.Entry{saved(sda, 128, 4096, "scan")},
		},
		want: planView{Restores: []string{"sda (8:0)"}},
	}, {
		name: "a node that stops matching gets its originals back",
		in: input{nodeLabels: map[string]string{"role": "web"},
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"}, readaheadtest.NodeSelector(dbNodes))},
			saved:    []readahead.Entry{saved(sda, 128, 4096, "scan")},
		},
		want: planView{Restores: []string{"sda (8:0)"}},
	}, {
		name: "a device that moves to another policy is not restored",
		in: input{
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("base", 1024, []string{"sda"})},
			saved:    []readahead.Entry{saved(sda, 128, 8192, "bulk")},
		},
		want: planView{Targets: []string{"sda=base (saved)"}},
	}, {
		name: "a saved device whose name now has another number is restored (Restore finds it gone)",
		in: input{
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sdb"})},
			saved:    []readahead.Entry{saved(id("sdb", 8, 48), 128, 4096, "scan")},
		},
		want: planView{Targets: []string{"sdb=scan"}, Restores: []string{"sdb (8:48)"}},
	}, {
		name: "a glob that matches nothing is a problem, the other patterns still apply",
		in:   input{policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"nvme*n1", "sdc", "sdb"})}},
		want: planView{Targets: []string{"sdb=scan"}, Problems: []string{
			"NoDeviceMatched ReadAheadPolicy scan", "NoDeviceMatched ReadAheadPolicy scan",
		}},
	}, {
		name: "a mount path that is not mounted is a problem",
		in:   input{policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, nil, readaheadtest.MountPaths("/srv"))}},
		want: planView{Problems: []string{"MountPathUnresolved ReadAheadPolicy scan"}},
	}, {
		name: "a corrupt state file blocks every change, restores included",
		in: input{
			policies: []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"})},
			stateErr: &readahead.CorruptStateError{Path: "/run/x/readahead-state.json", Err: errors.New("unexpected end of JSON input")},
		},
		want: planView{Targets: []string{"sda=scan"}, Blocked: v1alpha1.ReasonStateFileCorrupt},
	}, {
		name: "an unreadable inventory blocks every change",
		in: input{
			policies:     []*v1alpha1.ReadAheadPolicy{readaheadtest.Policy("scan", 4096, []string{"sda"})},
			inventoryErr: errors.New("failed to find block devices"),
			saved:        []readahead.Entry{saved(sda, 128, 4096, "scan")},
		},
		want: planView{Blocked: v1alpha1.ReasonInventoryUnreadable},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.inventoryErr == nil {
				tt.in.inventory = testInventory()
			}
			got := viewPlan(decide(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideProblemMessages(t *testing.T) {
	p := decide(input{inventory: testInventory(), policies: []*v1alpha1.ReadAheadPolicy{
		readaheadtest.Policy("scan", 4096, []string{"nvme*n1", "sdc"}),
	}})
	want := []string{
		`ReadAheadPolicy scan: name pattern "nvme*n1" matches no block device on this node; fix spec.devices, or narrow spec.nodeSelector to nodes that have the device`,
		`ReadAheadPolicy scan: name pattern "sdc" matches no eligible block device: sdc is removable media; fix spec.devices, or narrow spec.nodeSelector to nodes that have the device`,
	}
	var got []string
	for _, pr := range p.problems {
		got = append(got, pr.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestAssess(t *testing.T) {
	kib := func(v int64) *int64 { return &v }
	atLeast := func(p *v1alpha1.ReadAheadPolicy) { p.Spec.Mode = v1alpha1.ReadAheadAtLeast }
	gone := &readahead.DeviceError{Op: "read read-ahead", Device: sda, Path: "/dev/sda", Err: syscall.ENOENT}
	type view struct {
		Current *int64
		Desired int64
		Action  action
		Err     string
	}
	tests := []struct {
		name   string
		policy *v1alpha1.ReadAheadPolicy
		saved  *readahead.Entry
		read   reading
		want   view
	}{
		{name: "Set raises", policy: readaheadtest.Policy("p", 4096, nil), read: reading{kib: 128},
			want: view{Current: kib(128), Desired: 4096, Action: actionApply}},
		{name: "Set lowers", policy: readaheadtest.Policy("p", 64, nil), read: reading{kib: 4096},
			want: view{Current: kib(4096), Desired: 64, Action: actionApply}},
		{name: "already there", policy: readaheadtest.Policy("p", 4096, nil), read: reading{kib: 4096},
			want: view{Current: kib(4096), Desired: 4096, Action: actionNone}},
		{name: "AtLeast raises", policy: readaheadtest.Policy("p", 4096, nil, atLeast), read: reading{kib: 128},
			want: view{Current: kib(128), Desired: 4096, Action: actionApply}},
		{name: "AtLeast never lowers", policy: readaheadtest.Policy("p", 4096, nil, atLeast), read: reading{kib: 16384},
			want: view{Current: kib(16384), Desired: 16384, Action: actionNone}},
		{name: "the kernel keeps whole pages", policy: readaheadtest.Policy("p", 4097, nil), read: reading{kib: readahead.KernelKiB(4097)},
			want: view{Current: kib(readahead.KernelKiB(4097)), Desired: readahead.KernelKiB(4097), Action: actionNone}},
		{name: "changed by hand: repair", policy: readaheadtest.Policy("p", 4096, nil), saved: new(saved(sda, 128, 4096, "p")), read: reading{kib: 256},
			want: view{Current: kib(256), Desired: 4096, Action: actionRepair}},
		{name: "AtLeast repairs a value lowered by hand", policy: readaheadtest.Policy("p", 4096, nil, atLeast),
			saved: new(saved(sda, 128, 4096, "p")), read: reading{kib: 512},
			want: view{Current: kib(512), Desired: 4096, Action: actionRepair}},
		{name: "the policy changed: update", policy: readaheadtest.Policy("p", 8192, nil), saved: new(saved(sda, 128, 4096, "p")), read: reading{kib: 4096},
			want: view{Current: kib(4096), Desired: 8192, Action: actionUpdate}},
		{name: "saved but never set (interrupted): a first change", policy: readaheadtest.Policy("p", 4096, nil),
			saved: &readahead.Entry{DeviceID: sda, OriginalKiB: 128}, read: reading{kib: 128},
			want: view{Current: kib(128), Desired: 4096, Action: actionApply}},
		{name: "unreadable: nothing is tried", policy: readaheadtest.Policy("p", 4096, nil), read: reading{err: gone},
			want: view{Desired: 4096, Err: gone.Error()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := assess(target{device: sda, policy: tt.policy, saved: tt.saved}, tt.read)
			got := view{Current: s.current, Desired: s.desired, Action: s.action}
			if s.err != nil {
				got.Err = s.err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("step (-want +got):\n%s", diff)
			}
		})
	}
}
