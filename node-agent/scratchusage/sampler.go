package scratchusage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/nodeprofile"
)

// Defaults of a Config field left at its zero value.
const (
	DefaultKubeletRoot = "/var/lib/kubelet"
	DefaultInterval    = time.Second
	DefaultWindow      = time.Hour
	DefaultFullBelow   = 0.01
)

// Config is what the sampler of one node needs. Only NodeName is required.
type Config struct {
	// NodeName is the node whose pods are sampled.
	NodeName string
	// KubeletRoot is where the agent sees the kubelet's root directory (default /var/lib/kubelet);
	// in the DaemonSet, the host's <root>/pods is mounted read-only under it.
	KubeletRoot string
	// Interval is the time between samples (default 1s): short enough to catch the peak of a sort,
	// at one statfs per volume.
	Interval time.Duration
	// Window is the span of the windowed peak (default 1h).
	Window time.Duration
	// FullBelow is the fraction of a volume's size under which its free space counts as full
	// (default 0.01); a volume with nothing free is always full.
	FullBelow float64
	// ReportInterval is the shortest time between two writes of the figures to the node's
	// NodeIOProfile (default 10s); a volume that fills up is reported at once.
	ReportInterval time.Duration
	// FS reads the volumes; nil means HostFS.
	FS FS
	// Registerer receives the metrics; nil means controller-runtime's metrics.Registry.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Pages says whether and how the agent gives the volumes the pages their ScratchVolumes ask
	// for (spec.largePages).
	Pages PagesConfig
}

func (cfg Config) complete() (Config, error) {
	if cfg.KubeletRoot == "" {
		cfg.KubeletRoot = DefaultKubeletRoot
	}
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.Window = cmp.Or(cfg.Window, DefaultWindow)
	cfg.FullBelow = cmp.Or(cfg.FullBelow, DefaultFullBelow)
	cfg.ReportInterval = cmp.Or(cfg.ReportInterval, DefaultReportInterval)
	if cfg.FS == nil {
		cfg.FS = HostFS
	}
	if cfg.Registerer == nil {
		cfg.Registerer = metrics.Registry
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(cfg.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("node name %q is not a valid object name: %v", cfg.NodeName, msgs))
	}
	if !filepath.IsAbs(cfg.KubeletRoot) {
		errs = append(errs, fmt.Errorf("the kubelet root %q is not absolute", cfg.KubeletRoot))
	}
	if cfg.Interval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("the sampling interval must be at least 100ms, got %s", cfg.Interval))
	}
	if cfg.Window < time.Minute || cfg.Window < cfg.Interval {
		errs = append(errs, fmt.Errorf("the peak window must be at least 1m and one interval, got %s", cfg.Window))
	}
	if cfg.ReportInterval < time.Second {
		errs = append(errs, fmt.Errorf("the report interval must be at least 1s, got %s", cfg.ReportInterval))
	}
	if cfg.FullBelow < 0 || cfg.FullBelow >= 1 {
		errs = append(errs, fmt.Errorf("the full threshold must be a fraction of the size in [0, 1), got %g", cfg.FullBelow))
	}
	return cfg, errors.Join(errs...)
}

// Validate reports every problem with cfg at once, after filling in the defaults.
func (cfg Config) Validate() error {
	_, err := cfg.complete()
	return err
}

// Sampler samples the RAM scratch volumes of one node's pods; it is a manager.Runnable.
type Sampler struct {
	cfg    Config
	pods   client.Reader
	log    logr.Logger
	mu     sync.Mutex
	tracks map[key]*tracked
	// unusable remembers the volumes whose last sample failed, so that a failure is logged when
	// it starts, not every second.
	unusable map[key]bool
	// publisher writes the figures to the node's NodeIOProfile; nil when only metrics are wanted.
	publisher *publisher
	// publishFailing is set while writes to the NodeIOProfile fail, so that a failure is logged
	// when it starts.
	publishFailing bool
	// pager sets each volume's pages once per wish; wishesFailing is set while the ScratchVolumes
	// cannot be listed, so that it is logged when it starts.
	pager         *pager
	wishesFailing bool
}

type tracked struct {
	vol Volume
	*tracker
}

