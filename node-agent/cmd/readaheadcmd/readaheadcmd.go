// Package readaheadcmd is the node agent's `readahead` command: get, set and list block-device
// read-ahead by hand, through the same code the agent uses, for checking a node or trying a
// value before writing a ReadAheadPolicy.
package readaheadcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

const usage = `Usage: readahead COMMAND [flags] [ARGS]

Reads and sets block-device read-ahead as the node agent does: with the BLKRAGET and BLKRASET
ioctls, or through queue/read_ahead_kb in sysfs.

Commands:
  get DEVICE        print the read-ahead of DEVICE
  set DEVICE KiB    set the read-ahead of DEVICE to KiB (0 to %d) and print what the kernel kept
  report            list every block device with its read-ahead, like blockdev --report

DEVICE is a kernel name (sda, nvme0n1, dm-1), a device node (/dev/sda, /dev/disk/by-id/...) or
/dev/mapper/NAME. A partition stands for its disk, which is where read-ahead belongs.

A change made here is not recorded in the agent's state file: if a ReadAheadPolicy covers the
device, the agent puts its own value back.

Flags:
  -root DIR   the host's / (default "/"); sysfs and the device nodes are read under it
  -via HOW    ioctl, sysfs, or auto (default): the ioctl, and sysfs when the device node is
              missing or the ioctl is refused
`

// Run runs the command with args, the words after "readahead" on the command line, and returns
// the exit status: 0 on success, 1 when the operation failed, 2 for bad input.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, v1alpha1.MaxReadAheadKiB)
		return cli.ExitBadUsage
	}
	var cmd func(*invocation) error
	minArgs, maxArgs := 0, 0
	switch args[0] {
	case "get":
		cmd, minArgs, maxArgs = runGet, 1, 1
	case "set":
		cmd, minArgs, maxArgs = runSet, 2, 2
	case "report":
		cmd = runReport
	case "help", "-h", "-help", "--help":
		fmt.Fprintf(stdout, usage, v1alpha1.MaxReadAheadKiB)
		return cli.ExitOK
	default:
		fmt.Fprintf(stderr, "readahead: unknown command %q (want get, set or report)\n", args[0])
		return cli.ExitBadUsage
	}

	inv := &invocation{name: args[0], stdout: stdout}
	fs := flag.NewFlagSet("readahead "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&inv.root, "root", "/", "")
	fs.StringVar(&inv.via, "via", "auto", "")
	positional, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, usage, v1alpha1.MaxReadAheadKiB)
		return cli.ExitOK
	}
	if err == nil {
		err = checkArgs(positional, minArgs, maxArgs)
	}
	if err == nil {
		inv.args = positional
		inv.host, err = hostFor(inv.via, readahead.Paths{Root: inv.root})
	}
	if err != nil {
		fmt.Fprintf(stderr, "readahead %s: %v\nRun 'readahead help' for usage.\n", inv.name, err)
		return cli.ExitBadUsage
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "readahead %s: %v\n", inv.name, err)
		return cli.ExitFailed
	}
	if err := cmd(inv); err != nil {
		fmt.Fprintf(stderr, "readahead %s: %v\n", inv.name, err)
		var bad usageError
		if errors.As(err, &bad) {
			return cli.ExitBadUsage
		}
		return cli.ExitFailed
	}
	return cli.ExitOK
}

// usageError is bad input found after flag parsing, such as a KiB that is not a number.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

type invocation struct {
	name   string
	root   string
	via    string
	args   []string
	host   readahead.Host
	stdout io.Writer
}

// parseInterleaved lets flags follow the arguments (readahead get sda -via sysfs), which the
// flag package alone stops at.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func checkArgs(args []string, minArgs, maxArgs int) error {
	switch {
	case len(args) < minArgs:
		return errors.New("missing arguments")
	case len(args) > maxArgs:
		return fmt.Errorf("unexpected arguments: %s", strings.Join(args[maxArgs:], " "))
	}
	return nil
}

func hostFor(via string, p readahead.Paths) (readahead.Host, error) {
	switch via {
	case "auto":
		return readahead.NewHost(p), nil
	case "ioctl":
		return readahead.IoctlHost{DevDir: p.DevDir()}, nil
	case "sysfs":
		return readahead.SysfsHost{SysDir: p.SysDir()}, nil
	}
	return nil, fmt.Errorf("-via %q: want ioctl, sysfs or auto", via)
}

