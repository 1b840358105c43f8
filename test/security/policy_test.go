package security_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// policyName names the sample ValidatingAdmissionPolicy and its binding.
const policyName = "dbtune-scratch-opt-in"

var (
	installPolicyOnce sync.Once
	installPolicyErr  error
)

// installPolicy applies config/samples/policy, once per run, and waits until the API server
// enforces it: a policy takes effect when the API server's informers have seen it.
func installPolicy(t *testing.T, c *cluster) {
	t.Helper()
	installPolicyOnce.Do(func() {
		objs, err := c.kustomize("samples/policy")
		if err == nil {
			err = c.apply(context.Background(), objs)
		}
		installPolicyErr = err
	})
	if installPolicyErr != nil {
		t.Fatalf("failed to install config/samples/policy: %v", installPolicyErr)
	}
	// The API server type-checks the expressions against the StatefulSet schema and reports
	// what it could not check, or found wrong, as warnings in the status.
	testenv.Eventually(t, waitTimeout, func() string {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := c.admin.Get(ctxFor(t), client.ObjectKey{Name: policyName}, p); err != nil {
			return err.Error()
		}
		switch {
		case p.Status.ObservedGeneration != p.Generation || p.Status.TypeChecking == nil:
			return "the API server has not type-checked the policy yet"
		case len(p.Status.TypeChecking.ExpressionWarnings) > 0:
			t.Fatalf("the policy's expressions have type-checking warnings: %+v", p.Status.TypeChecking.ExpressionWarnings)
		}
		return ""
	})
	ns := c.namespace(t)
	c.create(t, newStatefulSet(ns, "policy-probe", false))
	operator := c.as(t, operatorUser, operatorGroups...)
	testenv.Eventually(t, waitTimeout, func() string {
		err := operator.Patch(ctxFor(t), newStatefulSet(ns, "policy-probe", false), injectionPatch("probe", "0"), client.DryRunAll)
		if !deniedByPolicy(err) {
			return fmt.Sprintf("the API server does not enforce the policy yet: a new injection on an unlabeled StatefulSet got %v", err)
		}
		return ""
	})
}

// TestOptInPolicy sends the operator's kinds of change to StatefulSets with and without the opt-in
// label, as the operator's ServiceAccount with its generated ClusterRole, and as others, with
// server-side dry-run: only adding or changing injections on a StatefulSet without the label is
// refused, and only for the operator.
func TestOptInPolicy(t *testing.T) {
	c := require(t)
	installPolicy(t, c)
	ns := c.namespace(t)
	injected := newStatefulSet(ns, "injected", false)
	injected.Spec.Template.Annotations = map[string]string{v1alpha1.InjectionAnnotationPrefix + "tmp": "aaaa"}
	notTrue := newStatefulSet(ns, "not-true", false)
	notTrue.Labels = map[string]string{v1alpha1.ScratchOptInLabel: "yes"}
	c.create(t, newStatefulSet(ns, "unlabeled", false), newStatefulSet(ns, "labeled", true), injected, notTrue)

	operator := c.as(t, operatorUser, operatorGroups...)
	addVolume := client.RawPatch(types.JSONPatchType, []byte(
		`[{"op":"add","path":"/spec/template/spec/volumes","value":[{"name":"dbtune-scratch-tmp","emptyDir":{"medium":"Memory","sizeLimit":"32Mi"}}]}]`))
	tests := []struct {
		name, target string
		as           client.Client
		patch        client.Patch
		denied       bool
	}{
		{"new injection, unlabeled", "unlabeled", operator, injectionPatch("tmp", "bbbb"), true},
		{"new injection, label not \"true\"", "not-true", operator, injectionPatch("tmp", "bbbb"), true},
		{"new injection, labeled", "labeled", operator, injectionPatch("tmp", "bbbb"), false},
		{"changed injection, unlabeled", "injected", operator, injectionPatch("tmp", "bbbb"), true},
		{"second injection, unlabeled", "injected", operator, injectionPatch("other", "cccc"), true},
		{"removed injection, unlabeled", "injected", operator, removalPatch("tmp"), false},
		{"entries of a present injection put back, unlabeled", "injected", operator, addVolume, false},
		{"another user's change, unlabeled", "unlabeled", c.as(t, "someone-else", "system:masters"), injectionPatch("tmp", "bbbb"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.as.Patch(ctxFor(t), newStatefulSet(ns, tt.target, false), tt.patch, client.DryRunAll)
			switch {
			case tt.denied && !deniedByPolicy(err):
				t.Errorf("got %v, want the policy's denial", err)
			case !tt.denied && err != nil:
				t.Errorf("got %v, want it admitted", err)
			}
		})
	}

	// The operator never creates StatefulSets (its role does not allow it); a server-side apply
	// to one deleted meanwhile would, so CREATE meets the same rule. The identity here is the
	// operator's name in system:masters, so that only the policy can refuse.
	creator := c.as(t, operatorUser, append([]string{"system:masters"}, operatorGroups...)...)
	for _, tt := range []struct {
		name   string
		sts    *appsv1.StatefulSet
		denied bool
	}{
		{"create with an injection, unlabeled", injectedCopy(newStatefulSet(ns, "new", false)), true},
		{"create with an injection, labeled", injectedCopy(newStatefulSet(ns, "new", true)), false},
		{"create without an injection, unlabeled", newStatefulSet(ns, "new", false), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := creator.Create(ctxFor(t), tt.sts, client.DryRunAll)
			switch {
			case tt.denied && !deniedByPolicy(err):
				t.Errorf("got %v, want the policy's denial", err)
			case !tt.denied && err != nil:
				t.Errorf("got %v, want it admitted", err)
			}
		})
	}
}

