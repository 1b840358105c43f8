package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// fleet is the benchmark's StatefulSets and ScratchVolumes as a watch sees them, with the templates
// the StatefulSets were created with, to check that every revert is exact.
type fleet struct {
	c          client.Client
	watch      cache.Cache
	namespaces int
	tiers      []int
	// replicas of every StatefulSet the fleet creates.
	replicas int32
	size     int

	mu        sync.Mutex
	originals map[types.NamespacedName]corev1.PodTemplateSpec
}

// newFleet starts a watch of the fleet's StatefulSets and of every ScratchVolume. c must not be
// rate limited: it creates thousands of objects.
func newFleet(ctx context.Context, cfg *rest.Config, c client.Client, namespaces int, tiers []int, replicas int32) (*fleet, error) {
	sel := labels.SelectorFromSet(labels.Set{benchLabel: "fleet"})
	w, err := cache.New(cfg, cache.Options{
		Scheme:           testenv.Scheme(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.StatefulSet{}:     {Label: sel},
			&v1alpha1.ScratchVolume{}: {Label: sel},
		},
	})
	if err != nil {
		return nil, err
	}
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &v1alpha1.ScratchVolume{}} {
		if _, err := w.GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	go func() { _ = w.Start(ctx) }()
	if !w.WaitForCacheSync(ctx) {
		return nil, errors.New("the benchmark's watch did not sync")
	}
	return &fleet{c: c, watch: w, namespaces: namespaces, tiers: tiers, replicas: replicas,
		originals: map[types.NamespacedName]corev1.PodTemplateSpec{}}, nil
}

// statefulSets returns the fleet as last seen, in no particular order. The objects are shared
// with the watch: read them, never change them.
func (f *fleet) statefulSets(ctx context.Context) []appsv1.StatefulSet {
	list := &appsv1.StatefulSetList{}
	if err := f.watch.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return list.Items
}

