package probecmd

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// config is the parsed command line.
type config struct {
	targets []probe.Target
	devices []cli.Named
	output  string
	opts    probe.Options
}

func parseArgs(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{output: "table", opts: probe.DefaultOptions()}
	fs := newFlagSet(cfg, stderr)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; targets are given with --target", fs.Arg(0))
	}
	if len(cfg.targets) == 0 {
		return nil, errors.New("no target: give at least one --target directory, for example --target /dev/shm")
	}
	if cfg.output != "table" && cfg.output != "json" {
		return nil, fmt.Errorf("unknown output format %q: use table or json", cfg.output)
	}
	return cfg, nil
}

func newFlagSet(cfg *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("node-agent probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(fs, stderr) }
	o := &cfg.opts
	cli.Targets(fs, &cfg.targets)
	cli.Devices(fs, &cfg.devices)
	fs.StringVar(&cfg.output, "o", cfg.output, "output `format`: table or json")
	fs.StringVar(&cfg.output, "output", cfg.output, "output `format`: table or json (same as -o)")
	fs.DurationVar(&o.MaxDuration, "timeout", o.MaxDuration, "hard time limit of the whole run")
	cli.Bytes(fs, &o.MaxTotalWriteBytes, "max-total-write-bytes", "refuse a run that would write more than this, summed over targets")
	cli.Bytes(fs, &o.SeqWriteBytes, "seq-write-bytes", "size of the sequential-write file")
	cli.Bytes(fs, &o.SeqWriteBlockBytes, "seq-write-block-bytes", "size of each sequential write (dd bs)")
	cli.Bytes(fs, &o.ColdReadBlockBytes, "cold-read-block-bytes", "size of each read of the cold read")
	fs.DurationVar(&o.ColdReadMaxDuration, "cold-read-max-duration", o.ColdReadMaxDuration, "time cap of the cold read")
	cli.Bytes(fs, &o.DirectWriteBytes, "direct-write-bytes", "size of the O_DIRECT write (multiple of 4096)")
	cli.Bytes(fs, &o.DirectWriteBlockBytes, "direct-write-block-bytes", "size of each O_DIRECT write (multiple of 4096)")
	fs.DurationVar(&o.DirectWriteMaxDuration, "direct-write-max-duration", o.DirectWriteMaxDuration, "time cap of the O_DIRECT write")
	cli.Churn(fs, o, "small-file workload as `size:files` (for example 5000:2000 or 5M:20); repeat for several; replaces the defaults")
	fs.DurationVar(&o.ChurnMaxDuration, "churn-max-duration", o.ChurnMaxDuration, "time cap of each pass of each churn workload")
	cli.TempFiles(fs, o, "temporary-file workload as `size:files` (for example 4Mi:32 or 20Mi:8); repeat for several; replaces the defaults")
	cli.Bytes(fs, &o.TempFileBlockBytes, "temp-file-block-bytes", "size of each write and pread of the temporary-file workloads")
	fs.DurationVar(&o.TempFileMaxDuration, "temp-file-max-duration", o.TempFileMaxDuration, "time cap of each temporary-file workload on each filesystem")
	cli.Bytes(fs, &o.FsyncWriteBytes, "fsync-write-bytes", "size of each write of the fdatasync check")
	fs.IntVar(&o.FsyncSamples, "fsync-samples", o.FsyncSamples, "number of write+fdatasync pairs")
	fs.DurationVar(&o.FsyncMaxDuration, "fsync-max-duration", o.FsyncMaxDuration, "time cap of the fdatasync check")
	cli.Bytes(fs, &o.DeviceReadBlockBytes, "device-read-block-bytes", "size of each raw device read")
	cli.Bytes(fs, &o.DeviceReadMaxBytes, "device-read-max-bytes", "byte cap of the raw device read")
	fs.DurationVar(&o.DeviceReadDuration, "device-read-duration", o.DeviceReadDuration, "duration of the raw device read")
	fs.StringVar(&o.SysfsRoot, "sysfs-root", o.SysfsRoot, "where sysfs is mounted")
	fs.StringVar(&o.ProcfsRoot, "procfs-root", o.ProcfsRoot, "where procfs is mounted")
	return fs
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage: node-agent probe --target [name=]DIR [--target …] [--device [target=]DEV] [-o table|json] [options]

Measures each directory's storage the way dd, hdparm and etcd's disk check do: sequential write
(buffered and with fdatasync), O_DIRECT write, cold read, small-file churn, fdatasync latency and,
with --device, a raw buffered device read; and as a database server's temporary files use it:
unlinked files written and read back in 64 KiB calls, on a tmpfs target also on a tmpfs of the
probe's own with large pages (huge=within_size, which needs CAP_SYS_ADMIN). Sizes accept
Kubernetes quantities (128Mi, 5M, 5000).

Options:
`)
	fs.PrintDefaults()
}