// TestOperatorUnderOptInPolicy runs the real reconciler as the operator's ServiceAccount with the
// sample policy in force: a labeled StatefulSet is injected; an unlabeled one gets a condition
// naming the policy, Ready False and one Warning Event, without a retry loop; the label lets the
// injection through at once; and without the label again, a changed ScratchVolume is refused while
// the earlier injection stays, and deleting it still removes everything it added.
func TestOperatorUnderOptInPolicy(t *testing.T) {
	c := require(t)
	installPolicy(t, c)
	startOperator(t, c)
	ns := c.namespace(t)
	other := newStatefulSet(ns, "other", false)
	other.Spec.Replicas = ptr.To[int32](0) // no pods: nothing but the test changes it
	c.create(t, newStatefulSet(ns, "db", true), other,
		newScratchVolume(ns, "tmp", "db"), newScratchVolume(ns, "tmp-other", "other"))

	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, c, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, v1alpha1.ReasonInjected)
	})
	if !carries(t, c, ns, "db", "tmp") {
		t.Fatal("the labeled StatefulSet db lacks the injection of ScratchVolume tmp")
	}

	t.Run("an unlabeled StatefulSet is reported, not retried in a loop", func(t *testing.T) {
		for _, typ := range []string{v1alpha1.ConditionInjected, v1alpha1.ConditionReady} {
			testenv.Eventually(t, waitTimeout, func() string {
				return conditionIs(t, c, ns, "tmp-other", typ, metav1.ConditionFalse, v1alpha1.ReasonAdmissionDenied)
			})
		}
		msg := condition(t, c, ns, "tmp-other", v1alpha1.ConditionInjected).Message
		for _, want := range []string{"ValidatingAdmissionPolicy '" + policyName + "'", v1alpha1.ScratchOptInLabel + "=true", "StatefulSet other"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the Injected condition's message does not say %q: %s", want, msg)
			}
		}
		if carries(t, c, ns, "other", "tmp-other") {
			t.Error("the unlabeled StatefulSet other carries the injection")
		}
		before := writes.get(ns, "other")
		testenv.Consistently(t, 3*time.Second, func() string {
			if n := writes.get(ns, "other") - before; n > 1 {
				return fmt.Sprintf("the controller tried %d more writes to StatefulSet other after reporting the denial: a retry loop", n)
			}
			return ""
		})
		assertWarning(t, c, ns, "tmp-other", decide.EventBlocked)
	})
	t.Run("the label lets the injection through", func(t *testing.T) {
		setOptIn(t, c, ns, "other", true)
		testenv.Eventually(t, waitTimeout, func() string {
			return conditionIs(t, c, ns, "tmp-other", v1alpha1.ConditionInjected, metav1.ConditionTrue, v1alpha1.ReasonInjected)
		})
	})
	t.Run("without the label, a change is refused and the injection stays", func(t *testing.T) {
		hash := getSTS(t, c, ns, "other").Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+"tmp-other"]
		setOptIn(t, c, ns, "other", false)
		if err := c.admin.Patch(ctxFor(t), newScratchVolume(ns, "tmp-other", ""), mergePatch(`{"spec":{"size":"48Mi"}}`)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, waitTimeout, func() string {
			return conditionIs(t, c, ns, "tmp-other", v1alpha1.ConditionInjected, metav1.ConditionFalse, v1alpha1.ReasonAdmissionDenied)
		})
		if got := getSTS(t, c, ns, "other").Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+"tmp-other"]; got != hash {
			t.Errorf("the injection's hash is %q, want the earlier %q", got, hash)
		}
		sv := getSV(t, c, ns, "tmp-other")
		if len(sv.Status.Targets) != 1 || !sv.Status.Targets[0].Injected {
			t.Errorf("status.targets = %+v, want other still injected", sv.Status.Targets)
		}
	})
	t.Run("without the label, deleting the ScratchVolume still reverts", func(t *testing.T) {
		if err := c.admin.Delete(ctxFor(t), newScratchVolume(ns, "tmp-other", "")); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, waitTimeout, func() string {
			err := c.admin.Get(ctxFor(t), client.ObjectKey{Namespace: ns, Name: "tmp-other"}, &v1alpha1.ScratchVolume{})
			if !apierrors.IsNotFound(err) {
				return fmt.Sprintf("ScratchVolume tmp-other is still there (%v): its finalizer waits for the revert", err)
			}
			return ""
		})
		sts := getSTS(t, c, ns, "other")
		if carries(t, c, ns, "other", "tmp-other") || len(sts.Spec.Template.Spec.Volumes) > 0 {
			t.Errorf("StatefulSet other still carries entries of tmp-other: annotations %v, volumes %v",
				sts.Spec.Template.Annotations, sts.Spec.Template.Spec.Volumes)
		}
	})
}

