package runcmd

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/node-agent/probectl"
	"github.com/dbtune/scratch-operator/node-agent/readaheadctl"
	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
)

// Environment variables read when the matching flag is not given; a DaemonSet sets them from the
// downward API (spec.nodeName, metadata.namespace).
const (
	envNodeName     = "NODE_NAME"
	envPodNamespace = "POD_NAMESPACE"
)

// options is the parsed command line.
type options struct {
	cfg        probectl.Config
	kubeconfig string
	zap        zap.Options
	// readAhead configures ReadAheadPolicy enforcement; it is off with --read-ahead=false, which
	// lets the agent run without CAP_SYS_ADMIN, the host's /dev or a writable /sys.
	readAhead      bool
	hostRoot       string
	hostMountInfo  string
	readAheadState string
	// scratchUsage samples the RAM scratch volumes of the node's pods; its NodeName is cfg's.
	scratchUsage scratchusage.Config
}

// parseArgs parses args, with getenv supplying the downward-API defaults.
func parseArgs(args []string, stderr io.Writer, getenv func(string) string) (*options, error) {
	o := &options{cfg: probectl.Config{Options: probe.DefaultOptions()}}
	var devices []cli.Named
	fs := newFlagSet(o, &devices, stderr, getenv)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; targets are given with --target", fs.Arg(0))
	}
	if o.cfg.NodeName == "" {
		return nil, fmt.Errorf("no node name: give --node-name or set %s from the downward API (fieldRef spec.nodeName)", envNodeName)
	}
	if len(o.cfg.Targets) == 0 {
		return nil, errors.New("no target: give at least one --target, for example --target tmpfs=/probe/tmpfs --target disk=/probe/disk")
	}
	if err := cli.AttachDevices(o.cfg.Targets, devices, o.cfg.Options); err != nil {
		return nil, err
	}
	o.scratchUsage.NodeName = o.cfg.NodeName
	return o, errors.Join(checkPositive(&o.cfg), checkScratchUsage(&o.scratchUsage))
}

// checkPositive rejects zeros that probectl.Config would read as "use the default": on a command line
// a zero is a mistake, not a request for the default.
func checkPositive(c *probectl.Config) error {
	var errs []error
	if c.Period <= 0 {
		errs = append(errs, fmt.Errorf("--period must be positive, got %s", c.Period))
	}
	if c.Jitter <= 0 {
		errs = append(errs, fmt.Errorf("--jitter must be a positive fraction of the period, got %g", c.Jitter))
	}
	if c.MaxProbingNodes < 1 {
		errs = append(errs, fmt.Errorf("--max-probing-nodes must be at least 1, got %d", c.MaxProbingNodes))
	}
	if c.LeaseDuration <= 0 {
		errs = append(errs, fmt.Errorf("--lease-duration must be positive, got %s", c.LeaseDuration))
	}
	return errors.Join(errs...)
}

// checkScratchUsage, like checkPositive, refuses the zeros scratchusage.Config reads as defaults.
func checkScratchUsage(c *scratchusage.Config) error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("--scratch-sample-interval must be positive, got %s", c.Interval))
	}
	if c.Window <= 0 {
		errs = append(errs, fmt.Errorf("--scratch-peak-window must be positive, got %s", c.Window))
	}
	if c.ReportInterval <= 0 {
		errs = append(errs, fmt.Errorf("--scratch-report-interval must be positive, got %s", c.ReportInterval))
	}
	if c.KubeletRoot == "" {
		errs = append(errs, errors.New("--kubelet-root must not be empty"))
	}
	return errors.Join(errs...)
}

