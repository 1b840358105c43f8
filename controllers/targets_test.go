package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// informerCache is a cache that gives one informer.
type informerCache struct {
	cache.Cache
	informer cache.Informer
}

func (c informerCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return c.informer, nil
}

// TestCachedStatefulSetsReadTheIndexer checks that the StatefulSets a reconcile reads through the
// informer's indexer (no copies) are those it read through a List of the cache (a copy of each),
// for every namespace, label selector and injecting ScratchVolume of a mixed set: the index of
// injected StatefulSets added to the informer keys them as the cache's field index does.
func TestCachedStatefulSetsReadTheIndexer(t *testing.T) {
	var objs []client.Object
	for i := range 24 {
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%3), Name: fmt.Sprintf("db-%02d", i),
			Labels: map[string]string{"tier": []string{"db", "cache"}[i%2]}}}
		annotations := map[string]string{}
		for _, sv := range []string{"tmp", "other"}[:i%3] {
			annotations[v1alpha1.InjectionAnnotationPrefix+sv] = "hash"
		}
		if i%4 == 0 {
			annotations["unrelated.example.com/tmp"] = "x"
		}
		sts.Spec.Template.Annotations = annotations
		objs = append(objs, sts)
	}
	informer, indexer := indexedInformer(t, &appsv1.StatefulSet{}, statefulSetIndexer, objs)
	indexed, listed := &ScratchVolumeReconciler{statefulSets: indexer}, &ScratchVolumeReconciler{Client: fallbackCache(t, objs)}

	names := func(r *ScratchVolumeReconciler, ns, sv string, sel labels.Selector) []string {
		t.Helper()
		got, err := r.cachedStatefulSets(context.Background(), ns, sv, sel)
		return sortedNames(t, got, err)
	}
	found := 0
	for _, ns := range []string{"ns-0", "ns-1", "ns-2", "ns-3"} {
		for _, sv := range []string{"", "tmp", "other", "none"} {
			for _, sel := range []labels.Selector{labels.Everything(), labels.SelectorFromSet(labels.Set{"tier": "db"})} {
				want, got := names(listed, ns, sv, sel), names(indexed, ns, sv, sel)
				if !slices.Equal(want, got) {
					t.Errorf("namespace %s, injected by %q, selector %q: the indexer gave %v, a List %v", ns, sv, sel, got, want)
				}
				found += len(got)
			}
		}
	}
	if found == 0 {
		t.Fatal("nothing found: the comparison proves nothing")
	}
	// The indexer's objects are the cache's own: no copies.
	got, _ := indexed.cachedStatefulSets(context.Background(), "ns-0", "", labels.Everything())
	if item, _, _ := indexer.Get(got[0]); item != got[0] {
		t.Error("the indexer's StatefulSets were copied")
	}

	// A cache that does not give its indexers (one per namespace) leaves the List.
	if ix, err := statefulSetIndexer(context.Background(), informerCache{informer: noIndexer{informer}}); err != nil || ix != nil {
		t.Errorf("an indexer from a cache that gives none: %v, %v", ix, err)
	}
}

// TestCachedScratchVolumesReadTheIndexer checks that the ScratchVolumes a sync looks up through
// the informer's indexer (no copies) are those a List of the cache gives (a copy of each), for
// every namespace and target name of a mix of ScratchVolumes that name a StatefulSet and that
// select by label.
func TestCachedScratchVolumesReadTheIndexer(t *testing.T) {
	var objs []client.Object
	for i := range 18 {
		sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%3), Name: fmt.Sprintf("tmp-%02d", i)}}
		if i%2 == 0 {
			sv.Spec.Target.Name = fmt.Sprintf("db-%d", i%4)
		} else {
			sv.Spec.Target.Selector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "db"}}
		}
		objs = append(objs, sv)
	}
	informer, indexer := indexedInformer(t, &v1alpha1.ScratchVolume{}, scratchVolumeIndexer, objs)
	indexed, listed := &ScratchVolumeReconciler{scratchVolumes: indexer}, &ScratchVolumeReconciler{Client: fallbackCache(t, objs)}
	names := func(r *ScratchVolumeReconciler, ns, target string) []string {
		t.Helper()
		got, err := r.cachedScratchVolumes(context.Background(), ns, target)
		return sortedNames(t, got, err)
	}
	found := map[bool]int{}
	for _, ns := range []string{"ns-0", "ns-1", "ns-2", "ns-3"} {
		for _, target := range []string{"", "db-0", "db-2", "db-1", "none"} {
			want, got := names(listed, ns, target), names(indexed, ns, target)
			if !slices.Equal(want, got) {
				t.Errorf("namespace %s, target %q: the indexer gave %v, a List %v", ns, target, got, want)
			}
			found[target == ""] += len(got)
		}
	}
	if found[true] == 0 || found[false] == 0 {
		t.Fatalf("selectors or named ScratchVolumes never found (%v): the comparison proves nothing", found)
	}
	got, _ := indexed.cachedScratchVolumes(context.Background(), "ns-1", "")
	if item, _, _ := indexer.Get(got[0]); item != got[0] {
		t.Error("the indexer's ScratchVolumes were copied")
	}
	if ix, err := scratchVolumeIndexer(context.Background(), informerCache{informer: noIndexer{informer}}); err != nil || ix != nil {
		t.Errorf("an indexer from a cache that gives none: %v, %v", ix, err)
	}
}

