package controllers

// This file reads around a ScratchVolume: the StatefulSets it selects or injected, the
// ScratchVolumes that select a StatefulSet, through the cache's indexes, and maps StatefulSet
// events back to ScratchVolumes.

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// Indexes added to the StatefulSet and ScratchVolume informers (addIndexes), keyed by namespace
// like client-go's namespace index: they let a StatefulSet event find its ScratchVolumes, and a
// ScratchVolume find the StatefulSets it injected, without listing a namespace.
const (
	// indexInjectedBy files StatefulSets under namespace/name of each ScratchVolume whose
	// injection they carry.
	indexInjectedBy = "dbtune.io/injected-by"
	// indexTargetName files ScratchVolumes under namespace/spec.target.name.
	indexTargetName = "dbtune.io/target-name"
	// indexSelectorIn files the ScratchVolumes that select by label under their namespace.
	indexSelectorIn = "dbtune.io/selector-in"
)

// informerIndex is the indexes addIndexes adds to the informer of obj's kind.
type informerIndex struct {
	obj      client.Object
	indexers toolscache.Indexers
}

func informerIndexes() []informerIndex {
	return []informerIndex{
		{&appsv1.StatefulSet{}, toolscache.Indexers{indexInjectedBy: func(obj any) ([]string, error) {
			sts, ok := obj.(*appsv1.StatefulSet)
			if !ok {
				return nil, nil
			}
			names := inject.ScratchVolumes(&sts.Spec.Template)
			for i, name := range names {
				names[i] = sts.Namespace + "/" + name
			}
			return names, nil
		}}},
		{&v1alpha1.ScratchVolume{}, toolscache.Indexers{
			indexTargetName: func(obj any) ([]string, error) {
				if sv, ok := obj.(*v1alpha1.ScratchVolume); ok && sv.Spec.Target.Name != "" {
					return []string{sv.Namespace + "/" + sv.Spec.Target.Name}, nil
				}
				return nil, nil
			},
			indexSelectorIn: func(obj any) ([]string, error) {
				if sv, ok := obj.(*v1alpha1.ScratchVolume); ok && sv.Spec.Target.Selector != nil {
					return []string{sv.Namespace}, nil
				}
				return nil, nil
			},
		}},
	}
}

// addIndexes adds the indexes to the cache's informers: to each namespace's, when the cache
// watches a few.
func addIndexes(ctx context.Context, c cache.Cache) error {
	for _, ix := range informerIndexes() {
		inf, err := c.GetInformer(ctx, ix.obj)
		if err != nil {
			return fmt.Errorf("failed to get the %T informer: %w", ix.obj, err)
		}
		if err := inf.AddIndexers(ix.indexers); err != nil {
			return fmt.Errorf("failed to index %T: %w", ix.obj, err)
		}
	}
	return nil
}

// setupIndexes adds the cache's field index of NodeIOProfiles, which status.go lists by the
// ScratchVolumes they observe: a few objects, one per node, each read with its usage.
func setupIndexes(ctx context.Context, fi client.FieldIndexer) error {
	if err := fi.IndexField(ctx, &v1alpha1.NodeIOProfile{}, indexObservedScratchVolumes, observedScratchVolumes); err != nil {
		return fmt.Errorf("failed to index NodeIOProfiles by %s: %w", indexObservedScratchVolumes, err)
	}
	return nil
}

// targets lists the StatefulSets sv selects now, sorted by name. They are the cache's own objects,
// to read only (syncStatefulSet copies the one it writes): a selector can pick hundreds, and every
// reconcile reads them all.
func (r *ScratchVolumeReconciler) targets(ctx context.Context, sv *v1alpha1.ScratchVolume) ([]*appsv1.StatefulSet, error) {
	if name := sv.Spec.Target.Name; name != "" {
		sts := &appsv1.StatefulSet{}
		err := r.Get(ctx, types.NamespacedName{Namespace: sv.Namespace, Name: name}, sts)
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("failed to get StatefulSet %s/%s: %w", sv.Namespace, name, err)
		}
		return []*appsv1.StatefulSet{sts}, nil
	}
	sel, err := sv.Spec.Target.Selector.AsSelector()
	if err != nil {
		return nil, &invalidSelectorError{err: err}
	}
	targets, err := r.cachedStatefulSets(sv.Namespace, "", sel)
	if err != nil {
		return nil, fmt.Errorf("failed to list StatefulSets in %s: %w", sv.Namespace, err)
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Name < targets[j].Name })
	return targets, nil
}

