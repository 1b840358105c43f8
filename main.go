// Command manager runs the dbtune scratch-operator: the ScratchVolume controller and the
// ReadAheadPolicy status aggregation (the node agents apply the policies themselves).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"
	_ "time/tzdata" // maintenance windows name IANA time zones; the manager image has no zoneinfo

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/api/buildinfo"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
	"github.com/dbtune/scratch-operator/controllers/readaheadstatus"
)

// version and revision are set at build time with -ldflags "-X main.version=… -X main.revision=…"
// (make images).
var version, revision = "dev", ""

// build is this binary's build, printed by --version and exported as dbtune_build_info.
func build() buildinfo.Info {
	return buildinfo.Info{Component: "manager", Version: version, Revision: revision}
}

type options struct {
	metricsAddr, probeAddr string
	// pprofAddr serves net/http/pprof, off when empty: profiles show where a large fleet's
	// memory goes (docs/tuning.md).
	pprofAddr        string
	leaderElect      bool
	leaderElectionNS string
	// leaseDuration, renewDeadline and retryPeriod time the leader election (controller-runtime's
	// defaults: 15 s, 10 s, 2 s).
	leaseDuration, renewDeadline, retryPeriod time.Duration
	namespaces                                string
	concurrency                               int
	// syncPeriod is how often the informers resync; 0 keeps controller-runtime's default.
	syncPeriod time.Duration
	// qps and burst bound the manager's requests to the API server on the client side; qps 0
	// leaves them to the server's API Priority and Fairness (see docs/tuning.md).
	qps         float64
	burst       int
	showVersion bool
	// windows are the default maintenance windows (--maintenance-window, repeatable).
	windows []v1alpha1.MaintenanceWindow
	// maxInFlight and progressDeadline pace the rollouts of the ScratchVolumes that do not.
	maxInFlight      intstr.IntOrString
	progressDeadline time.Duration
}

func main() {
	opts := options{}
	bindFlags(flag.CommandLine, &opts)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if opts.showVersion {
		fmt.Println(build())
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if percent, set := collectSooner(os.LookupEnv); set {
		ctrl.Log.Info("Collecting garbage sooner than the Go default; GOGC overrides it", "GOGC", percent)
	}
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		ctrl.Log.Error(err, "Manager stopped")
		os.Exit(1)
	}
}

// gcPercent is the garbage collector's target when the environment sets no GOGC: a collection
// once the heap has grown by a quarter over what the last one left live, where the Go default
// waits until it has doubled. What the manager allocates at fleet scale is mostly short-lived (the
// StatefulSets its informers decode whole before trimming them, the reads and applies of each
// sync), while what stays live is small: the caches and remembered decisions, about 40 MiB at
// 5000 StatefulSets. At the default the heap, and the resident set with it, grew to about twice
// that between collections; docs/benchmarks.md ("The manager at fleet scale") gives the peak
// resident set and the CPU at each setting measured.
const gcPercent = 25

