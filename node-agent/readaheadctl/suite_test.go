package readaheadctl_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/readaheadstatus"
	"github.com/dbtune/scratch-operator/node-agent/nodeprofile"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
	"github.com/dbtune/scratch-operator/node-agent/readaheadctl"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var (
	env *testenv.Env

	usersOnce   sync.Once
	usersErr    error
	operatorCfg *rest.Config
	agentCfg    *rest.Config
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	os.Exit(testenv.Main(m, &env))
}

// zapLevel keeps the managers quiet unless DBTUNE_TEST_VERBOSE=1: stopping a manager at the end
// of each test logs canceled requests as errors.
func zapLevel() zapcore.Level {
	if os.Getenv("DBTUNE_TEST_VERBOSE") == "1" {
		return zapcore.DebugLevel
	}
	return zapcore.DPanicLevel
}

// setup returns the API server with the operator's PolicyStatusReconciler running for the test,
// as a user holding only what the PolicyStatusReconciler's RBAC markers grant; the node agents
// run as another user holding only what the node reconciler's markers grant. A missing verb in
// either set of markers fails these tests.
func setup(t *testing.T) *testenv.Env {
	t.Helper()
	e := testenv.Require(t, env)
	usersOnce.Do(func() {
		if operatorCfg, usersErr = userWithMarkerRBAC(e, "dbtune-operator", "../../controllers/readaheadstatus/policystatus.go"); usersErr != nil {
			return
		}
		agentCfg, usersErr = userWithMarkerRBAC(e, "dbtune-node-agent", "reconciler.go", "../nodeprofile/nodeprofile.go")
	})
	if usersErr != nil {
		t.Fatalf("failed to create the users: %v", usersErr)
	}
	mgr, err := ctrl.NewManager(operatorCfg, ctrl.Options{
		Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := readaheadstatus.SetupPolicyStatus(mgr); err != nil {
		t.Fatal(err)
	}
	run(t, mgr)
	return e
}

// userWithMarkerRBAC adds a user bound to a ClusterRole built from the +kubebuilder:rbac markers
// of the source files, as controller-gen would build it.
func userWithMarkerRBAC(e *testenv.Env, name string, files ...string) (*rest.Config, error) {
	var rules []rbacv1.PolicyRule
	for _, f := range files {
		r, err := markerRules(f)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r...)
	}
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := e.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("failed to create %T %s: %w", o, name, err)
		}
	}
	user, err := e.Environment().ControlPlane.AddUser(envtest.User{Name: name}, e.Config)
	if err != nil {
		return nil, err
	}
	return user.Config(), nil
}

func markerRules(file string) ([]rbacv1.PolicyRule, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var rules []rbacv1.PolicyRule
	for _, line := range strings.Split(string(src), "\n") {
		marker, ok := strings.CutPrefix(strings.TrimSpace(line), "// +kubebuilder:rbac:")
		if !ok {
			continue
		}
		var rule rbacv1.PolicyRule
		for _, kv := range strings.Split(marker, ",") {
			k, v, _ := strings.Cut(kv, "=")
			values := strings.Split(strings.Trim(v, `"`), ";")
			switch k {
			case "groups":
				rule.APIGroups = values
			case "resources":
				rule.Resources = values
			case "verbs":
				rule.Verbs = values
			default:
				return nil, fmt.Errorf("%s: unexpected RBAC marker field %q", file, k)
			}
		}
		rules = append(rules, rule)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s has no RBAC markers", file)
	}
	return rules, nil
}

// agent is one node with a node agent running on a fake host built from a fixture.
type agent struct {
	e *testenv.Env
	// statusWrites counts the agent's requests to the NodeIOProfile status.
	statusWrites atomic.Int64
	node         string
	label        string
	host         *readaheadtest.FakeHost
	paths        readahead.Paths
	stateDir     string
	stop         func()
}

// newNode creates a Node labeled for this test only, so that policies of other tests (all
// cluster-scoped) never select it, and a fake host with the fixture's devices at their values.
func newNode(t *testing.T, e *testenv.Env, fixture string) *agent {
	t.Helper()
	a := &agent{e: e, label: "t-" + rand.String(8), host: readaheadtest.NewFakeHost(),
		paths: readaheadtest.Fixture(t, fixture), stateDir: t.TempDir()}
	a.node = "node-" + a.label
	inv, err := readahead.ReadInventory(a.paths)
	if err != nil {
		t.Fatal(err)
	}
	for i := range inv.Devices {
		if d := &inv.Devices[i]; d.Kind != readahead.KindPartition && d.ReadAheadKiB >= 0 {
			a.host.AddDevice(d.ID(), d.ReadAheadKiB)
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.node, Labels: a.labels()}}
	create(t, e, node)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.Client.Delete(ctx, node)
		// envtest runs no garbage collector to follow the owner reference.
		_ = e.Client.Delete(ctx, &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: a.node}})
	})
	return a
}

func (a *agent) labels() map[string]string {
	return map[string]string{"dbtune.test/case": a.label, "kubernetes.io/hostname": a.node}
}

func (a *agent) selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"dbtune.test/case": a.label}}
}

func (a *agent) config() readaheadctl.Config {
	return readaheadctl.Config{NodeName: a.node, Paths: a.paths, StateDir: a.stateDir, Host: a.host,
		ResyncPeriod: 300 * time.Millisecond}
}

