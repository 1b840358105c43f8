// Command manager runs the dbtune scratch-operator: the ScratchVolume controller and the
// ReadAheadPolicy status aggregation (the node agents apply the policies themselves).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/controllers/readaheadstatus"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

type options struct {
	metricsAddr, probeAddr string
	leaderElect            bool
	leaderElectionNS       string
	namespaces             string
	concurrency            int
	// qps and burst bound the manager's requests to the API server on the client side; qps 0
	// leaves them to the server's API Priority and Fairness (see docs/tuning.md).
	qps         float64
	burst       int
	showVersion bool
}

func main() {
	opts := options{}
	flag.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; 0 disables it.")
	flag.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.BoolVar(&opts.leaderElect, "leader-elect", false, "Elect a leader so that only one of several replicas reconciles.")
	flag.StringVar(&opts.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's namespace).")
	flag.StringVar(&opts.namespaces, "namespaces", "", "Comma-separated namespaces to watch; empty watches all.")
	flag.IntVar(&opts.concurrency, "max-concurrent-reconciles", 4, "ScratchVolumes reconciled in parallel.")
	flag.Float64Var(&opts.qps, "kube-api-qps", 0, "Client-side limit of the manager's requests per second to the API server; 0 sets none and leaves queuing to the server's API Priority and Fairness.")
	flag.IntVar(&opts.burst, "kube-api-burst", 0, "Requests the manager may send at once above --kube-api-qps; 0 means twice the QPS. Ignored when --kube-api-qps is 0.")
	flag.BoolVar(&opts.showVersion, "version", false, "Print the version and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if opts.showVersion {
		fmt.Println("dbtune scratch-operator manager", version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		ctrl.Log.Error(err, "Manager stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, opts options) error {
	if opts.concurrency < 1 {
		return fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", opts.concurrency)
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:  opts.probeAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "scratch-operator.dbtune.io",
		LeaderElectionNamespace: opts.leaderElectionNS,
		Cache:                   controllers.CacheOptions(splitList(opts.namespaces)),
	})
	if err != nil {
		return fmt.Errorf("failed to create the manager: %w", err)
	}
	r := &controllers.ScratchVolumeReconciler{
		Client:                  mgr.GetClient(),
		Recorder:                mgr.GetEventRecorder("scratch-operator"),
		APIReader:               mgr.GetAPIReader(),
		MaxConcurrentReconciles: opts.concurrency,
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