// keys names the fleet's StatefulSets, sorted.
func (f *fleet) keys(ctx context.Context) []client.ObjectKey {
	sets := f.statefulSets(ctx)
	keys := make([]client.ObjectKey, len(sets))
	for i := range sets {
		keys[i] = client.ObjectKeyFromObject(&sets[i])
	}
	slices.SortFunc(keys, func(a, b client.ObjectKey) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

func (f *fleet) scratchVolumes(ctx context.Context) []v1alpha1.ScratchVolume {
	list := &v1alpha1.ScratchVolumeList{}
	if err := f.watch.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return list.Items
}

// resize creates or deletes StatefulSets, by whole tiers, until the fleet has n, waits until the
// watch shows exactly those, and records the templates of the new ones.
func (f *fleet) resize(ctx context.Context, n int) error {
	if n > f.size {
		err := forEach(ctx, n-f.size, createWorkers, func(ctx context.Context, k int) error {
			i := f.size + k
			return f.c.Create(ctx, statefulSet(i, f.namespaces, tierOf(i, f.tiers), f.replicas))
		})
		if err != nil {
			return fmt.Errorf("failed to create StatefulSets: %w", err)
		}
	} else if n < f.size {
		if err := f.deleteAbove(ctx, n); err != nil {
			return err
		}
	}
	f.size = n
	if _, err := waitFor(ctx, fmt.Sprintf("the watch to show %d StatefulSets", n), 10*time.Minute, func() (bool, string) {
		got := len(f.statefulSets(ctx))
		return got == n, fmt.Sprintf("%d StatefulSets", got)
	}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sts := range f.statefulSets(ctx) {
		key := client.ObjectKeyFromObject(&sts)
		if _, ok := f.originals[key]; !ok {
			f.originals[key] = *sts.Spec.Template.DeepCopy()
		}
	}
	return nil
}

// deleteAbove deletes the tiers larger than n with one request per namespace.
func (f *fleet) deleteAbove(ctx context.Context, n int) error {
	var drop []string
	for _, t := range f.tiers {
		if t > n {
			drop = append(drop, strconv.Itoa(t))
		}
	}
	req, err := labels.NewRequirement(tierLabel, selection.In, drop)
	if err != nil {
		return err
	}
	sel := labels.NewSelector().Add(*req)
	for ns := range f.namespaces {
		err := f.c.DeleteAllOf(ctx, &appsv1.StatefulSet{}, client.InNamespace(fleetNamespace(ns, f.namespaces)),
			client.MatchingLabelsSelector{Selector: sel})
		if err != nil {
			return fmt.Errorf("failed to delete the StatefulSets of tiers %v: %w", drop, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for key := range f.originals {
		var i int
		if _, err := fmt.Sscanf(key.Name, "db-%d", &i); err == nil && i >= n {
			delete(f.originals, key)
		}
	}
	return nil
}

// manifest is the i-th StatefulSet as its owners' GitOps repository holds it.
func (f *fleet) manifest(i int) *appsv1.StatefulSet {
	return statefulSet(i, f.namespaces, tierOf(i, f.tiers), f.replicas)
}

// countInjected counts the StatefulSets that carry the injection of a ScratchVolume named name, or
// of any ScratchVolume when name is empty.
func countInjected(sets []appsv1.StatefulSet, name string) int {
	n := 0
	for i := range sets {
		svs := inject.ScratchVolumes(&sets[i].Spec.Template)
		if (name == "" && len(svs) > 0) || (name != "" && contains(svs, name)) {
			n++
		}
	}
	return n
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// diverged lists the StatefulSets whose template is not the one they were created with.
func (f *fleet) diverged(sets []appsv1.StatefulSet) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for i := range sets {
		orig, ok := f.originals[client.ObjectKeyFromObject(&sets[i])]
		if !ok || !equality.Semantic.DeepEqual(orig, sets[i].Spec.Template) {
			out = append(out, sets[i].Namespace+"/"+sets[i].Name)
		}
	}
	return out
}

// countReady counts the ScratchVolumes whose Ready condition is True for their current generation.
func countReady(svs []v1alpha1.ScratchVolume) int {
	n := 0
	for i := range svs {
		for _, c := range svs[i].Status.Conditions {
			if c.Type == v1alpha1.ConditionReady && c.Status == metav1.ConditionTrue && c.ObservedGeneration == svs[i].Generation {
				n++
			}
		}
	}
	return n
}

// notReady describes the first ScratchVolumes that are not Ready, with their reason.
func notReady(svs []v1alpha1.ScratchVolume, limit int) []string {
	var out []string
	for i := range svs {
		ready := false
		reason := "no Ready condition"
		for _, c := range svs[i].Status.Conditions {
			if c.Type == v1alpha1.ConditionReady {
				ready = c.Status == metav1.ConditionTrue && c.ObservedGeneration == svs[i].Generation
				reason = c.Reason + ": " + c.Message
			}
		}
		if !ready && len(out) < limit {
			out = append(out, svs[i].Namespace+"/"+svs[i].Name+" ("+reason+")")
		}
	}
	return out
}

// unsettled counts the StatefulSets whose current spec the StatefulSet controller has not recorded
// yet (status.observedGeneration, and the revisions for a rollout).
func unsettled(sets []appsv1.StatefulSet) int {
	n := 0
	for i := range sets {
		s := &sets[i]
		if s.Status.ObservedGeneration < s.Generation || s.Status.CurrentRevision != s.Status.UpdateRevision ||
			s.Status.UpdatedReplicas != s.Status.Replicas || s.Status.ReadyReplicas != ptrValue(s.Spec.Replicas) {
			n++
		}
	}
	return n
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// createWorkers is how many requests the benchmark's own client keeps in flight when it creates or
// deletes objects in bulk.
const createWorkers = 16

// forEach runs do for 0..n-1 on workers goroutines and returns the first error. A create that
// finds the object already there (a retried request) is not an error.
func forEach(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, i); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return context.Cause(ctx)
}

// pollInterval is how often waits look at the watch: often enough to time phases of a second,
// rarely enough that comparing thousands of templates does not take a core from the API server.
const pollInterval = 100 * time.Millisecond

// waitFor polls done until it reports true and returns how long that took; the message done returns
// says where things stand when the timeout passes.
func waitFor(ctx context.Context, what string, timeout time.Duration, done func() (bool, string)) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok, status := done()
		if ok {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return time.Since(start), fmt.Errorf("gave up after %s waiting for %s: %s", timeout, what, status)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// injectedOnce counts the StatefulSets that carry the injection of the ScratchVolume named name,
// and describes the first one that carries it in any way but exactly once over its original
// template: another ScratchVolume's too, a volume, init container or mount twice, or a change to
// what its owner wrote.
func (f *fleet) injectedOnce(sets []appsv1.StatefulSet, name string) (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i := range sets {
		s := &sets[i]
		svs := inject.ScratchVolumes(&s.Spec.Template)
		if len(svs) == 0 {
			continue
		}
		where := s.Namespace + "/" + s.Name
		if len(svs) != 1 || svs[0] != name {
			return n, fmt.Sprintf("%s carries the injections of %v, want only %s", where, svs, name)
		}
		if d := duplicateNames(&s.Spec.Template.Spec); d != "" {
			return n, where + " " + d
		}
		orig, ok := f.originals[client.ObjectKeyFromObject(s)]
		if !ok || !equality.Semantic.DeepEqual(orig, inject.Strip(s.Spec.Template)) {
			return n, where + ": without the injection, its template is not the original"
		}
		n++
	}
	return n, ""
}

// duplicateNames describes a volume, init container or container mount that appears twice in a
// pod spec, or returns "".
func duplicateNames(pod *corev1.PodSpec) string {
	twice := func(what string, names []string) string {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				return fmt.Sprintf("has %s %q twice", what, n)
			}
			seen[n] = true
		}
		return ""
	}
	volumes := make([]string, 0, len(pod.Volumes))
	inits := make([]string, 0, len(pod.InitContainers))
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	for _, c := range pod.InitContainers {
		inits = append(inits, c.Name)
	}
	if d := cmp.Or(twice("volume", volumes), twice("init container", inits)); d != "" {
		return d
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		var mounts []string
		for _, m := range c.VolumeMounts {
			mounts = append(mounts, m.MountPath)
		}
		if d := twice("mount path in container "+c.Name+":", mounts); d != "" {
			return d
		}
	}
	return ""
}
