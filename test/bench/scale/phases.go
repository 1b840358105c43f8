package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// phase is what one step of a run cost.
type phase struct {
	// Seconds is the time until every StatefulSet showed the change (injected, or reverted).
	Seconds float64 `json:"seconds"`
	// SentSeconds is, for the bare client, the time until its last request returned.
	SentSeconds float64 `json:"sentSeconds,omitempty"`
	// ReadySeconds is the time until every ScratchVolume was Ready, from the same start.
	ReadySeconds float64 `json:"readySeconds,omitempty"`
	// Requests are the manager's API requests by HTTP method; StatefulSetWrites its applies to
	// StatefulSets by its own count, ServerStatefulSetWrites the API server's count of writes to
	// StatefulSets (not their status) by every client.
	Requests                requestCounts `json:"requests,omitempty"`
	StatefulSetWrites       float64       `json:"statefulSetWrites"`
	ServerStatefulSetWrites float64       `json:"serverStatefulSetWrites"`
	// ServerWrites are the API server's writes by resource[/subresource], every client's: the
	// benchmark's own are in them too (creations, edits, the bare client's applies).
	ServerWrites map[string]float64 `json:"serverWrites,omitempty"`
	// ServerReads are the API server's GETs of single objects by resource, every client's: the
	// manager's and the bare client's reads of each StatefulSet are in them.
	ServerReads map[string]float64 `json:"serverReads,omitempty"`
	// ServerDryRuns are the API server's dry-run writes by resource, every client's: the bare
	// client's ScratchVolume creates.
	ServerDryRuns map[string]float64 `json:"serverDryRuns,omitempty"`
	// CPUSeconds is the manager's CPU time; ReconcileP50/P99 the latency of its reconciles in
	// seconds; MaxQueueDepth the deepest its work queue was seen (sampled each second).
	CPUSeconds    float64 `json:"cpuSeconds,omitempty"`
	ReconcileP50  float64 `json:"reconcileP50Seconds,omitempty"`
	ReconcileP99  float64 `json:"reconcileP99Seconds,omitempty"`
	MaxQueueDepth float64 `json:"maxQueueDepth,omitempty"`
	// MaxRolling is, in a rollout run, the most StatefulSets seen rolling out at once.
	MaxRolling int `json:"maxRolling,omitempty"`
	// PeakRSSMiB is the manager's peak resident set (VmHWM) at the end of the phase: the process's
	// peak so far, so the phase in which it rose is the one that set it.
	PeakRSSMiB float64 `json:"peakRSSMiB,omitempty"`
}

// bench holds what every phase needs.
type bench struct {
	cfg   config
	rest  *rest.Config
	admin client.Client
	cs    kubernetes.Interface
	fleet *fleet
	mgr   *manager
	logf  func(format string, args ...any)
}

// measure runs body and adds to its phase what the manager and the API server counted meanwhile.
func (b *bench) measure(ctx context.Context, body func(p *phase) error) (phase, error) {
	var p phase
	server0, err := b.serverMetrics(ctx)
	if err != nil {
		return p, err
	}
	var mgr0 snapshot
	var proc0 procStats
	stopSampling := math.NaN
	if b.mgr != nil {
		if mgr0, err = b.mgr.scrape(ctx); err != nil {
			return p, err
		}
		proc0, _ = readProcStats(b.mgr.proc.PID)
		stopSampling = b.sampleQueueDepth(ctx)
	}
	err = body(&p)
	depth := stopSampling()
	if err != nil {
		return p, err
	}
	server1, err := b.serverMetrics(ctx)
	if err != nil {
		return p, err
	}
	p.ServerStatefulSetWrites = statefulSetWritesOf(server1) - statefulSetWritesOf(server0)
	p.ServerWrites = writesByResource(server1, server0)
	p.ServerReads = readsByResource(server1, server0)
	p.ServerDryRuns = dryRunsByResource(server1, server0)
	if b.mgr == nil {
		return p, nil
	}
	mgr1, err := b.mgr.scrape(ctx)
	if err != nil {
		return p, err
	}
	proc1, _ := readProcStats(b.mgr.proc.PID)
	p.Requests = mgr1.restRequests().minus(mgr0.restRequests())
	p.StatefulSetWrites = mgr1.sum("dbtune_scratch_statefulset_writes_total", nil) - mgr0.sum("dbtune_scratch_statefulset_writes_total", nil)
	p.CPUSeconds = proc1.CPUSeconds - proc0.CPUSeconds
	ours := func(l map[string]string) bool { return l["controller"] == "scratchvolume" }
	lat := mgr1.histogram("controller_runtime_reconcile_time_seconds", ours).minus(mgr0.histogram("controller_runtime_reconcile_time_seconds", ours))
	p.ReconcileP50, p.ReconcileP99 = lat.quantile(0.5), lat.quantile(0.99)
	p.MaxQueueDepth = depth
	p.PeakRSSMiB = proc1.PeakRSSMiB
	return p, nil
}

