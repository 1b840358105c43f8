package main

// This file measures how long a database is without a pod when the API server refuses the pods of
// an injected revision (-only refusal): the StatefulSet controller deletes the highest pod to roll
// it, cannot create its successor, and the manager puts the StatefulSet back. The figure to beat is
// what the StatefulSet controller needs to recreate a pod anyway, measured side by side: the same
// pod deleted by hand, on the same StatefulSet, in rounds of both cases in an order drawn from the
// seed.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/bench/chart"
	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// The two cases of the refusal measurement.
const (
	caseDeleted = "pod deleted, recreated by the StatefulSet controller"
	caseRefused = "injected pod refused, StatefulSet put back"
)

// refusalReplicas is how many pods the measured StatefulSet has; the highest is the one rolled.
const refusalReplicas = 3

// refusalRun is one case of one round.
type refusalRun struct {
	Round int    `json:"round"`
	Case  string `json:"case"`
	// Turn is the case's place in its round, from 1.
	Turn int `json:"turn"`
	// MissingSeconds is how long the pod was missing: from the watch event of its deletion to that
	// of its successor's creation.
	MissingSeconds float64 `json:"missingSeconds"`
	// ReadySeconds is from the same event to the one that has the successor Ready.
	ReadySeconds float64 `json:"readySeconds"`
	// Message is the refusal the status recorded, for a refused injection.
	Message    string             `json:"message,omitempty"`
	Conditions *method.Conditions `json:"conditions,omitempty"`
}

// measureRefusals runs cfg.runs rounds of both cases on one StatefulSet of refusalReplicas pods on
// the kwok nodes, with the manager at its defaults.
func (e *env) measureRefusals(ctx context.Context, cfg config) ([]refusalRun, error) {
	b := e.bench
	ns := "refusal"
	if err := client.IgnoreAlreadyExists(b.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
		return nil, err
	}
	sts := refusalStatefulSet(ns)
	if err := b.admin.Create(ctx, sts); err != nil {
		return nil, err
	}
	if err := b.waitRolledOut(ctx, client.ObjectKeyFromObject(sts)); err != nil {
		return nil, err
	}
	if err := e.startManager(ctx, "refusal-", 1, defaultSettings); err != nil {
		return nil, err
	}
	var out []refusalRun
	for round := 1; round <= cfg.runs; round++ {
		for turn, c := range method.Shuffled(e.order, []string{caseDeleted, caseRefused}) {
			logf("refusal round %d of %d: %s (load %s)", round, cfg.runs, c, loadAverage())
			conditions := recordConditions()
			r := refusalRun{Round: round, Case: c, Turn: turn + 1, Conditions: conditions}
			var err error
			if c == caseDeleted {
				err = b.deletedPod(ctx, sts, &r)
			} else {
				err = b.refusedPod(ctx, sts, &r)
			}
			out = append(out, r)
			if err != nil {
				return out, fmt.Errorf("round %d, %s: %w", round, c, err)
			}
			logf("  missing %.3f s, ready after %.3f s", r.MissingSeconds, r.ReadySeconds)
			if err := b.waitRolledOut(ctx, client.ObjectKeyFromObject(sts)); err != nil {
				return out, err
			}
		}
	}
	_, err := e.stopManager()
	return out, err
}

// refusalStatefulSet is a MariaDB StatefulSet of refusalReplicas pods with its data on a claim,
// which Validate admits: the injection adds the init container that creates the must-survive
// directories on the claim, which the policy refuses.
func refusalStatefulSet(ns string) *appsv1.StatefulSet {
	sts := testenv.StatefulSet(ns, "db", testenv.WithReplicas(refusalReplicas), testenv.WithContainerName("mariadb"),
		testenv.WithArgs("--innodb-buffer-pool-size=512M"))
	sts.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	return sts
}

// victim is the pod a rollout replaces first, and the one deleted by hand.
func victim(sts *appsv1.StatefulSet) types.NamespacedName {
	return types.NamespacedName{Namespace: sts.Namespace, Name: fmt.Sprintf("%s-%d", sts.Name, refusalReplicas-1)}
}

// deletedPod deletes the victim and times its recreation.
func (b *bench) deletedPod(ctx context.Context, sts *appsv1.StatefulSet, r *refusalRun) error {
	old := &corev1.Pod{}
	if err := b.admin.Get(ctx, victim(sts), old); err != nil {
		return err
	}
	watch := b.watchPod(ctx, victim(sts), old.UID)
	if err := b.admin.Delete(ctx, old); err != nil {
		return err
	}
	return watch(r)
}

