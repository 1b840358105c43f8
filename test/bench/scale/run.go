package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// defaultSettings are the manager's flag defaults (main.go).
var defaultSettings = managerSettings{Name: "defaults", QPS: 0, Burst: 0, Workers: 4}

// env is the running control plane and the benchmark's clients.
type env struct {
	cluster *localcluster.Cluster
	bench   *bench
	binDir  string
	manager string
	// against is the manager built from -against's checkout.
	against string
	dir     string
	// profiler watches the running manager for its peak.
	profiler *peakProfiler
	// order draws the order of the bare client and the manager in each run.
	order *method.Order
}

func run(ctx context.Context, cfg config) (*results, error) {
	e, err := setUp(ctx, cfg)
	if e != nil {
		defer e.tearDown(cfg.keep || err != nil)
	}
	if err != nil {
		return nil, err
	}
	res := newResults(cfg)
	err = e.measureAll(ctx, cfg, res)
	res.Machine.LoadAfter = loadAverage()
	return res, err
}

func (e *env) measureAll(ctx context.Context, cfg config, res *results) error {
	if cfg.only != "" {
		// What makes ScratchVolumes slow to turn Ready at this size is measured by the whole run.
		if err := e.tuneControllerManager(ctx, cfg.kcmQPS); err != nil {
			return err
		}
	}
	switch cfg.only {
	case onlyFailover:
		for _, n := range cfg.levels {
			f, err := e.measureFailover(ctx, cfg, n)
			res.Failover = append(res.Failover, f...)
			if err != nil {
				return fmt.Errorf("failover at %d StatefulSets: %w", n, err)
			}
		}
		return nil
	case onlyRollout:
		var err error
		res.Rollouts, err = e.measureRollouts(ctx, cfg, cfg.runs)
		return err
	case onlyRefusal:
		var err error
		res.Refusals, err = e.measureRefusals(ctx, cfg)
		return err
	}
	tuned, quiet := false, cfg.levels
	if !cfg.quiet {
		quiet = nil
	}
	for _, n := range quiet {
		if n > cfg.kcmDefaultMax && !tuned {
			if err := e.tuneControllerManager(ctx, cfg.kcmQPS); err != nil {
				return err
			}
			tuned = true
		}
		q, err := e.measureQuiet(ctx, n, kcmName(tuned, cfg.kcmQPS))
		if err != nil {
			return fmt.Errorf("without background objects, at %d StatefulSets: %w", n, err)
		}
		res.Quiet = append(res.Quiet, q)
	}
	if !tuned {
		if err := e.tuneControllerManager(ctx, cfg.kcmQPS); err != nil {
			return err
		}
	}
	bg, err := e.createBackground(ctx, cfg)
	res.Settings.Background = bg
	if err != nil {
		return err
	}
	for _, n := range slices.Backward(cfg.levels) {
		ls, err := e.measureLevels(ctx, cfg, n, variants(cfg, n))
		res.Levels = append(res.Levels, ls...)
		if err != nil {
			return fmt.Errorf("at %d StatefulSets: %w", n, err)
		}
	}
	if cfg.rollout > 0 {
		var err error
		if res.Rollouts, err = e.measureRollouts(ctx, cfg, 1); err != nil {
			return fmt.Errorf("rollout run: %w", err)
		}
	}
	return nil
}

func kcmName(tuned bool, qps int) string {
	if tuned {
		return fmt.Sprintf("--kube-api-qps=%d --kube-api-burst=%d", qps, 2*qps)
	}
	return "defaults (--kube-api-qps=20 --kube-api-burst=30)"
}

// variants are the manager settings measured at size n: the defaults everywhere, with -against
// the defaults of the other checkout's manager too, and at cfg.compareAt a classic client-side
// limit and one worker per namespace.
func variants(cfg config, n int) []managerSettings {
	out := []managerSettings{defaultSettings}
	if cfg.against != "" {
		other := defaultSettings
		other.Name, other.Commit = "defaults at "+cfg.againstCommit, cfg.againstCommit
		out = append(out, other)
	}
	if n == cfg.compareAt {
		out = append(out,
			managerSettings{Name: "qps=20 burst=30", QPS: 20, Burst: 30, Workers: defaultSettings.Workers},
			managerSettings{Name: fmt.Sprintf("workers=%d", cfg.workersVariant), Workers: cfg.workersVariant})
	}
	return out
}