// sampleQueueDepth samples the depth of the manager's ScratchVolume work queue every second until
// the returned function is called, which returns the deepest seen.
func (b *bench) sampleQueueDepth(ctx context.Context) func() float64 {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	deepest := 0.0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if s, err := b.mgr.scrape(ctx); err == nil {
				d := s.sum("workqueue_depth", func(l map[string]string) bool { return l["name"] == "scratchvolume" })
				mu.Lock()
				deepest = max(deepest, d)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() float64 {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return deepest
	}
}

func (b *bench) serverMetrics(ctx context.Context) (snapshot, error) {
	raw, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to read the API server's metrics: %w", err)
	}
	return parseMetrics(strings.NewReader(string(raw)))
}

// statefulSetWritesOf counts the API server's writes to StatefulSets themselves: not to their status
// (the StatefulSet controller's), and not the dry runs.
func statefulSetWritesOf(s snapshot) float64 {
	return s.sum("apiserver_request_total", func(l map[string]string) bool {
		switch l["verb"] {
		case "APPLY", "PATCH", "UPDATE", "CREATE", "DELETE":
		default:
			return false
		}
		return l["resource"] == "statefulsets" && l["subresource"] == "" && l["dry_run"] == ""
	})
}

// writesByResource is the API server's writes between two scrapes, by resource[/subresource].
func writesByResource(now, before snapshot) map[string]float64 {
	return requestsByResource(now, before, func(l map[string]string) bool {
		switch l["verb"] {
		case "APPLY", "PATCH", "UPDATE", "CREATE", "DELETE", "DELETECOLLECTION":
			return l["dry_run"] == ""
		}
		return false
	})
}

// readsByResource is the API server's GETs of single objects between two scrapes, by
// resource[/subresource].
func readsByResource(now, before snapshot) map[string]float64 {
	return requestsByResource(now, before, func(l map[string]string) bool { return l["verb"] == "GET" })
}

// dryRunsByResource is the API server's dry-run writes between two scrapes, by
// resource[/subresource].
func dryRunsByResource(now, before snapshot) map[string]float64 {
	return requestsByResource(now, before, func(l map[string]string) bool { return l["dry_run"] != "" })
}

// requestsByResource is the API server's requests between two scrapes that keep selects by their
// labels, by resource[/subresource].
func requestsByResource(now, before snapshot, keep func(map[string]string) bool) map[string]float64 {
	count := func(s snapshot) map[string]float64 {
		out := map[string]float64{}
		f := s["apiserver_request_total"]
		if f == nil {
			return out
		}
		for _, m := range f.GetMetric() {
			l := labelMap(m)
			if !keep(l) {
				continue
			}
			key := l["resource"]
			if l["subresource"] != "" {
				key += "/" + l["subresource"]
			}
			out[key] += m.GetCounter().GetValue()
		}
		return out
	}
	a, b := count(now), count(before)
	out := map[string]float64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// bareClient is a plain client with the given client-side limit (QPS <= 0: none).
func (b *bench) bareClient(qps float64, burst int) (client.Client, error) {
	cfg := rest.CopyConfig(b.rest)
	cfg.QPS, cfg.Burst = -1, 0
	if qps > 0 {
		cfg.QPS, cfg.Burst = float32(qps), burst
	}
	return client.New(cfg, client.Options{Scheme: testenv.Scheme()})
}

// runBare does the manager's work for the selector ScratchVolumes itself, with as many requests in
// flight as the manager has workers and its client-side limit, and times it all: a dry-run create
// of each namespace's ScratchVolume (what the API server stores, defaults applied), then for each
// StatefulSet the read the manager makes (a GET at resourceVersion "0", from the API server's
// watch cache), the plan by the controller's own planning code, and the ConfigMap and StatefulSet
// applies; until the benchmark's watch sees every StatefulSet injected. Which StatefulSets to
// inject is taken before the timer, from the benchmark's watch, as the manager takes it from its
// informers, synced before its own timer starts. No manager may run meanwhile.
func (b *bench) runBare(ctx context.Context, s managerSettings) (phase, error) {
	if b.mgr != nil {
		return phase{}, errManagerRunning
	}
	c, err := b.bareClient(s.QPS, s.Burst)
	if err != nil {
		return phase{}, err
	}
	keys := b.fleet.keys(ctx)
	owner := client.FieldOwner(v1alpha1.FieldManager)
	return b.measure(ctx, func(p *phase) error {
		start := time.Now()
		svs, err := b.defaultedScratchVolumes(ctx, c)
		if err != nil {
			return err
		}
		err = forEach(ctx, len(keys), s.Workers, func(ctx context.Context, i int) error {
			sts := &appsv1.StatefulSet{}
			if err := c.Get(ctx, keys[i], sts, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}}); err != nil {
				return err
			}
			w, err := injectionWrites(svs[keys[i].Namespace], sts)
			if err != nil {
				return err
			}
			if err := c.Apply(ctx, w.configMap, owner, client.ForceOwnership); err != nil {
				return err
			}
			return c.Apply(ctx, w.statefulSet, owner)
		})
		if err != nil {
			return fmt.Errorf("bare client: %w", err)
		}
		p.SentSeconds = time.Since(start).Seconds()
		return b.waitInjected(ctx, p, start, fleetScratchVolume)
	})
}