// collectSooner sets the collector's target to gcPercent unless lookupEnv finds GOGC, which then
// keeps its meaning (GOGC=100 is the Go default, GOGC=off turns collection off), and says what it
// set.
func collectSooner(lookupEnv func(string) (string, bool)) (percent int, set bool) {
	if _, ok := lookupEnv("GOGC"); ok {
		return 0, false
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent, true
}

// bindFlags registers the manager's flags on fs, to set opts.
func bindFlags(fs *flag.FlagSet, opts *options) {
	fs.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; 0 disables it.")
	fs.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&opts.pprofAddr, "pprof-bind-address", "", "Address of the net/http/pprof endpoints (/debug/pprof/); empty disables them.")
	fs.BoolVar(&opts.leaderElect, "leader-elect", false, "Elect a leader so that only one of several replicas reconciles.")
	fs.StringVar(&opts.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's namespace).")
	fs.DurationVar(&opts.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long a leader's Lease stays valid after its last renewal. A standby takes over once it has seen the Lease unrenewed for this long, checking every --leader-election-retry-period: "+
			"a leader that dies is replaced within about this plus two retry periods.")
	fs.DurationVar(&opts.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew its Lease before it stops reconciling and exits; shorter than the lease duration.")
	fs.DurationVar(&opts.retryPeriod, "leader-election-retry-period", 2*time.Second,
		"How often the leader renews its Lease and a standby tries to take it.")
	fs.StringVar(&opts.namespaces, "namespaces", "", "Comma-separated namespaces to watch; empty watches all.")
	fs.IntVar(&opts.concurrency, "max-concurrent-reconciles", 4, "ScratchVolumes reconciled in parallel, and StatefulSets synced at once across them.")
	fs.DurationVar(&opts.syncPeriod, "sync-period", 0, "How often every cached object is handed to the controllers again; 0 keeps controller-runtime's default (10h).")
	fs.Float64Var(&opts.qps, "kube-api-qps", 0, "Client-side limit of the manager's requests per second to the API server; 0 sets none and leaves queuing to the server's API Priority and Fairness.")
	fs.IntVar(&opts.burst, "kube-api-burst", 0, "Requests the manager may send at once above --kube-api-qps; 0 means twice the QPS. Ignored when --kube-api-qps is 0.")
	fs.BoolVar(&opts.showVersion, "version", false, "Print the version and exit.")
	opts.maxInFlight = intstr.FromString("25%")
	fs.Func("max-in-flight", "How many of a ScratchVolume's target StatefulSets may roll out at once, when its spec.rollout.maxInFlight says nothing: "+
		"a count (3) or a share of its targets (25%, rounded up). The next ones are changed once fewer are rolling out or not ready. (default 25%)",
		func(s string) error {
			v, err := controllers.ParseMaxInFlight(s)
			opts.maxInFlight = v
			return err
		})
	fs.DurationVar(&opts.progressDeadline, "progress-deadline", 10*time.Minute,
		"How long a target StatefulSet may take to roll out with all pods ready before a ScratchVolume's rollout stops, when its spec.rollout.progressDeadline says nothing.")
	fs.Func("maintenance-window", "A default maintenance window, \"[DAYS ]HH:MM+DURATION[ TIMEZONE]\" such as \"Sat,Sun 02:00+3h Europe/Berlin\": "+
		"a change nobody wrote in a ScratchVolume (a new release renders its configuration differently) is applied then, unless the "+
		"ScratchVolume declares its own spec.changes.maintenanceWindows. Repeat the flag for several windows; without one, such changes wait for approval.",
		func(s string) error {
			w, err := controllers.ParseMaintenanceWindow(s)
			opts.windows = append(opts.windows, w)
			return err
		})
}

func run(ctx context.Context, opts options) error {
	if opts.concurrency < 1 {
		return fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", opts.concurrency)
	}
	if opts.progressDeadline <= 0 {
		return fmt.Errorf("--progress-deadline must be positive, got %s", opts.progressDeadline)
	}
	if opts.syncPeriod < 0 {
		return fmt.Errorf("--sync-period must not be negative, got %s", opts.syncPeriod)
	}
	if err := checkLeaderElection(opts); err != nil {
		return err
	}
	if err := metrics.Registry.Register(build().Collector()); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("failed to load a kubeconfig: %w", err)
	}
	if err := setRateLimit(cfg, opts.qps, opts.burst); err != nil {
		return err
	}
	informers := &fleetcache.Informers{}
	mgr, err := ctrl.NewManager(cfg, managerOptions(scheme, opts, informers))
	if err != nil {
		return fmt.Errorf("failed to create the manager: %w", err)
	}
	r := &controllers.ScratchVolumeReconciler{
		Client:                  mgr.GetClient(),
		Recorder:                mgr.GetEventRecorder("scratch-operator"),
		APIReader:               mgr.GetAPIReader(),
		MaxConcurrentReconciles: opts.concurrency,
		Version:                 version,
		MaintenanceWindows:      opts.windows,
		MaxInFlight:             opts.maxInFlight,
		ProgressDeadline:        opts.progressDeadline,
		Informers:               informers,
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("failed to set up the ScratchVolume controller: %w", err)
	}
	if err := readaheadstatus.SetupPolicyStatus(mgr); err != nil {
		return fmt.Errorf("failed to set up the ReadAheadPolicy status controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("Starting manager", "version", version, "namespaces", opts.namespaces)
	return mgr.Start(ctx)
}

// managerOptions are the manager's options as the flags set them; its cache makes its informers
// through informers.
func managerOptions(scheme *runtime.Scheme, opts options, informers *fleetcache.Informers) ctrl.Options {
	o := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:  opts.probeAddr,
		PprofBindAddress:        opts.pprofAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "scratch-operator.dbtune.io",
		LeaderElectionNamespace: opts.leaderElectionNS,
		LeaseDuration:           &opts.leaseDuration,
		RenewDeadline:           &opts.renewDeadline,
		RetryPeriod:             &opts.retryPeriod,
		Cache:                   controllers.CacheOptions(splitList(opts.namespaces), informers),
	}
	if opts.syncPeriod > 0 {
		o.Cache.SyncPeriod = &opts.syncPeriod
	}
	return o
}

// checkLeaderElection refuses timings client-go's leader election would refuse less clearly: the
// leader must give up renewing before its Lease runs out, and retry within that time.
func checkLeaderElection(opts options) error {
	const jitter = 1.2 // client-go's leaderelection.JitterFactor
	switch {
	case opts.retryPeriod <= 0:
		return fmt.Errorf("--leader-election-retry-period must be positive, got %s", opts.retryPeriod)
	case opts.renewDeadline <= time.Duration(jitter*float64(opts.retryPeriod)):
		return fmt.Errorf("--leader-election-renew-deadline (%s) must be longer than 1.2 times --leader-election-retry-period (%s)", opts.renewDeadline, opts.retryPeriod)
	case opts.leaseDuration <= opts.renewDeadline:
		return fmt.Errorf("--leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s)", opts.leaseDuration, opts.renewDeadline)
	}
	return nil
}

// setRateLimit applies --kube-api-qps and --kube-api-burst to the client configuration.
func setRateLimit(cfg *rest.Config, qps float64, burst int) error {
	switch {
	case qps < 0 || burst < 0:
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must not be negative, got %g and %d", qps, burst)
	case qps == 0:
		// client-go's limiter off: the manager's own concurrency (--max-concurrent-reconciles)
		// bounds its requests in flight, and the API server queues them fairly.
		cfg.QPS, cfg.Burst = -1, 0
	case burst == 0:
		cfg.QPS, cfg.Burst = float32(qps), max(1, int(2*qps))
	default:
		cfg.QPS, cfg.Burst = float32(qps), burst
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
