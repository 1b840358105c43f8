package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

// StateDir is where the device's original read-ahead is kept while the benchmark changes it, in
// the node agent's state file format. A loop device keeps its read-ahead when it is unbound and
// bound again, so a value left by a killed run would carry over to the next volume made on it: the
// next run restores whatever the file still names before it changes anything.
const StateDir = "/run/dbtune-bench-readahead"

// policyName is what the state file says changed the device.
const policyName = "readahead-benchmark"

// device is the volume's block device, whose read-ahead is changed the way the node agent
// changes it: picked as a ReadAheadPolicy picks devices (by a name pattern, which a loop device
// needs), each value decided with mode Set and applied through the agent's Host (BLKRASET, sysfs
// when the ioctl cannot be used), the original saved in the agent's state file before the first
// change and restored from it.
type device struct {
	host  readahead.Host
	store *readahead.Store
	id    readahead.DeviceID
	// OriginalKiB is the read-ahead the device had before the benchmark changed it.
	OriginalKiB int64
	// MaxSectorsKiB is the largest request the device takes (queue/max_sectors_kb): the kernel
	// lets a read larger than the read-ahead fetch up to this much at once.
	MaxSectorsKiB int64
}

// restoreLeftovers puts back the read-ahead of every device a killed run left changed in the
// state file of stateDir, and says which.
func restoreLeftovers(stateDir string, logf func(string, ...any)) error {
	store := readahead.NewStore(stateDir)
	entries, err := store.Entries()
	if err != nil {
		return err
	}
	host := readahead.NewHost(readahead.Paths{})
	var errs []error
	for _, e := range entries {
		r, err := readahead.Restore(host, store, e.DeviceID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.Gone {
			logf("forgot the read-ahead a killed run changed on %s: the device is gone", e.DeviceID)
			continue
		}
		logf("restored the read-ahead of %s that a killed run left at %d KiB to %d KiB", e.DeviceID, r.BeforeKiB, r.KeptKiB)
	}
	return errors.Join(errs...)
}

// openDevice finds the block device at path (/dev/loop3) and reads its read-ahead; the original
// is kept in stateDir.
func openDevice(path, stateDir string) (*device, error) {
	paths := readahead.Paths{}
	inv, err := readahead.ReadInventory(paths)
	if err != nil {
		return nil, fmt.Errorf("failed to read the block devices: %w", err)
	}
	name := filepath.Base(path)
	sel := inv.Select(v1alpha1.DeviceSelector{Names: []v1alpha1.DeviceGlob{v1alpha1.DeviceGlob(name)}})
	if err := sel.Err(); err != nil {
		return nil, fmt.Errorf("the node agent's selection does not pick %s: %w", path, err)
	}
	ids := sel.IDs()
	if len(ids) != 1 || ids[0].Name != name {
		return nil, fmt.Errorf("the node agent's selection of %q picked %v, not %s alone", name, ids, path)
	}
	d := &device{host: readahead.NewHost(paths), store: readahead.NewStore(stateDir), id: ids[0]}
	if d.OriginalKiB, err = d.host.ReadAhead(d.id); err != nil {
		return nil, err
	}
	d.MaxSectorsKiB, err = readSysfsInt(filepath.Join(paths.SysDir(), "block", name, "queue", "max_sectors_kb"))
	return d, err
}

// set gives the device a read-ahead of kib and checks that the kernel kept it.
func (d *device) set(kib int64) error {
	current, err := d.host.ReadAhead(d.id)
	if err != nil {
		return err
	}
	decision, err := readahead.Decide(v1alpha1.ReadAheadSet, current, kib)
	if err != nil {
		return err
	}
	c, err := readahead.Apply(d.host, d.store, d.id, policyName, decision)
	if err != nil {
		return err
	}
	if c.KeptKiB != readahead.KernelKiB(kib) {
		return fmt.Errorf("asked %s for a read-ahead of %d KiB, it kept %d KiB", d.id, kib, c.KeptKiB)
	}
	return nil
}

// restore puts the original read-ahead back, if the benchmark changed it.
func (d *device) restore() error {
	if _, saved, err := d.store.Entry(d.id); err != nil || !saved {
		return err
	}
	r, err := readahead.Restore(d.host, d.store, d.id)
	if err == nil && r.KeptKiB != d.OriginalKiB {
		err = fmt.Errorf("%s kept %d KiB", d.id, r.KeptKiB)
	}
	if err != nil {
		return fmt.Errorf("failed to restore the read-ahead of %s to %d KiB: %w", d.id, d.OriginalKiB, err)
	}
	return nil
}