// refusedPod installs an admission policy that refuses pods carrying the manager's init container,
// injects the StatefulSet, times the victim's absence until the manager has put the StatefulSet
// back, and removes the ScratchVolume and the policy.
func (b *bench) refusedPod(ctx context.Context, sts *appsv1.StatefulSet, r *refusalRun) error {
	cleanup, err := b.refuseInjectedPods(ctx, sts.Namespace)
	defer func() { err = errors.Join(err, cleanup()) }()
	if err != nil {
		return err
	}
	old := &corev1.Pod{}
	if err := b.admin.Get(ctx, victim(sts), old); err != nil {
		return err
	}
	watch := b.watchPod(ctx, victim(sts), old.UID)
	sv := &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: fmt.Sprintf("tmp-%d", r.Round)},
		Spec: v1alpha1.ScratchVolumeSpec{Target: v1alpha1.ScratchTarget{Name: sts.Name}, Size: resource.MustParse("256Mi"),
			Purpose: v1alpha1.PurposeMySQLTmpdir},
	}
	if err := b.admin.Create(ctx, sv); err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, client.IgnoreNotFound(b.admin.Delete(ctx, sv)), b.waitGone(ctx, client.ObjectKeyFromObject(sv), &v1alpha1.ScratchVolume{}))
	}()
	if err := watch(r); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &v1alpha1.ScratchVolume{}
		if err := b.admin.Get(ctx, client.ObjectKeyFromObject(sv), got); err != nil {
			return false, err
		}
		for _, t := range got.Status.Targets {
			if t.Refused != nil {
				r.Message = t.Refused.Message
				return true, nil
			}
		}
		return false, nil
	})
}

// watchPod starts watching pod name, whose current UID is old, and returns the function that
// waits until its successor is Ready and records the times in r: from the watch event of the old
// pod's deletion to that of its successor's creation, and to the one that has it Ready, each taken
// when it arrives.
func (b *bench) watchPod(ctx context.Context, name types.NamespacedName, old types.UID) func(*refusalRun) error {
	type times struct {
		missing, ready float64
		err            error
	}
	done := make(chan times, 1)
	w, err := b.cs.CoreV1().Pods(name.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name.Name})
	if err != nil {
		return func(*refusalRun) error { return fmt.Errorf("failed to watch pod %s: %w", name, err) }
	}
	go func() {
		defer w.Stop()
		var gone time.Time
		var t times
		timeout := time.After(3 * time.Minute)
		for {
			select {
			case <-timeout:
				t.err = errors.New("timed out")
				done <- t
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.err = errors.New("the watch ended")
					done <- t
					return
				}
				now := time.Now()
				p, isPod := ev.Object.(*corev1.Pod)
				switch {
				case !isPod:
				case ev.Type == watch.Deleted && p.UID == old:
					gone = now
				case p.UID == old || gone.IsZero():
				default:
					if t.missing == 0 {
						t.missing = now.Sub(gone).Seconds()
					}
					if podIsReady(p) {
						t.ready = now.Sub(gone).Seconds()
						done <- t
						return
					}
				}
			}
		}
	}()
	return func(r *refusalRun) error {
		t := <-done
		r.MissingSeconds, r.ReadySeconds = t.missing, t.ready
		if t.err != nil {
			return fmt.Errorf("waiting for pod %s to come back: %w", name, t.err)
		}
		return nil
	}
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// refuseInjectedPods binds, to namespace ns, a ValidatingAdmissionPolicy that refuses pods with
// an init container named like the manager's, waits until the API server enforces it, and returns
// the function that removes it.
func (b *bench) refuseInjectedPods(ctx context.Context, ns string) (func() error, error) {
	policy, binding, probe := testenv.InitContainerRefusal("no-ram-"+ns, ns, "no RAM volumes in this namespace")
	cleanup := func() error {
		errs := make([]error, 0, 2)
		for _, o := range []client.Object{binding, policy} {
			errs = append(errs, client.IgnoreNotFound(b.admin.Delete(context.Background(), o)))
		}
		return errors.Join(errs...)
	}
	for _, o := range []client.Object{policy, binding} {
		if err := b.admin.Create(ctx, o.DeepCopyObject().(client.Object)); err != nil {
			return cleanup, err
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := b.admin.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no RAM volumes"), nil
	})
	return cleanup, err
}

// waitRolledOut waits until every pod of the StatefulSet runs its current revision and is ready.
func (b *bench) waitRolledOut(ctx context.Context, key client.ObjectKey) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		sts := &appsv1.StatefulSet{}
		if err := b.admin.Get(ctx, key, sts); err != nil {
			return false, err
		}
		st := sts.Status
		return st.ObservedGeneration == sts.Generation && st.ReadyReplicas == *sts.Spec.Replicas &&
			st.UpdatedReplicas == *sts.Spec.Replicas && st.CurrentRevision == st.UpdateRevision, nil
	})
}

