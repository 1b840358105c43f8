package probectl

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Permissions of the probe side, merged into the agent's ClusterRole with those of readaheadctl
// and nodeprofile (which holds the NodeIOProfile's and the Node's).
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=dbtune-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup adds the agent of cfg.NodeName to mgr: the Runner, the scheduler that asks it for a run at
// start and every period, and the ProfileReconciler that asks it for on-demand runs. mgr should
// be built with ManagerOptions (or at least nodeprofile.CacheOptions) for the same node. Setup also
// registers the probe metrics with cfg.Registerer. It fails on an invalid Config, never on a target that is
// missing or unusable: that is a condition of the NodeIOProfile.
func Setup(mgr manager.Manager, cfg Config) error {
	cfg, err := cfg.complete()
	if err != nil {
		return fmt.Errorf("invalid node agent configuration: %w", err)
	}
	log := mgr.GetLogger().WithName("node-agent").WithValues("node", cfg.NodeName)
	collector := newProbeCollector()
	if err := cfg.Registerer.Register(collector); err != nil {
		return fmt.Errorf("failed to register the probe metrics: %w", err)
	}
	identity := cfg.NodeName + "_" + string(uuid.NewUUID())[:8]
	r := &Runner{
		cfg: cfg,
		slots: &slotPool{
			reader: mgr.GetAPIReader(), writer: mgr.GetClient(),
			namespace: cfg.LeaseNamespace, prefix: cfg.LeasePrefix, size: cfg.MaxProbingNodes,
			identity: identity, duration: cfg.LeaseDuration, backoff: cfg.SlotBackoff,
			log: log, seen: map[string]observation{},
		},
		profile:  newProfileWriter(mgr.GetClient(), mgr.GetAPIReader(), cfg.NodeName, cfg.WriteBackoff, log),
		metrics:  collector,
		recorder: mgr.GetEventRecorder(eventSource),
		log:      log,
		wake:     make(chan struct{}, 1),
	}
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("failed to add the probe runner: %w", err)
	}
	if err := mgr.Add(&scheduler{runner: r, period: cfg.Period, jitter: cfg.Jitter}); err != nil {
		return fmt.Errorf("failed to add the probe scheduler: %w", err)
	}
	rec := &ProfileReconciler{client: mgr.GetClient(), nodeName: cfg.NodeName, runner: r, log: log}
	if err := rec.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the NodeIOProfile controller: %w", err)
	}
	log.Info("Set up the node agent", "targets", len(cfg.Targets), "period", cfg.Period, "maxProbingNodes", cfg.MaxProbingNodes,
		"leases", cfg.LeaseNamespace+"/"+cfg.LeasePrefix+"-*", "identity", identity)
	return nil
}

// eventSource is the reporting controller of the agent's Events.
const eventSource = "dbtune-node-agent"