func setUp(ctx context.Context, cfg config) (*env, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir, err := localcluster.DefaultBinDir(root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dbtune-scale-")
	if err != nil {
		return nil, err
	}
	e := &env{binDir: binDir, dir: dir, order: method.NewOrder(cfg.seed)}
	built := make(chan error, 1)
	go func() {
		var err error
		e.manager, err = buildManager(ctx, root, dir)
		if err == nil && cfg.against != "" {
			againstDir := filepath.Join(dir, "against")
			if err = os.Mkdir(againstDir, 0o755); err == nil {
				e.against, err = buildManager(ctx, cfg.against, againstDir)
			}
		}
		built <- err
	}()
	nodes := localcluster.DefaultNodes(cfg.nodes)
	for i := range nodes {
		// Room for the background pods' requests and the rollout run's pods besides: the
		// scheduler counts the background pods against a node even though they bypassed it.
		nodes[i].Pods = 20000
		nodes[i].CPU = resource.MustParse("1000")
		nodes[i].Memory = resource.MustParse("4Ti")
	}
	logf("starting the local control plane in %s", dir)
	e.cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, Dir: filepath.Join(dir, "cluster"), Nodes: nodes, PersistentVolumes: cfg.rollout,
		AuditUsers: auditedUsers(cfg),
		Logf:       func(format string, args ...any) { logf(format, args...) },
	})
	if buildErr := <-built; err == nil {
		err = buildErr
	}
	if err != nil {
		return e, err
	}
	rc := e.cluster.Config()
	rc.QPS, rc.Burst = -1, 0
	if _, err := envtest.InstallCRDs(rc, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
	}); err != nil {
		return e, fmt.Errorf("failed to install the CRDs: %w", err)
	}
	admin, err := client.New(rc, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		return e, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return e, err
	}
	for i := range max(cfg.namespaces, backgroundNamespaces) {
		for _, name := range []string{fleetNamespace(i, cfg.namespaces), backgroundNamespace(i, backgroundNamespaces)} {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := client.IgnoreAlreadyExists(admin.Create(ctx, ns)); err != nil {
				return e, err
			}
		}
	}
	f, err := newFleet(ctx, rc, admin, cfg.namespaces, cfg.levels, 0)
	if err != nil {
		return e, err
	}
	e.bench = &bench{cfg: cfg, rest: rc, admin: admin, cs: cs, fleet: f, logf: logf}
	return e, nil
}

// auditedUsers are the users whose requests the API server audits: the failover replicas'.
func auditedUsers(cfg config) []string {
	if cfg.only == onlyFailover {
		return failoverUsers
	}
	return nil
}

func (e *env) tearDown(keep bool) {
	if m := e.bench; m != nil && m.mgr != nil {
		_ = m.mgr.stop()
	}
	if e.cluster != nil {
		if err := e.cluster.Stop(); err != nil {
			logf("failed to stop the cluster: %v", err)
		}
	}
	if keep {
		logf("kept the cluster's files and logs in %s", e.dir)
		return
	}
	_ = os.RemoveAll(e.dir)
}

// startManager starts a manager with s for the measurement named phase, and waits until its
// controller's workers run; its peak RSS then belongs to this measurement alone, and its log and
// heap profile are named after it.
func (e *env) startManager(ctx context.Context, phase string, n int, s managerSettings) error {
	name := fmt.Sprintf("manager-%sn%d-%s", phase, n, strings.NewReplacer(" ", "-", "=", "").Replace(s.Name))
	bin := e.manager
	if s.Commit != "" {
		bin = e.against
	}
	m, err := startManager(ctx, e.cluster, bin, name, s, e.bench.cfg.resync, e.bench.cfg.runtimeEnv(), launch{})
	if err != nil {
		return err
	}
	if err := m.waitWorkers(ctx, controllerName, 2*time.Minute); err != nil {
		return errors.Join(err, m.stop())
	}
	e.bench.mgr = m
	e.profiler = startPeakProfiler(ctx, m.pprofAddr, m.proc.PID)
	return nil
}

// controllerName is the name the manager's ScratchVolume controller logs under.
const controllerName = "scratchvolume"

