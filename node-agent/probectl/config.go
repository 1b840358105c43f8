package probectl

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/node-agent/nodeprofile"
	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Defaults of a Config field left at its zero value.
const (
	DefaultPeriod          = 6 * time.Hour
	DefaultJitter          = 0.1
	DefaultMaxProbingNodes = 1
	DefaultLeaseNamespace  = "dbtune-system"
	DefaultLeasePrefix     = "dbtune-probe-slot"
	DefaultLeaseDuration   = 30 * time.Second
	DefaultMetricsAddr     = ":8080"
	DefaultHealthProbeAddr = ":8081"
)

// maxProbingNodesLimit keeps the slot scan (one GET per slot per attempt) cheap; past a few dozen
// simultaneous probes the limit protects nothing anyway.
const maxProbingNodesLimit = 100

// Config is everything the agent of one node needs. Only NodeName and Targets are required.
type Config struct {
	// NodeName is the node the agent runs on, from the downward API (spec.nodeName). The agent
	// writes the NodeIOProfile of that name and sees no other.
	NodeName string
	// Targets are the directories to probe, usually a tmpfs and a disk mounted into the pod.
	Targets []probe.Target
	// Options bound each run; the zero value means probe.DefaultOptions().
	Options probe.Options

	// Period is the time between scheduled runs (default 6h); the first run starts at once.
	Period time.Duration
	// Jitter is the fraction of Period added at random to each wait (default 0.1: 6h to 6h36m), so
	// that agents started together drift apart.
	Jitter float64

	// MaxProbingNodes is how many nodes may probe at the same time (default 1): a shared storage
	// backend (Ceph, a SAN, a cloud volume pool) must not be measured by every node at once.
	MaxProbingNodes int
	// LeaseNamespace holds the slot Leases (default dbtune-system). It must exist.
	LeaseNamespace string
	// LeasePrefix names the slot Leases <prefix>-0 … <prefix>-(MaxProbingNodes-1). Agents that
	// share a prefix and namespace share the limit, so they must agree on MaxProbingNodes.
	LeasePrefix string
	// LeaseDuration is how long a slot stays taken after its holder stopped renewing it (default
	// 30s); the holder renews it every third of that while it probes.
	LeaseDuration time.Duration
	// SlotBackoff paces the attempts to take a slot while all are held.
	SlotBackoff wait.Backoff
	// WriteBackoff paces the retries of a status write while the API server cannot be reached.
	WriteBackoff wait.Backoff

	// MetricsAddr and HealthProbeAddr are the manager's listen addresses (defaults :8080 and
	// :8081; "0" disables). They are used by ManagerOptions.
	MetricsAddr     string
	HealthProbeAddr string

	// Prober runs the probes; nil means HostProber. Tests replace it to observe or stage runs.
	Prober Prober
	// Registerer receives the probe metrics; nil means controller-runtime's metrics.Registry,
	// which the manager serves on MetricsAddr.
	Registerer prometheus.Registerer
}

// Validate reports every problem with cfg at once, after filling in the defaults; Setup refuses a
// Config that it rejects.
func (cfg Config) Validate() error {
	_, err := cfg.complete()
	return err
}

// complete returns cfg with its defaults filled in, or every problem with it at once.
func (cfg Config) complete() (Config, error) {
	if reflect.ValueOf(cfg.Options).IsZero() {
		cfg.Options = probe.DefaultOptions()
	}
	cfg.Period = orDuration(cfg.Period, DefaultPeriod)
	if cfg.Jitter == 0 {
		cfg.Jitter = DefaultJitter
	}
	if cfg.MaxProbingNodes == 0 {
		cfg.MaxProbingNodes = DefaultMaxProbingNodes
	}
	cfg.LeaseNamespace = orString(cfg.LeaseNamespace, DefaultLeaseNamespace)
	cfg.LeasePrefix = orString(cfg.LeasePrefix, DefaultLeasePrefix)
	cfg.LeaseDuration = orDuration(cfg.LeaseDuration, DefaultLeaseDuration)
	cfg.SlotBackoff = orBackoff(cfg.SlotBackoff, wait.Backoff{Duration: 2 * time.Second, Factor: 2, Jitter: 0.2, Steps: math.MaxInt32, Cap: time.Minute})
	cfg.WriteBackoff = orBackoff(cfg.WriteBackoff, wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: math.MaxInt32, Cap: 2 * time.Minute})
	cfg.MetricsAddr = orString(cfg.MetricsAddr, DefaultMetricsAddr)
	cfg.HealthProbeAddr = orString(cfg.HealthProbeAddr, DefaultHealthProbeAddr)
	if cfg.Prober == nil {
		cfg.Prober = HostProber
	}
	if cfg.Registerer == nil {
		cfg.Registerer = metrics.Registry
	}
	err := cfg.validate()
	return cfg, err
}