func runGet(inv *invocation) error {
	d, err := inv.device(inv.args[0])
	if err != nil {
		return err
	}
	kib, err := inv.host.ReadAhead(d.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "%s: %d sectors (%d KiB)\n", d.Name, kib*2, kib)
	return nil
}

func runSet(inv *invocation) error {
	kib, err := strconv.ParseInt(inv.args[1], 10, 64)
	if err != nil || kib < 0 || kib > v1alpha1.MaxReadAheadKiB {
		return usageError{fmt.Sprintf("KiB must be a whole number from 0 to %d, not %q", v1alpha1.MaxReadAheadKiB, inv.args[1])}
	}
	d, err := inv.device(inv.args[0])
	if err != nil {
		return err
	}
	c, err := readahead.Set(inv.host, d.ID(), kib)
	if err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "%s: %d KiB -> %d KiB; kernel kept %d KiB (%d sectors)", d.Name, c.BeforeKiB, c.RequestedKiB, c.KeptKiB, c.KeptKiB*2)
	if c.KeptKiB != c.RequestedKiB {
		fmt.Fprintf(inv.stdout, ", rounded down to whole %d KiB pages", os.Getpagesize()/1024)
	}
	fmt.Fprintln(inv.stdout)
	return nil
}

// device finds DEVICE in the inventory and returns the device that holds its read-ahead, saying
// so when that is a partition's disk.
func (inv *invocation) device(arg string) (*readahead.Device, error) {
	devices, err := readahead.ReadInventory(readahead.Paths{Root: inv.root})
	if err != nil {
		return nil, err
	}
	d, ok := lookup(devices, inv.root, arg)
	if !ok {
		return nil, fmt.Errorf("no block device %q on this host ('readahead report' lists them)", arg)
	}
	whole, ok := devices.WholeDevice(d)
	if !ok {
		return nil, fmt.Errorf("%s is a partition of %s, which is not listed", d.Name, d.Parent)
	}
	if whole != d {
		fmt.Fprintf(inv.stdout, "%s is a partition of %s; read-ahead belongs to the disk\n", d.Name, whole.Name)
	}
	return whole, nil
}

func lookup(inv *readahead.Inventory, root, arg string) (*readahead.Device, bool) {
	if name, ok := strings.CutPrefix(arg, "/dev/mapper/"); ok {
		if d, ok := inv.DeviceByDMName(name); ok {
			return d, true
		}
	}
	if d, ok := inv.Device(strings.TrimPrefix(arg, "/dev/")); ok {
		return d, true
	}
	if !strings.HasPrefix(arg, "/") {
		return nil, false
	}
	// Any other path (/dev/disk/by-id/…, /dev/vg/lv) leads to a device node by its number.
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(root, arg), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return nil, false
	}
	return inv.DeviceByNumber(readahead.DevNum{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)})
}

func runReport(inv *invocation) error {
	devices, err := readahead.ReadInventory(readahead.Paths{Root: inv.root})
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(inv.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "DEVICE\tTYPE\tMAJ:MIN\tRA-SECTORS\tRA-KiB\tROT\tSIZE-BYTES\tNOTE")
	for i := range devices.Devices {
		d := &devices.Devices[i]
		ra, sectors := "-", "-"
		if d.ReadAheadKiB >= 0 {
			ra, sectors = strconv.FormatInt(d.ReadAheadKiB, 10), strconv.FormatInt(d.ReadAheadKiB*2, 10)
		}
		rotational := "0"
		if d.Rotational {
			rotational = "1"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.Name, d.Kind, d.Dev, sectors, ra, rotational, d.SizeBytes, note(d))
	}
	return w.Flush()
}

func note(d *readahead.Device) string {
	var parts []string
	if d.Kind == readahead.KindPartition {
		parts = append(parts, "partition of "+d.Parent)
	}
	if d.DMName != "" {
		parts = append(parts, d.DMName)
	}
	if len(d.Slaves) > 0 {
		parts = append(parts, "on "+strings.Join(d.Slaves, ","))
	}
	for _, flag := range []struct {
		set  bool
		name string
	}{{d.Removable, "removable"}, {d.Hidden, "hidden"}, {d.ReadOnly, "read-only"}} {
		if flag.set {
			parts = append(parts, flag.name)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