// NewSampler returns the sampler of cfg.NodeName reading pods through pods, normally the
// manager's cache restricted by RestrictCache.
func NewSampler(cfg Config, pods client.Reader, log logr.Logger) (*Sampler, error) {
	cfg, err := cfg.complete()
	if err != nil {
		return nil, fmt.Errorf("invalid scratch usage configuration: %w", err)
	}
	return &Sampler{cfg: cfg, pods: pods, log: log, tracks: map[key]*tracked{}, unusable: map[key]bool{}, pager: newPager(cfg.Pages)}, nil
}

// +kubebuilder:rbac:groups=dbtune.io,resources=scratchvolumes,verbs=get;list;watch

// Setup adds the sampler of cfg.NodeName to mgr, registers its metrics and has it write the
// figures to the node's NodeIOProfile. mgr's cache should be restricted with RestrictCache and
// nodeprofile.CacheOptions.
func Setup(mgr manager.Manager, cfg Config) error {
	log := mgr.GetLogger().WithName("scratch-usage").WithValues("node", cfg.NodeName)
	s, err := NewSampler(cfg, mgr.GetClient(), log)
	if err != nil {
		return err
	}
	s.publisher = &publisher{
		profile:  nodeprofile.NewWriter(mgr.GetClient(), mgr.GetClient(), s.cfg.NodeName, FieldManager, log),
		interval: s.cfg.ReportInterval,
	}
	if err := s.cfg.Registerer.Register(s.Collector()); err != nil {
		return fmt.Errorf("failed to register the scratch volume metrics: %w", err)
	}
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("failed to add the scratch usage sampler: %w", err)
	}
	return nil
}

// Collector returns the Prometheus collector of the sampler's figures; Setup registers it.
func (s *Sampler) Collector() prometheus.Collector { return newCollector(s) }

// NeedLeaderElection is false: every node's agent samples its own node.
func (s *Sampler) NeedLeaderElection() bool { return false }