// stopManager stops the manager, and saves the heap profile taken nearest its peak in the
// output directory.
func (e *env) stopManager() (memory, error) {
	m := e.bench.mgr
	e.bench.mgr = nil
	mem, err := readMemory(context.Background(), m)
	var profErr error
	mem.Profile, profErr = e.profiler.stop(e.bench.cfg.out, cmp.Or(e.bench.cfg.name, "scale")+"-heap-"+strings.TrimPrefix(m.name, "manager-")+".pb.gz")
	return mem, errors.Join(err, profErr, m.stop())
}

// measureQuiet measures one selector injection, Ready and revert at size n with no background
// objects in the cluster.
func (e *env) measureQuiet(ctx context.Context, n int, kcm string) (quietLevel, error) {
	b := e.bench
	q := quietLevel{N: n, ControllerManager: kcm, Conditions: recordConditions()}
	logf("N=%d without background objects, kube-controller-manager %s", n, kcm)
	if err := b.fleet.resize(ctx, n); err != nil {
		return q, err
	}
	if _, err := b.waitSettled(ctx); err != nil {
		return q, err
	}
	if err := e.startManager(ctx, "quiet-", n, defaultSettings); err != nil {
		return q, err
	}
	var err error
	if q.Inject, err = b.runSelector(ctx); err != nil {
		return q, err
	}
	logf("  injected in %.1f s, Ready in %.1f s", q.Inject.Seconds, q.Inject.ReadySeconds)
	if q.Revert, err = b.runRevert(ctx); err != nil {
		return q, err
	}
	if q.Memory, err = e.stopManager(); err != nil {
		return q, err
	}
	settled, err := b.waitSettled(ctx)
	q.RevertSettledSeconds = q.Revert.Seconds + settled.Seconds()
	return q, err
}

// measureLevels runs cfg.runs runs at size n (cfg.largeRuns above cfg.large) of each of
// settings, the settings taking turns within each run in an order drawn anew, each turn with a
// manager of its own: settings measured side by side share the machine's ups and downs.
func (e *env) measureLevels(ctx context.Context, cfg config, n int, settings []managerSettings) ([]level, error) {
	b := e.bench
	levels := make([]level, len(settings))
	for j, s := range settings {
		levels[j] = level{N: n, Settings: s}
	}
	if err := b.fleet.resize(ctx, n); err != nil {
		return nil, err
	}
	if _, err := b.waitSettled(ctx); err != nil {
		return nil, err
	}
	many, runs := n <= cfg.large && cfg.many, cfg.runs
	if n > cfg.large {
		runs = cfg.largeRuns
	}
	turns := make([]int, len(settings))
	for j := range turns {
		turns[j] = j
	}
	for i := range runs {
		for _, j := range method.Shuffled(e.order, turns) {
			s, l := settings[j], &levels[j]
			logf("N=%d, %s: run %d of %d (load %s)", n, s.Name, i+1, runs, loadAverage())
			full := s.inFull()
			r, err := e.measureRun(ctx, n, s, i, runSteps(method.Shuffled(e.order, []string{variantBare, variantManager}), full && i == 0, full && many))
			l.Runs = append(l.Runs, r)
			if err != nil {
				return levels, fmt.Errorf("manager %s: %w", s.Name, err)
			}
			logf("  %s first: bare %.1f s, manager %.1f s (Ready %.1f s), revert %.1f s", r.Order[0], r.Bare.Seconds, r.Selector.Seconds, r.Selector.ReadySeconds, r.Revert.Seconds)
		}
	}
	for j := range levels {
		levels[j].Memory = peakOf(levels[j].Runs)
	}
	return levels, nil
}

// peakOf is the memory of the run whose manager's resident set peaked highest: the size's peak.
func peakOf(runs []runResult) memory {
	var peak memory
	for _, r := range runs {
		if r.Memory != nil && r.Memory.PeakRSSMiB > peak.PeakRSSMiB {
			peak = *r.Memory
		}
	}
	return peak
}

// The variants a fleet run compares, in an order drawn anew for each run.
const (
	variantBare    = "bare client"
	variantManager = "manager"
)

// step is one thing a run does.
type step string