func newFlagSet(o *options, devices *[]cli.Named, stderr io.Writer, getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("node-agent run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(fs, stderr) }
	c := &o.cfg
	fs.StringVar(&c.NodeName, "node-name", getenv(envNodeName), "name of the Node the agent runs on; $"+envNodeName+" when not given")
	cli.Targets(fs, &c.Targets)
	cli.Devices(fs, devices)
	fs.DurationVar(&c.Period, "period", probectl.DefaultPeriod, "time between scheduled runs; the first run starts at once")
	fs.Float64Var(&c.Jitter, "jitter", probectl.DefaultJitter, "fraction of the period added at random to each wait")
	fs.IntVar(&c.MaxProbingNodes, "max-probing-nodes", probectl.DefaultMaxProbingNodes, "how many nodes may probe at the same time, cluster-wide")
	fs.StringVar(&c.LeaseNamespace, "lease-namespace", orDefault(getenv(envPodNamespace), probectl.DefaultLeaseNamespace),
		"namespace of the probe slot Leases; $"+envPodNamespace+" when set, else "+probectl.DefaultLeaseNamespace)
	fs.StringVar(&c.LeasePrefix, "lease-name-prefix", probectl.DefaultLeasePrefix, "the slot Leases are named PREFIX-0 … PREFIX-(N-1)")
	fs.DurationVar(&c.LeaseDuration, "lease-duration", probectl.DefaultLeaseDuration, "how long a slot stays taken after its holder stopped renewing it")
	fs.StringVar(&c.MetricsAddr, "metrics-bind-address", probectl.DefaultMetricsAddr, "address of the Prometheus metrics endpoint; 0 disables it")
	fs.StringVar(&c.HealthProbeAddr, "health-probe-bind-address", probectl.DefaultHealthProbeAddr, "address of /healthz and /readyz; 0 disables them")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file, when not running in a pod (default $KUBECONFIG, then the in-cluster config)")
	fs.BoolVar(&o.readAhead, "read-ahead", true, "apply ReadAheadPolicies to this node's block devices (needs CAP_SYS_ADMIN, the host's /dev and a writable /sys)")
	fs.StringVar(&o.hostRoot, "host-root", "/", "where the host's /sys and /dev are visible (for example /host when they are mounted there)")
	fs.StringVar(&o.hostMountInfo, "host-mountinfo", "", "the host's mount table, for policies that select devices by mount path (default <host-root>/proc/1/mountinfo when that exists, else /proc/self/mountinfo)")
	fs.StringVar(&o.readAheadState, "read-ahead-state-dir", readaheadctl.DefaultStateDir, "host directory (a hostPath under /run) where original read-ahead values are saved before the first change")
	scratchUsageFlags(fs, &o.scratchUsage)
	probeFlags(fs, &c.Options)
	o.zap.BindFlags(fs)
	return fs
}

func scratchUsageFlags(fs *flag.FlagSet, c *scratchusage.Config) {
	fs.StringVar(&c.KubeletRoot, "kubelet-root", scratchusage.DefaultKubeletRoot,
		"where the kubelet's root directory is visible; its pods/ subdirectory must be mounted with HostToContainer propagation (read-only is enough)")
	fs.DurationVar(&c.Interval, "scratch-sample-interval", scratchusage.DefaultInterval, "time between two samples of the pods' RAM scratch volumes (one statfs per volume)")
	fs.DurationVar(&c.Window, "scratch-peak-window", scratchusage.DefaultWindow, "span of the sliding-window peak of dbtune_scratch_volume_peak_bytes")
	fs.DurationVar(&c.ReportInterval, "scratch-report-interval", scratchusage.DefaultReportInterval,
		"shortest time between two writes of the volumes' figures to the node's NodeIOProfile (a volume that fills up is written at once)")
	fs.BoolVar(&c.Pages.Enabled, "large-pages", true,
		"give each RAM scratch volume's tmpfs the pages its ScratchVolume asks for (spec.largePages) by reconfiguring it in place; needs CAP_SYS_ADMIN. With false the volumes keep the kubelet's 4 KiB pages and are reported Disabled")
}

// probeFlags are the bounds of a run an operator may want to change on a DaemonSet; the rest keep
// probe.DefaultOptions.
func probeFlags(fs *flag.FlagSet, po *probe.Options) {
	fs.DurationVar(&po.MaxDuration, "probe-timeout", po.MaxDuration, "hard time limit of one run")
	cli.Bytes(fs, &po.MaxTotalWriteBytes, "max-total-write-bytes", "refuse a run that would write more than this, summed over targets")
	cli.Bytes(fs, &po.SeqWriteBytes, "seq-write-bytes", "size of the sequential-write file")
	cli.Bytes(fs, &po.SeqWriteBlockBytes, "seq-write-block-bytes", "size of each sequential write (dd bs)")
	cli.Bytes(fs, &po.DirectWriteBytes, "direct-write-bytes", "size of the O_DIRECT write (multiple of 4096)")
	cli.Bytes(fs, &po.DirectWriteBlockBytes, "direct-write-block-bytes", "size of each O_DIRECT write (multiple of 4096)")
	cli.Churn(fs, po, "small-file workload as `size:files` (5000:2000, 5M:20); repeat for several; replaces the defaults")
	cli.TempFiles(fs, po, "temporary-file workload as `size:files` (4Mi:32, 20Mi:8); repeat for several; replaces the defaults")
	fs.IntVar(&po.FsyncSamples, "fsync-samples", po.FsyncSamples, "number of write+fdatasync pairs")
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage: node-agent run --node-name NODE --target [name=]DIR [--target …] [options]

Runs the node agent of a DaemonSet: measures the targets at start, every --period and whenever the
node's NodeIOProfile is annotated with dbtune.io/probe-requested, writes the results into that
NodeIOProfile and serves them as Prometheus metrics. At most --max-probing-nodes nodes probe at once.
It also samples the RAM scratch volumes that ScratchVolumes injected into the node's pods, every
--scratch-sample-interval, and serves their use and peaks as metrics, and gives each of them the
pages its ScratchVolume asks for (--large-pages).

Options:
`)
	fs.PrintDefaults()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