func (cfg *Config) validate() error {
	var errs []error
	if cfg.NodeName == "" {
		errs = append(errs, errors.New("the node name is empty: set it from the downward API (spec.nodeName)"))
	} else if msgs := validation.IsDNS1123Subdomain(cfg.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("node name %q is not a valid object name: %v", cfg.NodeName, msgs))
	}
	errs = append(errs, cfg.validateTargets())
	if err := cfg.Options.Validate(len(cfg.Targets)); err != nil {
		errs = append(errs, fmt.Errorf("invalid probe options: %w", err))
	}
	if cfg.Period < time.Minute {
		errs = append(errs, fmt.Errorf("the period must be at least 1m, got %s", cfg.Period))
	}
	if cfg.Jitter < 0 || cfg.Jitter > 1 {
		errs = append(errs, fmt.Errorf("the jitter must be a fraction of the period between 0 and 1, got %g", cfg.Jitter))
	}
	errs = append(errs, cfg.validateSlots())
	return errors.Join(errs...)
}

func (cfg *Config) validateTargets() error {
	if len(cfg.Targets) == 0 {
		return errors.New("no target: give at least one directory to probe")
	}
	var errs []error
	names := map[string]bool{}
	for _, t := range cfg.Targets {
		if !filepath.IsAbs(t.Path) {
			errs = append(errs, fmt.Errorf("target path %q is not absolute", t.Path))
		}
		if t.Name != "" && names[t.Name] {
			errs = append(errs, fmt.Errorf("two targets are named %q; target names must be unique", t.Name))
		}
		names[t.Name] = true
	}
	// The status keeps one churn result per file size: two workloads of one size could not both
	// be written.
	sizes := map[int64]bool{}
	for _, c := range cfg.Options.Churn {
		if sizes[c.FileBytes] {
			errs = append(errs, fmt.Errorf("two churn workloads use %d-byte files; give each size once", c.FileBytes))
		}
		sizes[c.FileBytes] = true
	}
	return errors.Join(errs...)
}

func (cfg *Config) validateSlots() error {
	var errs []error
	if cfg.MaxProbingNodes < 1 || cfg.MaxProbingNodes > maxProbingNodesLimit {
		errs = append(errs, fmt.Errorf("the number of nodes probing at once must be between 1 and %d, got %d",
			maxProbingNodesLimit, cfg.MaxProbingNodes))
	}
	if msgs := validation.IsDNS1123Label(cfg.LeaseNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("lease namespace %q is not a valid namespace name: %v", cfg.LeaseNamespace, msgs))
	}
	last := slotName(cfg.LeasePrefix, max(cfg.MaxProbingNodes, 1)-1)
	if msgs := validation.IsDNS1123Subdomain(last); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("lease name prefix %q does not make valid Lease names (%s): %v", cfg.LeasePrefix, last, msgs))
	}
	if cfg.LeaseDuration < 3*time.Second {
		errs = append(errs, fmt.Errorf("the lease duration must be at least 3s (it is renewed every third), got %s", cfg.LeaseDuration))
	}
	return errors.Join(errs...)
}

// slotName is the name of the i-th slot Lease.
func slotName(prefix string, i int) string { return prefix + "-" + strconv.Itoa(i) }

// ManagerOptions are the options of the agent's own manager: no leader election (every node's
// agent works on its own node), the restricted cache, and the configured listen addresses.
func ManagerOptions(cfg Config, scheme *runtime.Scheme) manager.Options {
	return manager.Options{
		Scheme:                 scheme,
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: orString(cfg.MetricsAddr, DefaultMetricsAddr)},
		HealthProbeBindAddress: orString(cfg.HealthProbeAddr, DefaultHealthProbeAddr),
		Cache:                  nodeprofile.CacheOptions(cfg.NodeName),
	}
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func orBackoff(b, def wait.Backoff) wait.Backoff {
	if b.Duration == 0 {
		return def
	}
	return b
}