// errManagerRunning refuses to time the bare client beside a running manager, whose watches and
// resyncs would take their share of the machine from it.
var errManagerRunning = errors.New("the bare client is timed only while no manager runs")

// runBareRevert reverts what runBare applied the way the manager does: an empty apply of each
// StatefulSet under the controller's field manager, and its ConfigMap deleted.
func (b *bench) runBareRevert(ctx context.Context, s managerSettings) (phase, error) {
	if b.mgr != nil {
		return phase{}, errManagerRunning
	}
	c, err := b.bareClient(s.QPS, s.Burst)
	if err != nil {
		return phase{}, err
	}
	keys := b.fleet.keys(ctx)
	owner := client.FieldOwner(v1alpha1.FieldManager)
	return b.measure(ctx, func(p *phase) error {
		start := time.Now()
		err := forEach(ctx, len(keys), s.Workers, func(ctx context.Context, i int) error {
			if err := c.Apply(ctx, appsv1ac.StatefulSet(keys[i].Name, keys[i].Namespace), owner); err != nil {
				return err
			}
			cm := &corev1.ConfigMap{}
			cm.Name, cm.Namespace = selectorScratchVolume(keys[i].Namespace).ConfigMapName(keys[i].Name), keys[i].Namespace
			return client.IgnoreNotFound(c.Delete(ctx, cm))
		})
		if err != nil {
			return fmt.Errorf("bare client revert: %w", err)
		}
		p.SentSeconds = time.Since(start).Seconds()
		return b.waitReverted(ctx, p, start)
	})
}