// start runs the node agent's manager, as the DaemonSet's would be built, until the test ends
// or stop is called.
func (a *agent) start(t *testing.T, cfg readaheadctl.Config) {
	t.Helper()
	restCfg := rest.CopyConfig(agentCfg)
	restCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &statusWriteCounter{rt: rt, n: &a.statusWrites} })
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme: a.e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache:      nodeprofile.CacheOptions(cfg.NodeName),
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := readaheadctl.Setup(mgr, cfg); err != nil {
		t.Fatal(err)
	}
	a.stop = run(t, mgr)
}

// statusWriteCounter counts PATCH requests to a status subresource.
type statusWriteCounter struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c *statusWriteCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/status") {
		c.n.Add(1)
	}
	return c.rt.RoundTrip(req)
}

func run(t *testing.T, mgr manager.Manager) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (a *agent) policy(t *testing.T, name string, kib int64, names ...string) *v1alpha1.ReadAheadPolicy {
	t.Helper()
	p := &v1alpha1.ReadAheadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: a.label + "-" + name},
		Spec: v1alpha1.ReadAheadPolicySpec{
			NodeSelector: readaheadtest.FromMeta(a.selector()), ReadAheadKiB: kib,
		},
	}
	for _, n := range names {
		p.Spec.Devices.Names = append(p.Spec.Devices.Names, v1alpha1.DeviceGlob(n))
	}
	return p
}

func create(t *testing.T, e *testenv.Env, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := e.Client.Create(ctxFor(t), o); err != nil {
			t.Fatalf("failed to create %T %s: %v", o, o.GetName(), err)
		}
		if p, ok := o.(*v1alpha1.ReadAheadPolicy); ok {
			t.Cleanup(func() { _ = client.IgnoreNotFound(e.Client.Delete(context.Background(), p)) })
		}
	}
}

func remove(t *testing.T, e *testenv.Env, o client.Object) {
	t.Helper()
	if err := e.Client.Delete(ctxFor(t), o); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("failed to delete %T %s: %v", o, o.GetName(), err)
	}
}

func (a *agent) profile(t *testing.T) *v1alpha1.NodeIOProfile {
	t.Helper()
	p := &v1alpha1.NodeIOProfile{}
	if err := a.e.Client.Get(ctxFor(t), client.ObjectKey{Name: a.node}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return p
}

func (a *agent) value(device string) int64 {
	v, ok := a.host.Value(device)
	if !ok {
		return -1
	}
	return v
}

// values checks the fake host's read-ahead of some devices.
func (a *agent) values(want map[string]int64) func() string {
	return func() string {
		for dev, kib := range want {
			if got := a.value(dev); got != kib {
				return fmt.Sprintf("%s has %d KiB, want %d", dev, got, kib)
			}
		}
		return ""
	}
}

// condition describes a condition as "Status Reason: Message", or "" when it is missing.
func condition(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + " " + c.Reason + ": " + c.Message
}

func device(p *v1alpha1.NodeIOProfile, name string) *v1alpha1.DeviceReadAheadStatus {
	if p == nil {
		return nil
	}
	for i := range p.Status.ReadAhead {
		if p.Status.ReadAhead[i].Device == name {
			return &p.Status.ReadAhead[i]
		}
	}
	return nil
}

func kib(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// describe shows a device entry as "policy original/desired/current message", followed by
// " overrides [p q]" when it outranks other policies.
func describe(d *v1alpha1.DeviceReadAheadStatus) string {
	if d == nil {
		return "no entry"
	}
	s := fmt.Sprintf("%s %s/%s/%s %q", d.Policy, kib(d.OriginalKiB), kib(d.DesiredKiB), kib(d.CurrentKiB), d.Message)
	if len(d.OverriddenPolicies) > 0 {
		s += fmt.Sprintf(" overrides %v", d.OverriddenPolicies)
	}
	return s
}

func (a *agent) getPolicy(t *testing.T, p *v1alpha1.ReadAheadPolicy) *v1alpha1.ReadAheadPolicy {
	t.Helper()
	got := &v1alpha1.ReadAheadPolicy{}
	if err := a.e.Client.Get(ctxFor(t), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// events lists the Events about the agent's Node with a reason.
func (a *agent) events(t *testing.T, reason string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := a.e.Client.List(ctxFor(t), list); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "Node" && ev.Regarding.Name == a.node && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// eventWith waits for an Event about the Node with the reason and a note containing text.
func (a *agent) eventWith(t *testing.T, reason, eventType, text string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
		evs := a.events(t, reason)
		for _, ev := range evs {
			if ev.Type == eventType && strings.Contains(ev.Note, text) {
				return ""
			}
		}
		notes := make([]string, 0, len(evs))
		for _, ev := range evs {
			notes = append(notes, ev.Type+": "+ev.Note)
		}
		return fmt.Sprintf("no %s Event %s containing %q; have %q", eventType, reason, text, notes)
	})
}

// gauge returns dbtune_node_read_ahead_bytes for a device, or -1 without a series.
func gauge(t *testing.T, dev string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "dbtune_node_read_ahead_bytes" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, "device") == dev {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// waitTimeout is how long testenv.Eventually waits here for the controller to act.
const waitTimeout = 30 * time.Second

func ctxFor(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