// indexedInformer is an informer of obj's kind that lists and watches nothing, with the indexer
// setup gives for it (with its indexes added) holding objs.
func indexedInformer(t *testing.T, obj client.Object, setup func(context.Context, cache.Cache) (toolscache.Indexer, error),
	objs []client.Object) (toolscache.SharedIndexInformer, toolscache.Indexer) {
	t.Helper()
	informer := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.List{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}, obj, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	indexer, err := setup(context.Background(), informerCache{informer: informer})
	if err != nil || indexer == nil {
		t.Fatalf("no indexer from a cache that gives one: %v", err)
	}
	for _, o := range objs {
		if err := indexer.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return informer, indexer
}

// sortedNames are the names of objs, sorted, from a read that failed the test if err is set.
func sortedNames[T client.Object](t *testing.T, objs []T, err error) []string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}

// fallbackCache is a client that reads objs as the cache's List does, with its field indexes.
func fallbackCache(t *testing.T, objs []client.Object) client.Client {
	return withFieldIndexes(fake.NewClientBuilder().WithScheme(schemeWithAPI(t)).WithObjects(objs...)).Build()
}

// noIndexer hides the informer's indexer.
type noIndexer struct{ toolscache.SharedIndexInformer }

func (noIndexer) GetIndexer() {}

// TestStatefulSetGoneBeforeItsPlanIsRead plays a StatefulSet deleted between the cache, which
// still has it, and the read of the whole object that plans it: the sync plans nothing, writes
// nothing and reports no failure, and a revert of it sends no Reverted Event.
func TestStatefulSetGoneBeforeItsPlanIsRead(t *testing.T) {
	ctx := context.Background()
	sv := testenv.SelectorScratchVolume("tmp", nil)
	cached := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
	cached.Labels = map[string]string{"tier": "db"}
	cached.Spec.Template.Annotations = map[string]string{sv.InjectionAnnotation(): "abc"}
	writes := 0
	count := func() { writes++ }
	c := withFieldIndexes(fake.NewClientBuilder().WithObjects(&sv, cached).WithScheme(schemeWithAPI(t))).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				count()
				return nil
			},
			Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
				count()
				return nil
			},
			Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
				count()
				return nil
			},
			Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
				count()
				return nil
			},
			Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
				count()
				return nil
			},
		}).Build()
	capture := &eventCapture{}
	// The API server no longer has it.
	gone := fake.NewClientBuilder().WithScheme(schemeWithAPI(t)).Build()
	r := &ScratchVolumeReconciler{Client: c, APIReader: gone, Recorder: capture}

	view, err := r.namespaceView(ctx, cached.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(view.items) != 1 {
		t.Fatalf("the ScratchVolume is not found as a selector: %+v", view.items)
	}
	events := r.changeEvents()
	out, err := r.syncStatefulSet(ctx, cached, view, events, nil)
	if err != nil || out != nil {
		t.Errorf("the sync of a StatefulSet that is gone gave %v, %v; want nothing and no error", out, err)
	}
	events.record()
	if err := r.revertDropped(ctx, &sv, nil, nil); err != nil {
		t.Errorf("the revert of a StatefulSet that is gone failed: %v", err)
	}
	if writes != 0 || len(capture.events) != 0 {
		t.Errorf("%d writes and Events %v for a StatefulSet that is gone", writes, capture.events)
	}
	if n := r.decisions.Len(); n != 0 {
		t.Errorf("%d decisions remembered for a StatefulSet that is gone", n)
	}
}

// schemeWithAPI is client-go's scheme with the project's kinds.
func schemeWithAPI(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// withFieldIndexes gives a fake client the cache's field indexes (setupIndexes).
func withFieldIndexes(b *fake.ClientBuilder) *fake.ClientBuilder {
	for _, ix := range fieldIndexes() {
		b = b.WithIndex(ix.obj, ix.field, ix.fn)
	}
	return b
}
