package probecmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// config is the parsed command line.
type config struct {
	targets []probe.Target
	devices []namedValue
	output  string
	opts    probe.Options
}

// namedValue is a flag value of the form [name=]value.
type namedValue struct{ name, value string }

// splitNamed splits "name=value"; a value without a name, or whose part before "=" contains a
// slash (a path that happens to contain "="), has an empty name.
func splitNamed(s string) namedValue {
	if name, value, ok := strings.Cut(s, "="); ok && name != "" && !strings.Contains(name, "/") {
		return namedValue{name: name, value: value}
	}
	return namedValue{value: s}
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
	fs.Func("target", "directory to probe, as `[name=]path`; repeat for several (name defaults to tmpfs or disk)", func(s string) error {
		nv := splitNamed(s)
		if nv.value == "" {
			return errors.New("empty path")
		}
		cfg.targets = append(cfg.targets, probe.Target{Name: nv.name, Path: nv.value})
		return nil
	})
	fs.Func("device", "block device to read raw like hdparm -t, as `[target=]/dev/name`; without a target name it goes to the only disk target", func(s string) error {
		cfg.devices = append(cfg.devices, splitNamed(s))
		return nil
	})
	fs.StringVar(&cfg.output, "o", cfg.output, "output `format`: table or json")
	fs.StringVar(&cfg.output, "output", cfg.output, "output `format`: table or json (same as -o)")
	fs.DurationVar(&o.MaxDuration, "timeout", o.MaxDuration, "hard time limit of the whole run")
	fs.Int64Var(&o.MaxTotalWriteBytes, "max-total-write-bytes", o.MaxTotalWriteBytes, "refuse a run that would write more than this, summed over targets")
	bytesVar(fs, &o.SeqWriteBytes, "seq-write-bytes", "size of the sequential-write file")
	bytesVar(fs, &o.SeqWriteBlockBytes, "seq-write-block-bytes", "size of each sequential write (dd bs)")
	bytesVar(fs, &o.ColdReadBlockBytes, "cold-read-block-bytes", "size of each read of the cold read")
	fs.DurationVar(&o.ColdReadMaxDuration, "cold-read-max-duration", o.ColdReadMaxDuration, "time cap of the cold read")
	bytesVar(fs, &o.DirectWriteBytes, "direct-write-bytes", "size of the O_DIRECT write (multiple of 4096)")
	bytesVar(fs, &o.DirectWriteBlockBytes, "direct-write-block-bytes", "size of each O_DIRECT write (multiple of 4096)")
	fs.DurationVar(&o.DirectWriteMaxDuration, "direct-write-max-duration", o.DirectWriteMaxDuration, "time cap of the O_DIRECT write")
	fs.Var(&churnFlag{opts: o}, "churn", "small-file workload as `size:files` (for example 5000:2000 or 5M:20); repeat for several; replaces the defaults")
	fs.DurationVar(&o.ChurnMaxDuration, "churn-max-duration", o.ChurnMaxDuration, "time cap of each pass of each churn workload")
	bytesVar(fs, &o.FsyncWriteBytes, "fsync-write-bytes", "size of each write of the fdatasync check")
	fs.IntVar(&o.FsyncSamples, "fsync-samples", o.FsyncSamples, "number of write+fdatasync pairs")
	fs.DurationVar(&o.FsyncMaxDuration, "fsync-max-duration", o.FsyncMaxDuration, "time cap of the fdatasync check")
	bytesVar(fs, &o.DeviceReadBlockBytes, "device-read-block-bytes", "size of each raw device read")
	bytesVar(fs, &o.DeviceReadMaxBytes, "device-read-max-bytes", "byte cap of the raw device read")
	fs.DurationVar(&o.DeviceReadDuration, "device-read-duration", o.DeviceReadDuration, "duration of the raw device read")
	fs.StringVar(&o.SysfsRoot, "sysfs-root", o.SysfsRoot, "where sysfs is mounted")
	fs.StringVar(&o.ProcfsRoot, "procfs-root", o.ProcfsRoot, "where procfs is mounted")
	return fs
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage: node-agent probe --target [name=]DIR [--target …] [--device [target=]DEV] [-o table|json] [options]

Measures each directory's storage the way dd, hdparm and etcd's disk check do: sequential write
(buffered and with fdatasync), O_DIRECT write, cold read, small-file churn, fdatasync latency and,
with --device, a raw buffered device read. Sizes accept Kubernetes quantities (128Mi, 5M, 5000).

Options:
`)
	fs.PrintDefaults()
}

// bytesVar registers a byte-size flag that accepts Kubernetes quantities, the unit notation users
// of this project already write in manifests.
func bytesVar(fs *flag.FlagSet, p *int64, name, help string) {
	fs.Var(&bytesFlag{p: p}, name, help+" (bytes, or a quantity such as 128Mi)")
}

type bytesFlag struct{ p *int64 }

func (b *bytesFlag) String() string {
	if b.p == nil {
		return ""
	}
	return strconv.FormatInt(*b.p, 10)
}

func (b *bytesFlag) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b.p = n
	return nil
}

func parseBytes(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: use bytes or a quantity such as 128Mi or 5M", s)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive whole number of bytes", s)
	}
	return n, nil
}

// churnFlag collects --churn values; the first one replaces the default list.
type churnFlag struct {
	opts *probe.Options
	set  bool
}

func (c *churnFlag) String() string {
	if c.opts == nil {
		return ""
	}
	parts := make([]string, 0, len(c.opts.Churn))
	for _, s := range c.opts.Churn {
		parts = append(parts, fmt.Sprintf("%d:%d", s.FileBytes, s.Files))
	}
	return strings.Join(parts, ",")
}

func (c *churnFlag) Set(s string) error {
	size, files, ok := strings.Cut(s, ":")
	if !ok {
		return fmt.Errorf("%q is not size:files", s)
	}
	n, err := parseBytes(size)
	if err != nil {
		return err
	}
	count, err := strconv.Atoi(files)
	if err != nil || count <= 0 {
		return fmt.Errorf("%q: the file count must be a positive integer", s)
	}
	if !c.set {
		c.opts.Churn, c.set = nil, true
	}
	c.opts.Churn = append(c.opts.Churn, probe.ChurnSize{FileBytes: n, Files: count})
	return nil
}