// The steps of a run. The manager runs from stepStartManager to stepStopManager only, so that it
// is idle — not running at all — while the bare client is timed.
const (
	stepStartManager step = "start the manager"
	stepInject       step = "manager: inject"
	stepSteady       step = "manager: steady state"
	stepGitOps       step = "manager: GitOps re-apply"
	stepRevert       step = "manager: revert"
	stepMany         step = "manager: one ScratchVolume each"
	stepManyRevert   step = "manager: one ScratchVolume each, revert"
	stepStopManager  step = "stop the manager"
	stepBareInject   step = "bare client: inject"
	stepBareRevert   step = "bare client: revert"
	stepSettle       step = "wait until the StatefulSet controller has recorded every StatefulSet"
)

// runSteps are the steps of one run, the variants taking their turns in order: the bare client's
// inject and revert; the manager started, its inject (then, withSteady, the steady state and the
// GitOps re-apply) and revert (then, withMany, one ScratchVolume per StatefulSet and its revert),
// and stopped. Every turn ends with the fleet settled.
func runSteps(order []string, withSteady, withMany bool) []step {
	var out []step
	for _, v := range order {
		if v == variantBare {
			out = append(out, stepBareInject, stepBareRevert, stepSettle)
			continue
		}
		out = append(out, stepStartManager, stepInject)
		if withSteady {
			out = append(out, stepSteady, stepGitOps)
		}
		out = append(out, stepRevert, stepSettle)
		if withMany {
			out = append(out, stepMany, stepManyRevert, stepSettle)
		}
		out = append(out, stepStopManager)
	}
	return out
}

// orderOf is the order in which steps give the variants their turns.
func orderOf(steps []step) []string {
	var out []string
	for _, s := range steps {
		switch s {
		case stepBareInject:
			out = append(out, variantBare)
		case stepStartManager:
			out = append(out, variantManager)
		}
	}
	return out
}

// measureRun is run i at size n: steps, with a manager started with s for its turn.
func (e *env) measureRun(ctx context.Context, n int, s managerSettings, i int, steps []step) (runResult, error) {
	b := e.bench
	r := runResult{Order: orderOf(steps), Conditions: recordConditions()}
	for _, st := range steps {
		var err error
		switch st {
		case stepStartManager:
			err = e.startManager(ctx, fmt.Sprintf("run%d-", i+1), n, s)
		case stepStopManager:
			var mem memory
			mem, err = e.stopManager()
			r.Memory = &mem
		case stepBareInject:
			r.Bare, err = b.runBare(ctx, s)
		case stepBareRevert:
			r.BareRevert, err = b.runBareRevert(ctx, s)
		case stepSettle:
			_, err = b.waitSettled(ctx)
		default:
			err = e.managerStep(ctx, st, &r)
		}
		if err != nil {
			return r, fmt.Errorf("%s: %w", st, err)
		}
	}
	return r, nil
}

// managerStep runs one of the manager's measured steps and records it in r.
func (e *env) managerStep(ctx context.Context, st step, r *runResult) error {
	b := e.bench
	var p phase
	var err error
	switch st {
	case stepInject:
		r.Selector, err = b.runSelector(ctx)
	case stepSteady:
		p, err = b.runSteady(ctx, b.cfg.steady)
		r.Steady = &p
	case stepGitOps:
		p, err = b.runGitOps(ctx, b.cfg.gitOpsSettle)
		r.GitOps = &p
	case stepRevert:
		r.Revert, err = b.runRevert(ctx)
	case stepMany:
		p, err = b.runMany(ctx)
		r.Many = &p
	case stepManyRevert:
		p, err = b.runRevert(ctx)
		r.ManyRevert = &p
	default:
		return fmt.Errorf("no such step %q", st)
	}
	return err
}

// recordConditions are the machine's conditions now, with the versions of what the benchmark runs.
func recordConditions() *method.Conditions {
	c := method.Record(map[string]string{"kubernetes": kubernetesVersions, "go": runtime.Version()})
	return &c
}

// pacedSettings are the manager's defaults for rollouts: at most a quarter of a ScratchVolume's
// targets rolling out at once (main.go's --max-in-flight).
var pacedSettings = managerSettings{Name: "paced (--max-in-flight=25%)", Workers: defaultSettings.Workers, MaxInFlight: "25%"}

