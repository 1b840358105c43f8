package readahead_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

func requireFourKiBPages(t *testing.T) {
	t.Helper()
	if os.Getpagesize() != 4096 {
		t.Skip("expectations assume 4 KiB pages")
	}
}

func TestDecide(t *testing.T) {
	requireFourKiBPages(t)
	tests := []struct {
		name             string
		mode             v1alpha1.ReadAheadMode
		current, want    int64
		wantTarget       int64
		wantChange       bool
		wantErrSubstring string
	}{
		{name: "Set raises", mode: v1alpha1.ReadAheadSet, current: 128, want: 4096, wantTarget: 4096, wantChange: true},
		{name: "Set lowers", mode: v1alpha1.ReadAheadSet, current: 8192, want: 4096, wantTarget: 4096, wantChange: true},
		{name: "Set already there", mode: v1alpha1.ReadAheadSet, current: 4096, want: 4096, wantTarget: 4096},
		{name: "empty mode is Set", mode: "", current: 8192, want: 4096, wantTarget: 4096, wantChange: true},
		{name: "Set of a value the kernel rounds to the current one", mode: v1alpha1.ReadAheadSet, current: 128, want: 130, wantTarget: 130},
		{name: "Set of a value the kernel rounds to another one", mode: v1alpha1.ReadAheadSet, current: 128, want: 135, wantTarget: 135, wantChange: true},
		{name: "AtLeast raises", mode: v1alpha1.ReadAheadAtLeast, current: 128, want: 4096, wantTarget: 4096, wantChange: true},
		{name: "AtLeast never lowers", mode: v1alpha1.ReadAheadAtLeast, current: 8192, want: 4096, wantTarget: 8192},
		{name: "AtLeast already there", mode: v1alpha1.ReadAheadAtLeast, current: 4096, want: 4096, wantTarget: 4096},
		{name: "unknown mode", mode: "AtMost", current: 128, want: 4096, wantErrSubstring: `read-ahead mode "AtMost" is not one of Set, AtLeast`},
		{name: "below a page", mode: v1alpha1.ReadAheadSet, current: 128, want: 3, wantErrSubstring: "read-ahead 3 KiB is outside 4..1048576 KiB"},
		{name: "above 1 GiB", mode: v1alpha1.ReadAheadSet, current: 128, want: v1alpha1.MaxReadAheadKiB + 1, wantErrSubstring: "read-ahead 1048577 KiB is outside 4..1048576 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := readahead.Decide(tt.mode, tt.current, tt.want)
			if tt.wantErrSubstring != "" {
				if err == nil || err.Error() != tt.wantErrSubstring {
					t.Errorf("Decide = %+v, %v; want error %q", d, err, tt.wantErrSubstring)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := (readahead.Decision{CurrentKiB: tt.current, TargetKiB: tt.wantTarget, Change: tt.wantChange}); d != want {
				t.Errorf("Decide(%s, %d, %d) = %+v, want %+v", tt.mode, tt.current, tt.want, d, want)
			}
		})
	}
}

func TestKernelKiB(t *testing.T) {
	requireFourKiBPages(t)
	for in, want := range map[int64]int64{0: 0, 3: 0, 4: 4, 130: 128, 131072: 131072, 131075: 131072} {
		if got := readahead.KernelKiB(in); got != want {
			t.Errorf("KernelKiB(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestApplySavesTheOriginalBeforeTheFirstWrite(t *testing.T) {
	host := readaheadtest.NewFakeHost()
	host.AddDevice(dm1, 128)
	store := newStore(t)
	host.BeforeSet = func(id readahead.DeviceID, kib int64) {
		e, ok, err := store.Entry(id)
		if err != nil || !ok || e.OriginalKiB != 128 {
			t.Errorf("setting %s to %d before its original was saved (entry %+v, %t, %v)", id, kib, e, ok, err)
		}
	}
	c, err := applyPolicy(host, store, request{Device: dm1, KiB: 131072, Mode: v1alpha1.ReadAheadSet, Policy: "mysql-scans"})
	if err != nil {
		t.Fatal(err)
	}
	want := readahead.Change{Device: dm1, BeforeKiB: 128, RequestedKiB: 131072, KeptKiB: 131072, Changed: true}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Apply mismatch (-want +got):\n%s", diff)
	}
	entries, err := store.Entries()
	if err != nil {
		t.Fatal(err)
	}
	wantEntries := []readahead.Entry{{
		DeviceID: dm1, OriginalKiB: 128, AppliedKiB: ptr[int64](131072), Policy: "mysql-scans",
		SavedAt: fixedTime, AppliedAt: fixedTime,
	}}
	if diff := cmp.Diff(wantEntries, entries); diff != "" {
		t.Errorf("state mismatch (-want +got):\n%s", diff)
	}
}

func TestApplyWritesNothingWhenNothingChanges(t *testing.T) {
	requireFourKiBPages(t)
	host := readaheadtest.NewFakeHost()
	host.AddDevice(dm1, 128)
	store := newStore(t)
	req := request{Device: dm1, KiB: 130, Mode: v1alpha1.ReadAheadSet, Policy: "p"}
	c, err := applyPolicy(host, store, req)
	if err != nil || c.Changed || c.KeptKiB != 128 {
		t.Errorf("Apply(130) on a device at 128 = %+v, %v; want no change", c, err)
	}
	if len(host.Sets()) != 0 {
		t.Errorf("the device was written: %v", host.Sets())
	}
	if _, err := os.Stat(store.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state file was written (%v)", err)
	}
}

func TestApplyAgainKeepsTheOriginalAndFollowsTheWinner(t *testing.T) {
	host := readaheadtest.NewFakeHost()
	host.AddDevice(sda, 256)
	store := newStore(t)
	steps := []request{
		{Device: sda, KiB: 4096, Policy: "first"},
		{Device: sda, KiB: 8192, Policy: "first"},
		{Device: sda, KiB: 8192, Policy: "second"}, // a new winner with the same value: no write
	}
	for _, req := range steps {
		if _, err := applyPolicy(host, store, req); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(host.Sets()); got != 2 {
		t.Errorf("%d writes, want 2: %v", got, host.Sets())
	}
	e, _, err := store.Entry(sda)
	if err != nil || e.OriginalKiB != 256 || *e.AppliedKiB != 8192 || e.Policy != "second" {
		t.Errorf("entry = %+v, %v; want original 256, applied 8192, policy second", e, err)
	}
}

func TestApplyFailures(t *testing.T) {
	t.Run("no permission", func(t *testing.T) {
		host := readaheadtest.NewFakeHost()
		host.AddDevice(sda, 128)
		host.FailSets("sda", syscall.EACCES)
		store := newStore(t)
		_, err := applyPolicy(host, store, request{Device: sda, KiB: 4096, Policy: "p"})
		if !errors.Is(err, readahead.ErrPermission) {
			t.Errorf("Apply = %v, want ErrPermission", err)
		}
		if kib, _ := host.Value("sda"); kib != 128 {
			t.Errorf("device at %d after a refused write", kib)
		}
		// The original saved before the attempt is the device's own value, so restoring it is
		// harmless.
		if e, ok, err := store.Entry(sda); err != nil || !ok || e.OriginalKiB != 128 || e.AppliedKiB != nil {
			t.Errorf("entry after a refused write = %+v, %t, %v", e, ok, err)
		}
	})
	t.Run("read-only sysfs", func(t *testing.T) {
		host := readaheadtest.NewFakeHost()
		host.AddDevice(sda, 128)
		host.FailSets("sda", syscall.EROFS)
		if _, err := applyPolicy(host, newStore(t), request{Device: sda, KiB: 4096, Policy: "p"}); !errors.Is(err, readahead.ErrReadOnly) {
			t.Errorf("Apply = %v, want ErrReadOnly", err)
		}
	})
	t.Run("device gone", func(t *testing.T) {
		host := readaheadtest.NewFakeHost()
		store := newStore(t)
		if _, err := applyPolicy(host, store, request{Device: sda, KiB: 4096, Policy: "p"}); !errors.Is(err, readahead.ErrDeviceNotFound) {
			t.Errorf("Apply = %v, want ErrDeviceNotFound", err)
		}
		if entries, _ := store.Entries(); len(entries) != 0 {
			t.Errorf("a missing device got a state entry: %+v", entries)
		}
	})
	t.Run("out of bounds", func(t *testing.T) {
		host := readaheadtest.NewFakeHost()
		host.AddDevice(sda, 128)
		for _, kib := range []int64{0, 3, v1alpha1.MaxReadAheadKiB + 1} {
			if _, err := applyPolicy(host, newStore(t), request{Device: sda, KiB: kib, Policy: "p"}); err == nil {
				t.Errorf("Apply(%d KiB) succeeded", kib)
			}
		}
		if len(host.Sets()) != 0 {
			t.Errorf("out-of-bounds requests wrote the device: %v", host.Sets())
		}
	})
	t.Run("corrupt state", func(t *testing.T) {
		host := readaheadtest.NewFakeHost()
		host.AddDevice(sda, 128)
		store := newStore(t)
		if err := os.MkdirAll(filepath.Dir(store.Path()), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(store.Path(), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := applyPolicy(host, store, request{Device: sda, KiB: 4096, Policy: "p"}); !errors.Is(err, readahead.ErrCorruptState) {
			t.Errorf("Apply = %v, want ErrCorruptState", err)
		}
		if len(host.Sets()) != 0 {
			t.Errorf("the device was written although the original could not be saved: %v", host.Sets())
		}
	})
}

func TestRestore(t *testing.T) {
	setup := func(t *testing.T) (*readaheadtest.FakeHost, *readahead.Store) {
		host := readaheadtest.NewFakeHost()
		host.AddDevice(dm1, 128)
		store := newStore(t)
		if _, err := applyPolicy(host, store, request{Device: dm1, KiB: 65536, Policy: "p"}); err != nil {
			t.Fatal(err)
		}
		return host, store
	}
	t.Run("puts the original back and forgets", func(t *testing.T) {
		host, store := setup(t)
		r, err := readahead.Restore(host, store, dm1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Gone || r.BeforeKiB != 65536 || r.KeptKiB != 128 || r.Entry.OriginalKiB != 128 {
			t.Errorf("Restore = %+v, want 65536 -> 128", r)
		}
		if kib, _ := host.Value("dm-1"); kib != 128 {
			t.Errorf("device at %d after restore, want 128", kib)
		}
		if entries, err := store.Entries(); err != nil || len(entries) != 0 {
			t.Errorf("entries after restore = %+v, %v", entries, err)
		}
		if _, err := readahead.Restore(host, store, dm1); !errors.Is(err, readahead.ErrNotSaved) {
			t.Errorf("second Restore = %v, want ErrNotSaved", err)
		}
	})
	t.Run("vanished device", func(t *testing.T) {
		host, store := setup(t)
		host.RemoveDevice("dm-1")
		r, err := readahead.Restore(host, store, dm1)
		if err != nil || !r.Gone {
			t.Errorf("Restore = %+v, %v; want Gone", r, err)
		}
		if entries, _ := store.Entries(); len(entries) != 0 {
			t.Errorf("entries after restoring a vanished device = %+v", entries)
		}
	})
	t.Run("name now belongs to another device", func(t *testing.T) {
		host, store := setup(t)
		host.AddDevice(readahead.DeviceID{Name: "dm-1", Dev: readahead.DevNum{Major: 253, Minor: 7}}, 4096)
		writes := len(host.Sets())
		r, err := readahead.Restore(host, store, dm1)
		if err != nil || !r.Gone || len(host.Sets()) != writes {
			t.Errorf("Restore = %+v, %v with %d new writes; want Gone and no write", r, err, len(host.Sets())-writes)
		}
		if kib, _ := host.Value("dm-1"); kib != 4096 {
			t.Errorf("the new dm-1 was changed to %d", kib)
		}
	})
	t.Run("refused write keeps the entry", func(t *testing.T) {
		host, store := setup(t)
		host.FailSets("dm-1", syscall.EPERM)
		if _, err := readahead.Restore(host, store, dm1); !errors.Is(err, readahead.ErrPermission) {
			t.Errorf("Restore = %v, want ErrPermission", err)
		}
		if _, ok, _ := store.Entry(dm1); !ok {
			t.Error("the entry was dropped although the original was not restored")
		}
	})
}

// request is what a policy asks of one device.
type request struct {
	Device readahead.DeviceID
	KiB    int64
	Mode   v1alpha1.ReadAheadMode
	Policy string
}

// applyPolicy reads the device, decides and applies the decision, as the agent's reconciler does.
func applyPolicy(h readahead.Host, s *readahead.Store, r request) (readahead.Change, error) {
	current, err := h.ReadAhead(r.Device)
	if err != nil {
		return readahead.Change{}, err
	}
	d, err := readahead.Decide(r.Mode, current, r.KiB)
	if err != nil {
		return readahead.Change{}, err
	}
	return readahead.Apply(h, s, r.Device, r.Policy, d)
}
