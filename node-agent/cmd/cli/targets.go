package cli

import (
	"errors"
	"flag"
	"fmt"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Exit codes of every node-agent command, following the flag package's convention of 2 for a bad
// command line.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailed: the command line was fine, the work failed (a probe target, a device, the API).
	ExitFailed = 1
	// ExitBadUsage: the command line is wrong; nothing was done.
	ExitBadUsage = 2
)

// Targets registers --target [name=]DIR, repeatable.
func Targets(fs *flag.FlagSet, targets *[]probe.Target) {
	fs.Func("target", "directory to probe, as `[name=]path`; repeat for several (name defaults to tmpfs or disk)", func(s string) error {
		nv := SplitNamed(s)
		if nv.Value == "" {
			return errors.New("empty path")
		}
		*targets = append(*targets, probe.Target{Name: nv.Name, Path: nv.Value})
		return nil
	})
}

// Devices registers --device [target=]DEV, repeatable; AttachDevices gives them to their targets.
func Devices(fs *flag.FlagSet, devices *[]Named) {
	fs.Func("device", "block device to read raw like hdparm -t, as `[target=]/dev/name`; without a target name it goes "+
		"to the target named disk, or else to the only target that is not a tmpfs", func(s string) error {
		*devices = append(*devices, SplitNamed(s))
		return nil
	})
}

// AttachDevices gives each --device to its target: the one it names; without a name, the target
// named disk, or else the only target that is not on a tmpfs (a raw device read belongs with the
// filesystem on that device). A target that cannot be inspected is not a candidate.
func AttachDevices(targets []probe.Target, devices []Named, opts probe.Options) error {
	for _, d := range devices {
		i, err := deviceTarget(targets, d, opts)
		if err != nil {
			return err
		}
		if targets[i].Device != "" {
			return fmt.Errorf("target %s already reads device %s; give one --device per target", targets[i].Path, targets[i].Device)
		}
		targets[i].Device = d.Value
	}
	return nil
}

func deviceTarget(targets []probe.Target, d Named, opts probe.Options) (int, error) {
	name := d.Name
	if name == "" {
		name = "disk"
	}
	for i, t := range targets {
		if t.Name == name {
			return i, nil
		}
	}
	if d.Name != "" {
		return 0, fmt.Errorf("--device %s=%s names no target; name one with --target %s=DIR", d.Name, d.Value, d.Name)
	}
	found := -1
	for i, t := range targets {
		kind, _, err := probe.Inspect(t.Path, opts)
		if err != nil || kind == probe.KindTmpfs {
			continue
		}
		if found >= 0 {
			return 0, fmt.Errorf("--device %s: several disk targets; say which, as --device NAME=%s", d.Value, d.Value)
		}
		found = i
	}
	if found < 0 {
		return 0, fmt.Errorf("--device %s needs a disk target to go with (all targets are tmpfs or unreadable); "+
			"name one with --target disk=DIR", d.Value)
	}
	return found, nil
}