// rolloutSettings are the settings the rollout run compares: each round runs both, in an order
// drawn from the run's seed.
var rolloutSettings = []managerSettings{
	{Name: "unpaced (--max-in-flight=100%)", Workers: defaultSettings.Workers, MaxInFlight: "100%"},
	pacedSettings,
}

// measureRollouts replaces the fleet with StatefulSets of one pod each on the kwok nodes, and
// measures runs of a selector injection until every pod runs the new template, and its revert,
// with each of rolloutSettings in every round.
func (e *env) measureRollouts(ctx context.Context, cfg config, runs int) ([]rolloutResult, error) {
	b := e.bench
	logf("rollout run: %d StatefulSets with one pod each", cfg.rollout)
	if err := b.fleet.resize(ctx, 0); err != nil {
		return nil, err
	}
	b.fleet.replicas = 1
	b.fleet.size = 0
	if err := b.fleet.resize(ctx, cfg.rollout); err != nil {
		return nil, err
	}
	started, err := b.waitSettled(ctx)
	if err != nil {
		return nil, err
	}
	var out []rolloutResult
	for i := range runs {
		for _, s := range method.Shuffled(e.order, rolloutSettings) {
			logf("rollout run %d of %d, manager %s (load %s)", i+1, runs, s.Name, loadAverage())
			conditions := recordConditions()
			r, err := e.measureRollout(ctx, cfg, s)
			r.Conditions = conditions
			r.PodsRunningSeconds = started.Seconds()
			out = append(out, r)
			if err != nil {
				return out, err
			}
			logf("  Ready in %.1f s with at most %d rolling at once; rolled back in %.1f s", r.Inject.ReadySeconds, r.Inject.MaxRolling, r.RevertRolledOutSeconds)
		}
	}
	return out, nil
}

// measureRollout measures one selector injection on the rollout fleet until every pod runs the new
// template, and its revert until every pod runs the original again, with the manager started
// with s; it counts the StatefulSets rolling out at once.
func (e *env) measureRollout(ctx context.Context, cfg config, s managerSettings) (rolloutResult, error) {
	b := e.bench
	r := rolloutResult{StatefulSets: cfg.rollout, Replicas: 1, Settings: s}
	if err := e.startManager(ctx, "rollout-", cfg.rollout, s); err != nil {
		return r, err
	}
	var err error
	stop := b.sampleRolling(ctx)
	r.Inject, err = b.runSelector(ctx)
	r.Inject.MaxRolling = stop()
	if err != nil {
		return r, err
	}
	// The manager counts a StatefulSet Ready once its pods run the new template, so Ready is the
	// whole rollout; what the StatefulSet controller may still record is waited for before the
	// revert, so that the revert starts from a settled fleet.
	if _, err := b.waitSettled(ctx); err != nil {
		return r, err
	}
	stop = b.sampleRolling(ctx)
	r.Revert, err = b.runRevert(ctx)
	if err != nil {
		stop()
		return r, err
	}
	settled, err := b.waitSettled(ctx)
	r.Revert.MaxRolling = stop()
	r.RevertRolledOutSeconds = r.Revert.Seconds + settled.Seconds()
	if err != nil {
		return r, err
	}
	r.Memory, err = e.stopManager()
	return r, err
}

// sampleRolling counts, every pollInterval until the returned function is called, the StatefulSets
// whose rollout the StatefulSet controller has not finished, and returns the most seen at once.
func (b *bench) sampleRolling(ctx context.Context) func() int {
	ctx, cancel := context.WithCancel(ctx)
	most := make(chan int, 1)
	go func() {
		peak := 0
		for {
			peak = max(peak, unsettled(b.fleet.statefulSets(ctx)))
			select {
			case <-ctx.Done():
				most <- peak
				return
			case <-time.After(pollInterval):
			}
		}
	}()
	return func() int {
		cancel()
		return <-most
	}
}

// backgroundNamespaces hold the background objects.
const backgroundNamespaces = 20