// Start samples every interval until ctx ends.
func (s *Sampler) Start(ctx context.Context) error {
	s.log.Info("Started sampling scratch volumes", "interval", s.cfg.Interval, "window", s.cfg.Window, "kubeletRoot", s.cfg.KubeletRoot,
		"largePages", s.cfg.Pages.Enabled)
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		if err := s.SampleOnce(ctx); err != nil {
			s.log.Error(err, "Failed to list the node's Pods")
		} else {
			s.publish(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// SampleOnce finds the node's volumes and samples each of them once. Volumes that went away are
// forgotten, with their peaks. Start calls it every interval; it must not run twice at once.
func (s *Sampler) SampleOnce(ctx context.Context) error {
	var pods corev1.PodList
	if err := s.pods.List(ctx, &pods); err != nil {
		return fmt.Errorf("failed to list the Pods of node %s: %w", s.cfg.NodeName, err)
	}
	vols := Discover(pods.Items, s.cfg.NodeName)
	wishes, known := s.wishes(ctx)
	samples := make(map[key]Usage, len(vols))
	pages := map[key]v1alpha1.VolumeLargePages{}
	for _, v := range vols {
		u, ok := s.sample(v)
		if !ok {
			continue
		}
		samples[v.key()] = u
		if want, ok := wishes[v.Namespace+"/"+v.ScratchVolume]; ok || !known {
			if r, ok := s.pagesOf(v, want, known); ok {
				pages[v.key()] = r
			}
		}
	}
	s.record(vols, samples, pages, s.cfg.Now())
	return nil
}

// wishes returns what each ScratchVolume ("namespace/name") asks of its volumes' pages; known is
// false when they could not be listed.
func (s *Sampler) wishes(ctx context.Context) (map[string]v1alpha1.LargePagesPolicy, bool) {
	var list v1alpha1.ScratchVolumeList
	err := s.pods.List(ctx, &list)
	if err != nil && !s.wishesFailing {
		s.log.Error(err, "Failed to list the ScratchVolumes; the volumes' pages are left as they are until they can be read")
	}
	s.wishesFailing = err != nil
	if err != nil {
		return nil, false
	}
	out := make(map[string]v1alpha1.LargePagesPolicy, len(list.Items))
	for _, sv := range list.Items {
		out[sv.Namespace+"/"+sv.Name] = cmp.Or(sv.Spec.LargePages, v1alpha1.LargePagesWithinSize)
	}
	return out, true
}

// pagesOf gives v the pages want asks for, and logs a change or a failure once.
func (s *Sampler) pagesOf(v Volume, want v1alpha1.LargePagesPolicy, known bool) (v1alpha1.VolumeLargePages, bool) {
	if !known {
		// Keep the last report while the wish cannot be read.
		d, ok := s.pager.done[v.key()]
		return d.report, ok
	}
	o, attempted := s.pager.ensure(v, v.Dir(s.cfg.KubeletRoot), want, s.cfg.Now())
	if !attempted || o.retry {
		return o.report, !o.retry
	}
	log := s.log.WithValues("namespace", v.Namespace, "pod", v.Pod, "scratchVolume", v.ScratchVolume, "wanted", want, "state", o.report.State, "huge", o.report.Huge)
	switch {
	case o.reconfigured:
		log.Info("Reconfigured a scratch volume's tmpfs")
	case o.report.State == v1alpha1.LargePagesFailed || o.report.State == v1alpha1.LargePagesUnsupported || o.report.State == v1alpha1.LargePagesOverridden:
		log.Info("Could not give a scratch volume the pages its ScratchVolume asks for", "message", o.report.Message)
	default:
		log.Info("Found a scratch volume's tmpfs as its ScratchVolume asks")
	}
	return o.report, true
}

// publish writes the figures to the NodeIOProfile, logging a failure when it starts; the next
// round tries again.
func (s *Sampler) publish(ctx context.Context) {
	if s.publisher == nil {
		return
	}
	err := s.publisher.publish(ctx, s.Snapshot(), s.cfg.Now())
	if err != nil && !s.publishFailing {
		s.log.Error(err, "Failed to write the scratch volumes' figures to the NodeIOProfile; retrying every sample")
	}
	if err == nil && s.publishFailing {
		s.log.Info("Wrote the scratch volumes' figures to the NodeIOProfile again")
	}
	s.publishFailing = err != nil
}

// sample reads one volume, logging a failure when it starts. A missing directory is not a
// failure: the kubelet sets the volume up after the pod is bound and tears it down before the
// pod object goes.
func (s *Sampler) sample(v Volume) (Usage, bool) {
	u, err := s.cfg.FS.Usage(v.Dir(s.cfg.KubeletRoot))
	k := v.key()
	if err == nil {
		delete(s.unusable, k)
		return u, true
	}
	if !s.unusable[k] && !errors.Is(err, fs.ErrNotExist) {
		s.log.Info("Could not sample a scratch volume; check that the kubelet's pods directory is mounted with HostToContainer propagation",
			"namespace", v.Namespace, "pod", v.Pod, "scratchVolume", v.ScratchVolume, "error", err.Error())
	}
	s.unusable[k] = true
	return Usage{}, false
}

// record takes in one round: vols are the volumes present, samples those that could be read and
// pages what those run with.
func (s *Sampler) record(vols []Volume, samples map[key]Usage, pages map[key]v1alpha1.VolumeLargePages, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	present := make(map[key]bool, len(vols))
	for _, v := range vols {
		k := v.key()
		present[k] = true
		u, ok := samples[k]
		if !ok {
			continue
		}
		t := s.tracks[k]
		if t == nil {
			t = &tracked{vol: v, tracker: newTracker(s.cfg.Window)}
			s.tracks[k] = t
		}
		t.observe(u, now, s.cfg.FullBelow)
		if r, ok := pages[k]; ok {
			t.stats.LargePages = r
		}
	}
	maps.DeleteFunc(s.tracks, func(k key, _ *tracked) bool { return !present[k] })
	maps.DeleteFunc(s.unusable, func(k key, _ bool) bool { return !present[k] })
	s.pager.forget(present)
}

// Snapshot returns the figures of every volume sampled at least once and still present.
func (s *Sampler) Snapshot() map[Volume]Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Volume]Stats, len(s.tracks))
	for _, t := range s.tracks {
		out[t.vol] = t.stats
	}
	return out
}