// waitGone waits until the object of key is gone.
func (b *bench) waitGone(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(b.admin.Get(ctx, key, obj)), nil
	})
}

// refusalsOf are the figures of one case, in the order run.
func refusalsOf(runs []refusalRun, c string, f func(refusalRun) float64) []float64 {
	var out []float64
	for _, r := range runs {
		if r.Case == c {
			out = append(out, f(r))
		}
	}
	return out
}

// refusalMarkdown tabulates the refusal runs: the medians of both cases with the ratio's interval,
// then every run.
func (r *results) refusalMarkdown() string {
	if len(r.Refusals) == 0 {
		return ""
	}
	var b strings.Builder
	missing := func(x refusalRun) float64 { return x.MissingSeconds }
	ready := func(x refusalRun) float64 { return x.ReadySeconds }
	fmt.Fprintf(&b, "\nOne StatefulSet of %d pods on kwok nodes, the manager at its defaults; the pod a rollout replaces first (the highest ordinal) either deleted by hand, or refused by a ValidatingAdmissionPolicy once the injection rolls it:\n\n", refusalReplicas)
	b.WriteString("| | pod deleted | injected pod refused | refused / deleted (95% interval) | verdict |\n|---|---:|---:|---:|---|\n")
	for _, row := range []struct {
		name string
		f    func(refusalRun) float64
	}{{"pod missing", missing}, {"until the pod is Ready again", ready}} {
		d, f := refusalsOf(r.Refusals, caseDeleted, row.f), refusalsOf(r.Refusals, caseRefused, row.f)
		c := method.Compare(f, d, r.bootstrapSeed())
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.name, millis(method.Median(d)), millis(method.Median(f)), versusCell(c), refusalVerdict(c))
	}
	fmt.Fprintf(&b, "\nEach figure is the median of %d runs; the ratio's interval is a 95 %% percentile bootstrap (seed %d). Every run:\n\n", len(refusalsOf(r.Refusals, caseDeleted, missing)), r.bootstrapSeed())
	b.WriteString("| round | case | ran | pod missing | Ready again |\n|---:|---|---:|---:|---:|\n")
	var cs []method.Conditions
	for _, x := range r.Refusals {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", x.Round, x.Case, method.Ordinal(x.Turn), millis(x.MissingSeconds), millis(x.ReadySeconds))
		if x.Conditions != nil {
			cs = append(cs, *x.Conditions)
		}
	}
	b.WriteString(r.orderSentence(cs))
	if msg := r.Refusals[len(r.Refusals)-1].Message; msg != "" {
		fmt.Fprintf(&b, "\nThe refusal the status recorded: %s.\n", msg)
	}
	return b.String()
}

// refusalVerdict says what the interval lets one say of a refused injection's gap against a
// deleted pod's.
func refusalVerdict(c method.Comparison) string {
	switch c.Verdict {
	case method.Higher:
		return "longer when refused"
	case method.Lower:
		return "shorter when refused"
	case method.NoDifference:
		return "no difference"
	}
	return "–"
}

func millis(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.0f ms", v*1000)
}

// refusalChart draws every run's gap of both cases.
func (r *results) refusalChart() *chart.Chart {
	ch := &chart.Chart{
		Title:       "How long the database is without its pod: deleted, or refused and put back",
		Series:      []string{"pod missing", "until Ready again"},
		Orientation: chart.Horizontal,
		Machine:     fmt.Sprintf("%d CPUs, %.0f GiB, Linux %s; local control plane, kwok nodes", r.Machine.CPUs, r.Machine.MemoryGiB, r.Machine.Kernel),
		Measured:    r.Generated,
		Notes:       "kwok readies a pod at once: with a real database, its start comes on top in both cases.",
	}
	p := chart.Panel{Title: "every run (lower is better)", ValueAxis: "milliseconds"}
	for _, x := range r.Refusals {
		p.Groups = append(p.Groups, chart.Group{Label: fmt.Sprintf("round %d, %s", x.Round, x.Case), Bars: []chart.Bar{
			{Value: x.MissingSeconds * 1000, Label: fmt.Sprintf("%.0f", x.MissingSeconds*1000)},
			{Value: x.ReadySeconds * 1000, Label: fmt.Sprintf("%.0f", x.ReadySeconds*1000)},
		}})
	}
	ch.Panels = []chart.Panel{p}
	return ch
}