// injectedBy lists the StatefulSets that carry sv's injection, the cache's own objects, to read
// only.
func (r *ScratchVolumeReconciler) injectedBy(sv *v1alpha1.ScratchVolume) ([]*appsv1.StatefulSet, error) {
	injected, err := r.cachedStatefulSets(sv.Namespace, sv.Name, labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("failed to list StatefulSets injected by ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	return injected, nil
}

// cachedStatefulSets returns the cache's own StatefulSets of namespace that sel matches and, unless
// injectedBy is empty, that carry the injection of that ScratchVolume.
func (r *ScratchVolumeReconciler) cachedStatefulSets(namespace, injectedBy string, sel labels.Selector) ([]*appsv1.StatefulSet, error) {
	index, key := toolscache.NamespaceIndex, namespace
	if injectedBy != "" {
		index, key = indexInjectedBy, namespace+"/"+injectedBy
	}
	found, err := fleetcache.ByIndex[*appsv1.StatefulSet](r.Informers, index, key)
	if err != nil || sel.Empty() {
		return found, err
	}
	out := found[:0]
	for _, sts := range found {
		if sel.Matches(labels.Set(sts.Labels)) {
			out = append(out, sts)
		}
	}
	return out, nil
}

// cachedScratchVolumes returns the cache's own ScratchVolumes of namespace that name target, or,
// with target empty, those that select by label.
func (r *ScratchVolumeReconciler) cachedScratchVolumes(namespace, target string) ([]*v1alpha1.ScratchVolume, error) {
	index, key := indexSelectorIn, namespace
	if target != "" {
		index, key = indexTargetName, namespace+"/"+target
	}
	return fleetcache.ByIndex[*v1alpha1.ScratchVolume](r.Informers, index, key)
}

// selectors are the ScratchVolumes of one namespace that select by label, read once for all the
// StatefulSets a reconcile syncs: every one of them may select each. The cache's own objects, to
// read only, as in scratchVolumesFor.
type selectors struct {
	namespace string
	items     []*v1alpha1.ScratchVolume
	// parsed are the items' selectors, parsed once; nil for one that selects nothing (empty or
	// invalid: the API admits neither, a ScratchVolume stored before its rules were may hold one).
	parsed []labels.Selector
}

func (r *ScratchVolumeReconciler) selectorsIn(namespace string) (selectors, error) {
	items, err := r.cachedScratchVolumes(namespace, "")
	if err != nil {
		return selectors{}, fmt.Errorf("failed to list ScratchVolumes in %s: %w", namespace, err)
	}
	sel := selectors{namespace: namespace, items: items, parsed: make([]labels.Selector, len(items))}
	for i, sv := range items {
		if parsed, err := sv.Spec.Target.Selector.AsSelector(); err == nil && !parsed.Empty() {
			sel.parsed[i] = parsed
		}
	}
	return sel, nil
}

// selects reports whether the i-th of sel selects sts, a StatefulSet of sel's namespace.
func (sel selectors) selects(i int, sts *appsv1.StatefulSet) bool {
	return sel.parsed[i] != nil && sel.parsed[i].Matches(labels.Set(sts.Labels))
}

// scratchVolumesFor lists the live ScratchVolumes that select sts, oldest first: the order that
// decides conflicts. sel are those of its namespace that select by label; those that name it are
// looked up through the index. They are the cache's own objects, to read only: it runs for every
// target of every reconcile and every StatefulSet event, and a selector's status lists all its
// targets.
func (r *ScratchVolumeReconciler) scratchVolumesFor(sts *appsv1.StatefulSet, sel selectors) ([]*v1alpha1.ScratchVolume, error) {
	if sel.namespace != sts.Namespace {
		return nil, fmt.Errorf("ScratchVolumes of namespace %s looked up for StatefulSet %s/%s", sel.namespace, sts.Namespace, sts.Name)
	}
	byName, err := r.cachedScratchVolumes(sts.Namespace, sts.Name)
	if err != nil {
		return nil, fmt.Errorf("failed to list ScratchVolumes for StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	var out []*v1alpha1.ScratchVolume
	for _, sv := range byName {
		if sv.DeletionTimestamp.IsZero() {
			out = append(out, sv)
		}
	}
	for i, sv := range sel.items {
		if sv.DeletionTimestamp.IsZero() && sel.selects(i, sts) {
			out = append(out, sv)
		}
	}
	decide.SortOldestFirst(out)
	return out, nil
}

// scratchVolumesForStatefulSet maps a StatefulSet event to the ScratchVolumes that select it or whose
// entries it carries (so that a relabelled StatefulSet is reverted).
func (r *ScratchVolumeReconciler) scratchVolumesForStatefulSet(_ context.Context, o client.Object) []reconcile.Request {
	sts, ok := o.(*appsv1.StatefulSet)
	if !ok {
		return nil
	}
	names := map[string]bool{}
	for _, n := range inject.ScratchVolumes(&sts.Spec.Template) {
		names[n] = true
	}
	sel, err := r.selectorsIn(sts.Namespace)
	if err == nil {
		var svs []*v1alpha1.ScratchVolume
		if svs, err = r.scratchVolumesFor(sts, sel); err == nil {
			for _, sv := range svs {
				names[sv.Name] = true
			}
		}
	}
	reqs := make([]reconcile.Request, 0, len(names))
	for n := range names {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: sts.Namespace, Name: n}})
	}
	return reqs
}

// approvalPredicate passes updates that change the approval of pending changes, which do not
// change the generation.
type approvalPredicate struct{ predicate.Funcs }

func (approvalPredicate) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil &&
		e.ObjectOld.GetAnnotations()[v1alpha1.ApproveChangeAnnotation] != e.ObjectNew.GetAnnotations()[v1alpha1.ApproveChangeAnnotation]
}

// deletionPredicate passes updates that start a deletion, which do not change the generation.
type deletionPredicate struct{ predicate.Funcs }

func (deletionPredicate) Update(e event.UpdateEvent) bool {
	return e.ObjectNew != nil && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// invalidSelectorError is a selector the API admitted (under an older CRD without the key and
// value rules) that cannot be parsed. It is the user's to fix: a condition says so, and retrying
// would only fail the same way.
type invalidSelectorError struct{ err error }

func (e *invalidSelectorError) Error() string {
	return fmt.Sprintf("spec.target.selector is invalid: %v; fix it (keys and values must be valid label keys and values)", e.err)
}

func (e *invalidSelectorError) Unwrap() error { return e.err }
