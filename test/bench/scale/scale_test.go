package main

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var testEnv *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &testEnv))
}

// Every shape of the fleet must be one the controller injects with a single apply and a ConfigMap,
// or the benchmark would measure refusals, or container patches the bare client does not send.
func TestShapesAreInjectable(t *testing.T) {
	for i := range shapes {
		sts := statefulSet(i, 3, 100, 0)
		sv := selectorScratchVolume(sts.Namespace)
		sv.Spec.Memory.Accounting = v1alpha1.MemoryValidate
		w, err := injectionWrites(sv, sts)
		if err != nil {
			t.Fatalf("shape %s: %v", shapes[i].name, err)
		}
		if got := *w.configMap.Namespace; got != sts.Namespace {
			t.Errorf("shape %s: ConfigMap in %s, want %s", shapes[i].name, got, sts.Namespace)
		}
		if w.statefulSet.Spec == nil || w.statefulSet.Spec.Template == nil || len(w.statefulSet.Spec.Template.Spec.Volumes) == 0 {
			t.Errorf("shape %s: the apply carries no volume", shapes[i].name)
		}
	}
}

func TestFleetLayout(t *testing.T) {
	tiers := []int{100, 1000, 5000}
	for _, tc := range []struct{ i, tier int }{{0, 100}, {99, 100}, {100, 1000}, {999, 1000}, {1000, 5000}, {4999, 5000}} {
		if got := tierOf(tc.i, tiers); got != tc.tier {
			t.Errorf("tierOf(%d) = %d, want %d", tc.i, got, tc.tier)
		}
	}
	if got, want := fleetNamespace(23, 10), "fleet-03"; got != want {
		t.Errorf("fleetNamespace(23, 10) = %s, want %s", got, want)
	}
	if got := len(configMap(0, 20, true).Data["dashboard.json"]); got != 100<<10 {
		t.Errorf("a big ConfigMap holds %d bytes of dashboard, want %d", got, 100<<10)
	}
	if a, b := filler(1, 64), filler(2, 64); a == b {
		t.Error("filler gives two seeds the same text")
	}
	levels, err := parseLevels("5000, 100,1000,100")
	if err != nil || !cmp.Equal(levels, []int{100, 1000, 5000}) {
		t.Errorf("parseLevels = %v, %v", levels, err)
	}
	if _, err := parseLevels("100,x"); err == nil {
		t.Error("parseLevels accepted x")
	}
}

func TestQuantile(t *testing.T) {
	b := buckets{0.1: 10, 1: 90, 10: 100, math.Inf(1): 100}
	for _, tc := range []struct{ q, want float64 }{{0.05, 0.05}, {0.5, 0.55}, {0.99, 9.1}} {
		if got := b.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%g) = %g, want %g", tc.q, got, tc.want)
		}
	}
	if got := (buckets{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("quantile of nothing = %g, want NaN", got)
	}
	if got := median([]float64{3, 1, 2, 10}); got != 2.5 {
		t.Errorf("median = %g, want 2.5", got)
	}
}

