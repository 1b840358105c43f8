package readaheadctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/nodeprofile"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

// Config configures the read-ahead reconciler of one node.
type Config struct {
	// NodeName is the node the agent runs on (from the downward API: spec.nodeName).
	NodeName string
	// Paths says where the host's sysfs, device nodes and mount table are visible.
	Paths readahead.Paths
	// StateDir is the host directory (a hostPath volume, DefaultStateDir by convention) that
	// keeps the originals. It must outlive the pod: originals are restored when a policy stops
	// applying, not when the agent exits, and a restarted agent must find them. Required.
	StateDir string
	// Host reads and sets read-ahead; nil means readahead.NewHost(Paths).
	Host readahead.Host
	// ResyncPeriod is how often every device is read again to repair drift (default
	// DefaultResyncPeriod).
	ResyncPeriod time.Duration
	// DeviceScanPeriod is how often the host's list of block devices is checked for devices
	// that appeared or went away (default DefaultDeviceScanPeriod).
	DeviceScanPeriod time.Duration
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.NodeName == "":
		return c, errors.New("readaheadctl: NodeName is required (set it from the downward API, spec.nodeName)")
	case c.StateDir == "":
		return c, errors.New("readaheadctl: StateDir is required: a hostPath directory such as " + DefaultStateDir +
			", so that saved originals outlive the agent's pod")
	case c.ResyncPeriod < 0 || c.DeviceScanPeriod < 0:
		return c, errors.New("readaheadctl: ResyncPeriod and DeviceScanPeriod must not be negative")
	}
	if c.Host == nil {
		c.Host = readahead.NewHost(c.Paths)
	}
	if c.ResyncPeriod == 0 {
		c.ResyncPeriod = DefaultResyncPeriod
	}
	if c.DeviceScanPeriod == 0 {
		c.DeviceScanPeriod = DefaultDeviceScanPeriod
	}
	return c, nil
}

// Setup adds the node's read-ahead reconciler to the agent's manager. The manager's scheme must
// hold the core and dbtune.io/v1alpha1 kinds; nodeprofile.CacheOptions keeps its cache to this node.
//
// The controller runs whether or not the manager holds a leader lease: every node needs its
// own, so leader election must not pick one of them.
func Setup(mgr manager.Manager, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	r := &nodeReconciler{
		client:   mgr.GetClient(),
		recorder: mgr.GetEventRecorder(eventSource),
		nodeName: cfg.NodeName,
		paths:    cfg.Paths,
		host:     cfg.Host,
		store:    readahead.NewStore(cfg.StateDir),
		profile:  nodeprofile.NewWriter(mgr.GetClient(), mgr.GetClient(), cfg.NodeName, FieldManager, mgr.GetLogger().WithName(nodeControllerName)),
		warned:   map[problem]bool{},
		exported: map[string]bool{},
		now:      time.Now,
	}
	enqueue := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{r.key()}
	})
	isThisNode := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == cfg.NodeName })
	return ctrl.NewControllerManagedBy(mgr).
		Named(nodeControllerName).
		Watches(&v1alpha1.ReadAheadPolicy{}, enqueue, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, enqueue, builder.OnlyMetadata,
			builder.WithPredicates(isThisNode, predicate.LabelChangedPredicate{})).
		WatchesRawSource(hostEvents(r.key(), cfg.Paths, cfg.ResyncPeriod, cfg.DeviceScanPeriod)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NeedLeaderElection: new(false)}).
		Complete(r)
}

// hostEvents queues the node once at start, every resync period, and whenever the host's list
// of block devices changes. sysfs offers no change notification a pod can rely on (uevents
// reach only the host's network namespace), and listing one directory costs next to nothing.
func hostEvents(key reconcile.Request, paths readahead.Paths, resync, scan time.Duration) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			resyncTicker, scanTicker := time.NewTicker(resync), time.NewTicker(scan)
			defer resyncTicker.Stop()
			defer scanTicker.Stop()
			last := blockDeviceNames(paths)
			q.Add(key)
			for {
				select {
				case <-ctx.Done():
					return
				case <-resyncTicker.C:
					q.Add(key)
				case <-scanTicker.C:
					if names := blockDeviceNames(paths); names != last {
						last = names
						q.Add(key)
					}
				}
			}
		}()
		return nil
	})
}

// blockDeviceNames fingerprints the host's block devices by name; an error counts as a list of
// its own, so that sysfs coming back is noticed too.
func blockDeviceNames(paths readahead.Paths) string {
	entries, err := os.ReadDir(filepath.Join(paths.SysDir(), "class", "block"))
	if err != nil {
		return "error: " + err.Error()
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// keyFor is the work item of a cluster-scoped object.
func keyFor(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}
