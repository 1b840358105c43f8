package readahead

import (
	"errors"
	"fmt"
	"os"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// KernelKiB is what the kernel keeps of a read-ahead request. It stores read-ahead in whole
// pages and rounds down, so with 4 KiB pages 130 KiB becomes 128 KiB: comparing a request with
// the current value must compare what would be kept, or a policy of 130 would rewrite the device
// on every reconcile.
func KernelKiB(kib int64) int64 {
	page := int64(os.Getpagesize() / 1024)
	return kib / page * page
}

// Decision is what to do with one device's read-ahead, made on one reading of it.
type Decision struct {
	// CurrentKiB is the read-ahead the decision was made on.
	CurrentKiB int64
	// TargetKiB is the value to ask the kernel for.
	TargetKiB int64
	// Change is false when the kernel already holds what it would keep of TargetKiB.
	Change bool
}

// Decide combines a policy's value with the device's current read-ahead. Set asks for the
// value; AtLeast asks for the larger of the value and the current one, so it never lowers a
// device that someone tuned higher. An empty mode is Set, the API default. A value outside
// MinReadAheadKiB..MaxReadAheadKiB is refused: the API never admits one.
func Decide(mode v1alpha1.ReadAheadMode, currentKiB, wantKiB int64) (Decision, error) {
	if wantKiB < v1alpha1.MinReadAheadKiB || wantKiB > v1alpha1.MaxReadAheadKiB {
		return Decision{}, fmt.Errorf("read-ahead %d KiB is outside %d..%d KiB",
			wantKiB, v1alpha1.MinReadAheadKiB, v1alpha1.MaxReadAheadKiB)
	}
	target := wantKiB
	switch mode {
	case v1alpha1.ReadAheadSet, "":
	case v1alpha1.ReadAheadAtLeast:
		target = max(currentKiB, wantKiB)
	default:
		return Decision{}, fmt.Errorf("read-ahead mode %q is not one of Set, AtLeast", mode)
	}
	return Decision{CurrentKiB: currentKiB, TargetKiB: target, Change: KernelKiB(target) != currentKiB}, nil
}

// Change is the outcome of setting one device's read-ahead.
type Change struct {
	// Device is the device.
	Device DeviceID
	// BeforeKiB is the read-ahead found.
	BeforeKiB int64
	// RequestedKiB is what was, or would have been, asked of the kernel.
	RequestedKiB int64
	// KeptKiB is the read-ahead read back: whole pages, so it can be below RequestedKiB.
	KeptKiB int64
	// Changed says whether the device was written.
	Changed bool
}

// Set reads a device's read-ahead, sets it and reads back what the kernel kept, without the
// state file. It is for hand use; the agent uses Apply.
func Set(h Host, id DeviceID, kib int64) (Change, error) {
	before, err := h.ReadAhead(id)
	if err != nil {
		return Change{}, err
	}
	return set(h, id, before, kib)
}

func set(h Host, id DeviceID, before, kib int64) (Change, error) {
	c := Change{Device: id, BeforeKiB: before, RequestedKiB: kib}
	if err := h.SetReadAhead(id, kib); err != nil {
		return c, err
	}
	c.Changed = true
	kept, err := h.ReadAhead(id)
	if err != nil {
		return c, err
	}
	c.KeptKiB = kept
	return c, nil
}

// Apply carries out a Decision for one device on behalf of a policy, as it was decided: the
// reading it was made on is the original saved in the state file before the device is first
// written, and nothing is written when the decision is no change, so an unchanged policy causes
// no writes at all. A corrupt state file stops Apply before the device is touched.
func Apply(h Host, s *Store, id DeviceID, policy string, d Decision) (Change, error) {
	if !d.Change {
		c := Change{Device: id, BeforeKiB: d.CurrentKiB, RequestedKiB: d.TargetKiB, KeptKiB: d.CurrentKiB}
		return c, s.setPolicy(id, policy)
	}
	if _, err := s.SaveOriginal(id, d.CurrentKiB, policy); err != nil {
		return Change{}, err
	}
	c, err := set(h, id, d.CurrentKiB, d.TargetKiB)
	if err != nil {
		return c, err
	}
	return c, s.RecordApplied(id, c.KeptKiB, policy)
}

// Restored is the outcome of restoring one device.
type Restored struct {
	// Entry is what the state file held.
	Entry Entry
	// BeforeKiB is the read-ahead found before restoring.
	BeforeKiB int64
	// KeptKiB is the read-ahead read back after restoring.
	KeptKiB int64
	// Gone says the device had vanished or its name belongs to another device now: nothing was
	// written, and the entry was dropped, since a device that comes back starts from the
	// kernel's default again.
	Gone bool
}

// Restore puts a device's original read-ahead back and forgets the device. It returns an error
// matching ErrNotSaved when the state file has no entry for it.
//
// A device counts as gone when the host says ErrDeviceNotFound or ErrDeviceChanged; the Host
// from NewHost only says so when sysfs agrees, so a missing /dev cannot make it drop an original.
func Restore(h Host, s *Store, id DeviceID) (Restored, error) {
	e, ok, err := s.Entry(id)
	if err != nil {
		return Restored{}, err
	}
	if !ok {
		return Restored{}, fmt.Errorf("failed to restore the read-ahead of %s: %w", id, ErrNotSaved)
	}
	r := Restored{Entry: e}
	before, err := h.ReadAhead(id)
	if isGone(err) {
		r.Gone = true
		return r, s.Forget(id)
	}
	if err != nil {
		return r, err
	}
	r.BeforeKiB, r.KeptKiB = before, before
	if before != e.OriginalKiB {
		c, err := set(h, id, before, e.OriginalKiB)
		if err != nil {
			return r, err
		}
		r.KeptKiB = c.KeptKiB
	}
	return r, s.Forget(id)
}

func isGone(err error) bool {
	return errors.Is(err, ErrDeviceNotFound) || errors.Is(err, ErrDeviceChanged)
}