// defaultedScratchVolumes returns each fleet namespace's selector ScratchVolume as the API server
// would store it (defaults applied), by namespace, without storing it: c dry-runs their creates.
func (b *bench) defaultedScratchVolumes(ctx context.Context, c client.Client) (map[string]*v1alpha1.ScratchVolume, error) {
	svs := make([]*v1alpha1.ScratchVolume, b.fleet.namespaces)
	err := forEach(ctx, len(svs), createWorkers, func(ctx context.Context, i int) error {
		sv := selectorScratchVolume(fleetNamespace(i, b.fleet.namespaces))
		if err := c.Create(ctx, sv, client.DryRunAll); err != nil {
			return fmt.Errorf("failed to dry-run ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
		}
		svs[i] = sv
		return nil
	})
	out := make(map[string]*v1alpha1.ScratchVolume, len(svs))
	for _, sv := range svs {
		if sv != nil {
			out[sv.Namespace] = sv
		}
	}
	return out, err
}

// runSelector applies one selector ScratchVolume per namespace and waits for the injection and
// for Ready.
func (b *bench) runSelector(ctx context.Context) (phase, error) {
	return b.measure(ctx, func(p *phase) error {
		start := time.Now()
		err := forEach(ctx, b.fleet.namespaces, createWorkers, func(ctx context.Context, i int) error {
			return b.admin.Create(ctx, selectorScratchVolume(fleetNamespace(i, b.fleet.namespaces)))
		})
		if err != nil {
			return err
		}
		if err := b.waitInjected(ctx, p, start, fleetScratchVolume); err != nil {
			return err
		}
		return b.waitReady(ctx, p, start, b.fleet.namespaces)
	})
}

// runMany creates one ScratchVolume per StatefulSet, all at once.
func (b *bench) runMany(ctx context.Context) (phase, error) {
	sets := b.fleet.statefulSets(ctx)
	type target struct{ ns, name string }
	targets := make([]target, len(sets))
	for i := range sets {
		targets[i] = target{sets[i].Namespace, sets[i].Name}
	}
	return b.measure(ctx, func(p *phase) error {
		start := time.Now()
		err := forEach(ctx, len(targets), createWorkers, func(ctx context.Context, i int) error {
			return b.admin.Create(ctx, targetScratchVolume(targets[i].ns, targets[i].name))
		})
		if err != nil {
			return err
		}
		if err := b.waitInjected(ctx, p, start, ""); err != nil {
			return err
		}
		return b.waitReady(ctx, p, start, len(targets))
	})
}

// runRevert deletes every ScratchVolume and waits until every template is the original again and
// the ScratchVolumes are gone.
func (b *bench) runRevert(ctx context.Context) (phase, error) {
	return b.measure(ctx, func(p *phase) error {
		start := time.Now()
		err := forEach(ctx, b.fleet.namespaces, createWorkers, func(ctx context.Context, i int) error {
			return b.admin.DeleteAllOf(ctx, &v1alpha1.ScratchVolume{}, client.InNamespace(fleetNamespace(i, b.fleet.namespaces)),
				client.MatchingLabels{benchLabel: "fleet"})
		})
		if err != nil {
			return fmt.Errorf("failed to delete the ScratchVolumes: %w", err)
		}
		if err := b.waitReverted(ctx, p, start); err != nil {
			return err
		}
		_, err = waitFor(ctx, "the ScratchVolumes to be gone", b.cfg.timeout, func() (bool, string) {
			n := len(b.fleet.scratchVolumes(ctx))
			return n == 0, fmt.Sprintf("%d left", n)
		})
		return err
	})
}

// runSteady leaves the injected fleet alone for d but for edits that are none of the manager's
// business, made in rounds every steadyPeriod: a new label value on one StatefulSet in ten, a
// status change on another one in ten (a condition only the benchmark sets, as any status writer
// might), and one StatefulSet scaled up in the first round and back at half-time. The manager's
// informers resync meanwhile (-resync).
func (b *bench) runSteady(ctx context.Context, d time.Duration) (phase, error) {
	return b.measure(ctx, func(p *phase) error {
		start := time.Now()
		keys := b.fleet.keys(ctx)
		scaled := false
		for round := 0; time.Since(start) < d; round++ {
			if err := b.steadyRound(ctx, keys, round); err != nil {
				return err
			}
			if len(keys) > 0 && round == 0 {
				if err := b.scale(ctx, keys[0], b.fleet.replicas+1); err != nil {
					return err
				}
				scaled = true
			}
			next := start.Add(min(time.Duration(round+1)*steadyPeriod, d))
			if scaled && !next.Before(start.Add(d/2)) {
				if err := sleepUntil(ctx, start.Add(d/2)); err != nil {
					return err
				}
				if err := b.scale(ctx, keys[0], b.fleet.replicas); err != nil {
					return err
				}
				scaled = false
			}
			if err := sleepUntil(ctx, next); err != nil {
				return err
			}
		}
		p.Seconds = time.Since(start).Seconds()
		return nil
	})
}

// steadyPeriod is how often the steady state's unrelated edits come.
const steadyPeriod = time.Minute

// steadyRound labels one StatefulSet in ten and changes the status of another one in ten, a
// different tenth each round.
func (b *bench) steadyRound(ctx context.Context, keys []client.ObjectKey, round int) error {
	var labeled, churned []client.ObjectKey
	for i, k := range keys {
		switch (i + round) % 10 {
		case 0:
			labeled = append(labeled, k)
		case 5:
			churned = append(churned, k)
		}
	}
	label := fmt.Sprintf(`{"metadata":{"labels":{%q:"round-%d"}}}`, touchLabel, round)
	err := forEach(ctx, len(labeled), 4, func(ctx context.Context, i int) error {
		return b.patchStatefulSet(ctx, labeled[i], label, false)
	})
	if err != nil {
		return fmt.Errorf("failed to label StatefulSets: %w", err)
	}
	status := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"Round","message":"round %d"}]}}`, churnCondition, round)
	err = forEach(ctx, len(churned), 4, func(ctx context.Context, i int) error {
		return b.patchStatefulSet(ctx, churned[i], status, true)
	})
	if err != nil {
		return fmt.Errorf("failed to change the status of StatefulSets: %w", err)
	}
	return nil
}

// churnCondition is the StatefulSet condition the steady state's status edits change.
const churnCondition = "bench.dbtune.io/Churn"

func (b *bench) patchStatefulSet(ctx context.Context, key client.ObjectKey, mergePatch string, status bool) error {
	sts := &appsv1.StatefulSet{}
	sts.Name, sts.Namespace = key.Name, key.Namespace
	patch := client.RawPatch("application/merge-patch+json", []byte(mergePatch))
	if status {
		return b.admin.Status().Patch(ctx, sts, patch)
	}
	return b.admin.Patch(ctx, sts, patch)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

func (b *bench) scale(ctx context.Context, key client.ObjectKey, replicas int32) error {
	sts := &appsv1.StatefulSet{}
	sts.Name, sts.Namespace = key.Name, key.Namespace
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if err := b.admin.Patch(ctx, sts, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		return fmt.Errorf("failed to scale StatefulSet %s: %w", key, err)
	}
	return nil
}

// runGitOps re-applies every StatefulSet's manifest under a GitOps tool's field manager, then
// watches the manager for settle.
func (b *bench) runGitOps(ctx context.Context, settle time.Duration) (phase, error) {
	return b.measure(ctx, func(p *phase) error {
		start := time.Now()
		err := forEach(ctx, b.fleet.size, createWorkers, func(ctx context.Context, i int) error {
			u, err := toUnstructured(b.fleet.manifest(i))
			if err != nil {
				return err
			}
			// Argo CD and Flux apply with force: the manifest's fields are theirs to set.
			return b.admin.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("argocd-controller"), client.ForceOwnership)
		})
		if err != nil {
			return fmt.Errorf("failed to re-apply the manifests: %w", err)
		}
		p.SentSeconds = time.Since(start).Seconds()
		time.Sleep(settle)
		p.Seconds = time.Since(start).Seconds()
		return nil
	})
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	return u, nil
}

func (b *bench) waitInjected(ctx context.Context, p *phase, start time.Time, name string) error {
	_, err := waitFor(ctx, "every StatefulSet to carry the injection", b.cfg.timeout-time.Since(start), func() (bool, string) {
		sets := b.fleet.statefulSets(ctx)
		n := countInjected(sets, name)
		return n == len(sets), fmt.Sprintf("%d of %d injected", n, len(sets))
	})
	p.Seconds = time.Since(start).Seconds()
	return err
}

func (b *bench) waitReady(ctx context.Context, p *phase, start time.Time, want int) error {
	_, err := waitFor(ctx, "every ScratchVolume to be Ready", b.cfg.timeout-time.Since(start), func() (bool, string) {
		svs := b.fleet.scratchVolumes(ctx)
		n := countReady(svs)
		return n == want, fmt.Sprintf("%d of %d Ready; %d StatefulSets not yet recorded by the StatefulSet controller; not Ready: %s",
			n, want, unsettled(b.fleet.statefulSets(ctx)), strings.Join(notReady(svs, 3), "; "))
	})
	p.ReadySeconds = time.Since(start).Seconds()
	return err
}

func (b *bench) waitReverted(ctx context.Context, p *phase, start time.Time) error {
	_, err := waitFor(ctx, "every StatefulSet to be reverted exactly", b.cfg.timeout-time.Since(start), func() (bool, string) {
		sets := b.fleet.statefulSets(ctx)
		if n := countInjected(sets, ""); n > 0 {
			return false, fmt.Sprintf("%d still carry an injection", n)
		}
		d := b.fleet.diverged(sets)
		return len(d) == 0, fmt.Sprintf("%d differ from their original template, such as %v", len(d), d[:min(len(d), 3)])
	})
	p.Seconds = time.Since(start).Seconds()
	return err
}

// waitSettled waits until the StatefulSet controller has recorded every StatefulSet's spec, so
// that one phase's backlog does not slow the next.
func (b *bench) waitSettled(ctx context.Context) (time.Duration, error) {
	return waitFor(ctx, "the StatefulSet controller to record every StatefulSet", b.cfg.timeout, func() (bool, string) {
		n := unsettled(b.fleet.statefulSets(ctx))
		return n == 0, fmt.Sprintf("%d not recorded", n)
	})
}