// TestWritesAtSmallScale is the benchmark at N=200 against envtest's API server, with the
// controller in this process and no timing asserted: exactly one StatefulSet write per StatefulSet
// for the injection, none in a steady state with unrelated edits or after a GitOps re-apply, one per
// StatefulSet for an exact revert; and the bare client's payload is exactly what the controller owns.
func TestWritesAtSmallScale(t *testing.T) {
	e := testenv.Require(t, testEnv)
	const n, namespaces = 200, 4
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newTestBench(ctx, t, e, namespaces)
	start := time.Now()
	if err := b.fleet.resize(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d StatefulSets created in %.1f s", n, time.Since(start).Seconds())
	checkBareTimer(ctx, t, b, n, namespaces)
	startController(ctx, t, e)
	writes := func() float64 { return controllerWrites(t) }

	before := writes()
	inj, err := b.measure(ctx, func(p *phase) error {
		start := time.Now()
		for i := range namespaces {
			if err := b.admin.Create(ctx, selectorScratchVolume(fleetNamespace(i, namespaces))); err != nil {
				return err
			}
		}
		return b.waitInjected(ctx, p, start, fleetScratchVolume)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The API server's count agrees: nobody else wrote a StatefulSet meanwhile.
	if got := writes() - before; got != n || inj.ServerStatefulSetWrites != n {
		t.Errorf("injection: %g StatefulSet writes by the controller's count, %g by the API server's, want %d", got, inj.ServerStatefulSetWrites, n)
	}
	// The manager's time holds its read of each StatefulSet too.
	if got := inj.ServerReads["statefulsets"]; got < n {
		t.Errorf("injection: %g GETs of StatefulSets while the controller was timed, want at least %d", got, n)
	}
	t.Logf("injected in %.1f s", inj.Seconds)
	checkBarePayload(ctx, t, b)

	before = writes()
	if _, err := b.runSteady(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := b.runGitOps(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := writes() - before; got != 0 {
		t.Errorf("steady state and GitOps re-apply: %g StatefulSet writes, want 0", got)
	}

	before = writes()
	rev, err := b.runRevert(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reverted in %.1f s", rev.Seconds)
	if got := writes() - before; got != n {
		t.Errorf("revert: %g StatefulSet writes, want %d", got, n)
	}
}

// checkBareTimer times the bare client's injection and revert of the fleet of n StatefulSets over
// namespaces, with no manager running, and checks that its timer holds what the manager's does:
// the ScratchVolumes' defaults, a read of every StatefulSet and both applies of each; and that it
// refuses to be timed beside a running manager.
func checkBareTimer(ctx context.Context, t *testing.T, b *bench, n, namespaces int) {
	t.Helper()
	b.mgr = &manager{name: "a manager"}
	if _, err := b.runBare(ctx, defaultSettings); !errors.Is(err, errManagerRunning) {
		t.Errorf("the bare client timed beside a running manager: %v", err)
	}
	b.mgr = nil
	inj, err := b.runBare(ctx, defaultSettings)
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]float64{
		"dry-run ScratchVolume creates": inj.ServerDryRuns["scratchvolumes"],
		"StatefulSet GETs":              inj.ServerReads["statefulsets"],
		"StatefulSet writes":            inj.ServerWrites["statefulsets"],
		"ConfigMap writes":              inj.ServerWrites["configmaps"],
	} {
		want := float64(n)
		if what == "dry-run ScratchVolume creates" {
			want = float64(namespaces)
		}
		if got != want {
			t.Errorf("bare client's timed injection: %g %s, want %g", got, what, want)
		}
	}
	if !(inj.SentSeconds > 0 && inj.SentSeconds <= inj.Seconds) {
		t.Errorf("bare client: requests sent in %.3f s of a phase of %.3f s", inj.SentSeconds, inj.Seconds)
	}
	if got := countInjected(b.fleet.statefulSets(ctx), fleetScratchVolume); got != n {
		t.Errorf("bare client: %d of %d StatefulSets injected", got, n)
	}
	rev, err := b.runBareRevert(ctx, defaultSettings)
	if err != nil {
		t.Fatal(err)
	}
	if got := rev.ServerWrites["statefulsets"]; got != float64(n) {
		t.Errorf("bare client's revert: %g StatefulSet writes, want %d", got, n)
	}
	t.Logf("bare client: injected in %.1f s, reverted in %.1f s", inj.Seconds, rev.Seconds)
}

// checkBarePayload dry-runs the bare client's apply on a few injected StatefulSets: when it is what
// the controller owns, the server would change nothing.
func checkBarePayload(ctx context.Context, t *testing.T, b *bench) {
	t.Helper()
	sets := b.fleet.statefulSets(ctx)
	for _, i := range []int{0, len(sets) / 2, len(sets) - 1} {
		live := sets[i].DeepCopy()
		orig := live.DeepCopy()
		orig.Spec.Template = b.fleet.originals[client.ObjectKeyFromObject(live)]
		sv := &v1alpha1.ScratchVolume{}
		if err := b.admin.Get(ctx, client.ObjectKey{Namespace: live.Namespace, Name: fleetScratchVolume}, sv); err != nil {
			t.Fatal(err)
		}
		w, err := injectionWrites(sv, orig)
		if err != nil {
			t.Fatal(err)
		}
		dry := &corev1.PodTemplateSpec{}
		if err := applyDryRun(ctx, b, w, dry); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(live.Spec.Template, *dry); d != "" {
			t.Errorf("StatefulSet %s: the bare client's apply would change the injected template (-live +bare):\n%s", live.Name, d)
		}
	}
}

// applyDryRun returns the template the bare client's apply would leave.
func applyDryRun(ctx context.Context, b *bench, w writes, out *corev1.PodTemplateSpec) error {
	res, err := b.cs.AppsV1().StatefulSets(*w.statefulSet.Namespace).Apply(ctx, w.statefulSet,
		metav1.ApplyOptions{FieldManager: v1alpha1.FieldManager, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return err
	}
	*out = res.Spec.Template
	return nil
}

func newTestBench(ctx context.Context, t *testing.T, e *testenv.Env, namespaces int) *bench {
	t.Helper()
	for i := range namespaces {
		ns := &corev1.Namespace{}
		ns.Name = fleetNamespace(i, namespaces)
		if err := client.IgnoreAlreadyExists(e.Client.Create(ctx, ns)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := newFleet(ctx, e.Config, e.Client, namespaces, []int{200}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &bench{cfg: config{timeout: time.Minute}, rest: e.Config, admin: e.Client, cs: cs, fleet: f, logf: t.Logf}
}

// startController runs the ScratchVolume controller in this process, wired as main.go wires it.
func startController(ctx context.Context, t *testing.T, e *testenv.Env) {
	t.Helper()
	informers := &fleetcache.Informers{}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: controllers.CacheOptions(nil, informers),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &controllers.ScratchVolumeReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("scratch-operator"), APIReader: mgr.GetAPIReader(), Informers: informers,
		MaxConcurrentReconciles: defaultSettings.Workers,
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// controllerWrites reads the controller's count of its StatefulSet writes, the metric the benchmark
// reads from the manager binary.
func controllerWrites(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{}
	for _, f := range families {
		s[f.GetName()] = f
	}
	return s.sum("dbtune_scratch_statefulset_writes_total", nil)
}

func TestParseTop(t *testing.T) {
	out := []byte(`File: manager
Type: inuse_space
Showing nodes accounting for 30.50MB, 90.70% of 33.63MB total
Showing top 2 nodes out of 170
      flat  flat%   sum%        cum   cum%
    5.00MB 14.87% 14.87%     7.55MB 22.45%  github.com/dbtune/scratch-operator/api/v1alpha1.(*ScratchVolumeStatus).DeepCopyInto
    3.50MB 10.41% 25.28%     3.50MB 10.41%  k8s.io/api/core/v1.(*ResourceRequirements).Unmarshal
`)
	top, total, err := parseTop(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []profileEntry{
		{Function: "github.com/dbtune/scratch-operator/api/v1alpha1.(*ScratchVolumeStatus).DeepCopyInto", FlatMiB: 5, FlatPct: 14.87, CumMiB: 7.55},
		{Function: "k8s.io/api/core/v1.(*ResourceRequirements).Unmarshal", FlatMiB: 3.5, FlatPct: 10.41, CumMiB: 3.5},
	}
	if diff := cmp.Diff(want, top); diff != "" {
		t.Errorf("parseTop entries (-want +got):\n%s", diff)
	}
	if total != 33.63 {
		t.Errorf("parseTop total = %g MiB, want 33.63", total)
	}
}