// createBackground creates the objects a busy cluster holds besides the fleet, scaled by
// cfg.background, and waits until kwok runs the pods.
func (e *env) createBackground(ctx context.Context, cfg config) (backgroundCounts, error) {
	scale := func(n int) int { return int(math.Round(float64(n) * cfg.background)) }
	bg := backgroundCounts{ConfigMaps: scale(20000), Secrets: scale(5000), Pods: scale(10000)}
	bg.BigConfigMaps = bg.ConfigMaps / 10
	c := e.bench.admin
	start := time.Now()
	logf("creating %d ConfigMaps (%d of 100 KiB), %d Secrets, %d Pods", bg.ConfigMaps, bg.BigConfigMaps, bg.Secrets, bg.Pods)
	err := forEach(ctx, bg.ConfigMaps, createWorkers, func(ctx context.Context, i int) error {
		return c.Create(ctx, configMap(i, backgroundNamespaces, i%10 == 0))
	})
	if err == nil {
		err = forEach(ctx, bg.Secrets, createWorkers, func(ctx context.Context, i int) error {
			return c.Create(ctx, secret(i, backgroundNamespaces))
		})
	}
	nodes := localcluster.DefaultNodes(cfg.nodes)
	if err == nil {
		err = forEach(ctx, bg.Pods, createWorkers, func(ctx context.Context, i int) error {
			return c.Create(ctx, pod(i, backgroundNamespaces, nodes[i%len(nodes)].Name))
		})
	}
	if err != nil {
		return bg, fmt.Errorf("failed to create the background objects: %w", err)
	}
	_, err = waitFor(ctx, "kwok to run the background pods", cfg.timeout, func() (bool, string) {
		list := &corev1.PodList{}
		err := c.List(ctx, list, client.MatchingFields{"status.phase": "Pending"}, client.Limit(1))
		if err != nil {
			return false, err.Error()
		}
		left := len(list.Items)
		if list.RemainingItemCount != nil {
			left += int(*list.RemainingItemCount)
		}
		return left == 0, fmt.Sprintf("%d pods pending", left)
	})
	bg.CreateSeconds = time.Since(start).Seconds()
	logf("background objects ready in %.0f s", bg.CreateSeconds)
	return bg, err
}

// tuneControllerManager restarts kube-controller-manager with a higher client QPS and burst, as
// docs/tuning.md recommends for large fleets.
func (e *env) tuneControllerManager(ctx context.Context, qps int) error {
	var kcm *localcluster.Process
	for _, p := range e.cluster.Processes() {
		if p.Name == "kube-controller-manager" && p.Alive() {
			kcm = &p
		}
	}
	if kcm == nil {
		return errors.New("kube-controller-manager is not running")
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kcm.PID))
	if err != nil {
		return err
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")[1:]
	args = append(args, "--kube-api-qps="+strconv.Itoa(qps), "--kube-api-burst="+strconv.Itoa(2*qps))
	logf("restarting kube-controller-manager with --kube-api-qps=%d --kube-api-burst=%d", qps, 2*qps)
	if err := kcm.Stop(); err != nil {
		return err
	}
	p, err := e.cluster.StartProcess("kube-controller-manager-tuned", filepath.Join(e.binDir, "kube-controller-manager"), args, nil)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(3 * time.Second):
	}
	if !p.Alive() {
		return fmt.Errorf("kube-controller-manager exited; the end of %s:\n%s", p.Log, localcluster.Tail(p.Log, 20))
	}
	return nil
}

// memory is the manager's memory at the end of a measurement.
type memory struct {
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	RSSMiB     float64 `json:"rssMiB"`
	HeapMiB    float64 `json:"heapInuseMiB"`
	CPUSeconds float64 `json:"cpuSeconds"`
	Goroutines float64 `json:"goroutines"`
	// Profile is the heap profile taken nearest the peak of the resident set.
	Profile *heapProfile `json:"heapProfile,omitempty"`
}

func readMemory(ctx context.Context, m *manager) (memory, error) {
	var mem memory
	s, err := m.scrape(ctx)
	if err != nil {
		return mem, err
	}
	p, err := readProcStats(m.proc.PID)
	if err != nil {
		return mem, err
	}
	mem.PeakRSSMiB, mem.RSSMiB, mem.CPUSeconds = p.PeakRSSMiB, p.RSSMiB, p.CPUSeconds
	mem.HeapMiB = s.sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
	mem.Goroutines = s.sum("go_goroutines", nil)
	return mem, nil
}

// loadAverage is /proc/loadavg's three load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