// deniedByPolicy reports whether err is the sample policy's refusal, with a message that says
// what to do.
func deniedByPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policyName+"'") &&
		strings.Contains(err.Error(), v1alpha1.ScratchOptInLabel+"=true")
}

// injectionPatch sets the pod-template annotation of ScratchVolume name, as the operator's apply does.
func injectionPatch(name, hash string) client.Patch {
	return mergePatch(fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, v1alpha1.InjectionAnnotationPrefix+name, hash))
}

func removalPatch(name string) client.Patch {
	return mergePatch(fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:null}}}}}`, v1alpha1.InjectionAnnotationPrefix+name))
}

func injectedCopy(sts *appsv1.StatefulSet) *appsv1.StatefulSet {
	sts.Spec.Template.Annotations = map[string]string{v1alpha1.InjectionAnnotationPrefix + "tmp": "aaaa"}
	return sts
}

// newStatefulSet is a one-container StatefulSet with a 1Gi memory limit and no claim, which the
// cluster has no volume for, labeled to opt in or not.
func newStatefulSet(ns, name string, optIn bool) *appsv1.StatefulSet {
	sts := testenv.StatefulSet(ns, name, testenv.WithoutData(), testenv.WithMemoryLimit("1Gi"))
	if optIn {
		sts.Labels = map[string]string{v1alpha1.ScratchOptInLabel: "true"}
	}
	return sts
}

// setOptIn adds or removes the opt-in label, as the StatefulSet's owner would.
func setOptIn(t *testing.T, c *cluster, ns, name string, optIn bool) {
	t.Helper()
	testenv.Update(t, c.admin, ns, name, func(sts *appsv1.StatefulSet) {
		if optIn {
			metav1.SetMetaDataLabel(&sts.ObjectMeta, v1alpha1.ScratchOptInLabel, "true")
		} else {
			delete(sts.Labels, v1alpha1.ScratchOptInLabel)
		}
	})
}

func getSTS(t *testing.T, c *cluster, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	return testenv.Get[appsv1.StatefulSet](t, c.admin, ns, name)
}

func getSV(t *testing.T, c *cluster, ns, name string) *v1alpha1.ScratchVolume {
	t.Helper()
	return testenv.Get[v1alpha1.ScratchVolume](t, c.admin, ns, name)
}

// carries reports whether StatefulSet name's pod template has ScratchVolume sv's annotation.
func carries(t *testing.T, c *cluster, ns, name, sv string) bool {
	_, ok := getSTS(t, c, ns, name).Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+sv]
	return ok
}

func condition(t *testing.T, c *cluster, ns, name, typ string) metav1.Condition {
	if cond := meta.FindStatusCondition(getSV(t, c, ns, name).Status.Conditions, typ); cond != nil {
		return *cond
	}
	return metav1.Condition{}
}

// conditionIs returns "" when the ScratchVolume's condition has the status and reason for its
// current generation, else what it has.
func conditionIs(t *testing.T, c *cluster, ns, name, typ string, status metav1.ConditionStatus, reason string) string {
	sv := getSV(t, c, ns, name)
	cond := meta.FindStatusCondition(sv.Status.Conditions, typ)
	switch {
	case cond == nil:
		return fmt.Sprintf("%s has no %s condition yet", name, typ)
	case cond.Status != status || cond.Reason != reason:
		return fmt.Sprintf("%s: %s=%s reason %s (%q), want %s/%s", name, typ, cond.Status, cond.Reason, cond.Message, status, reason)
	case cond.ObservedGeneration != sv.Generation:
		return fmt.Sprintf("%s: %s describes generation %d, not %d", name, typ, cond.ObservedGeneration, sv.Generation)
	}
	return ""
}

// assertWarning waits for a Warning Event with reason about the ScratchVolume.
func assertWarning(t *testing.T, c *cluster, ns, name, reason string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
		list := &eventsv1.EventList{}
		if err := c.admin.List(ctxFor(t), list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		for _, ev := range list.Items {
			if ev.Regarding.Name == name && ev.Reason == reason && ev.Type == corev1.EventTypeWarning {
				return ""
			}
		}
		return fmt.Sprintf("no Warning Event %s about %s among %d", reason, name, len(list.Items))
	})
}

// The operator runs once per package, as the manager binary runs it, with a client that
// authenticates as its ServiceAccount (impersonated) and counts its StatefulSet writes.
var (
	operatorOnce sync.Once
	operatorErr  error
	stopOperator = func() {}
	writes       = &writeCounter{n: map[string]int{}}
)

func startOperator(t *testing.T, c *cluster) {
	t.Helper()
	operatorOnce.Do(func() { operatorErr = c.runOperator() })
	if operatorErr != nil {
		t.Fatalf("failed to start the operator: %v", operatorErr)
	}
}

func (c *cluster) runOperator() error {
	cfg := c.impersonating(operatorUser, operatorGroups...)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, c: writes} })
	informers := &fleetcache.Informers{}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(nil, informers),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	stopOperator = func() { cancel(); <-done }
	r := &controllers.ScratchVolumeReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("scratch-operator"),
		APIReader: mgr.GetAPIReader(), Informers: informers, MaxConcurrentReconciles: 2,
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		close(done)
		return err
	}
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "security: the operator stopped: %v\n", err)
		}
	}()
	return nil
}

// writeCounter counts the operator's PATCH and PUT requests per StatefulSet.
type writeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *writeCounter) get(ns, name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[ns+"/"+name]
}

type countingTransport struct {
	rt http.RoundTripper
	c  *writeCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch || req.Method == http.MethodPut {
		// /apis/apps/v1/namespaces/NS/statefulsets/NAME
		if parts := strings.Split(req.URL.Path, "/"); len(parts) == 8 && parts[6] == "statefulsets" {
			t.c.mu.Lock()
			t.c.n[parts[5]+"/"+parts[7]]++
			t.c.mu.Unlock()
		}
	}
	return t.rt.RoundTrip(req)
}
