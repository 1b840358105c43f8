package controllers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/fleetcache"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestCachedStatefulSetsReadTheIndexes checks that the StatefulSets a reconcile reads through the
// informers' indexes are those of the namespace, label selector and injecting ScratchVolume asked
// for, in a mixed set, from a cache that watches every namespace (one informer) and from one that
// watches a few (one informer per namespace); and that they are the cache's own objects.
func TestCachedStatefulSetsReadTheIndexes(t *testing.T) {
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
	// want is the brute-force answer.
	want := func(ns, sv string, sel labels.Selector) []string {
		var out []string
		for _, o := range objs {
			sts := o.(*appsv1.StatefulSet)
			_, injected := sts.Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+sv]
			if sts.Namespace == ns && sel.Matches(labels.Set(sts.Labels)) && (sv == "" || injected) {
				out = append(out, sts.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, namespaces := range [][]string{nil, {"ns-0", "ns-1", "ns-2"}} {
		r := &ScratchVolumeReconciler{Informers: cachedIn(t, namespaces, objs...)}
		found := 0
		for _, ns := range []string{"ns-0", "ns-1", "ns-2", "ns-3"} {
			for _, sv := range []string{"", "tmp", "other", "none"} {
				for _, sel := range []labels.Selector{labels.Everything(), labels.SelectorFromSet(labels.Set{"tier": "db"})} {
					got, err := r.cachedStatefulSets(ns, sv, sel)
					if names := sortedNames(t, got, err); !slices.Equal(names, want(ns, sv, sel)) {
						t.Errorf("informers per namespace %v: namespace %s, injected by %q, selector %q: got %v, want %v",
							namespaces, ns, sv, sel, names, want(ns, sv, sel))
					}
					found += len(got)
				}
			}
		}
		if found == 0 {
			t.Fatal("nothing found: the comparison proves nothing")
		}
		got, _ := r.cachedStatefulSets("ns-0", "", labels.Everything())
		if !slices.ContainsFunc(objs, func(o client.Object) bool { return o == got[0] }) {
			t.Error("the cache's StatefulSets were copied")
		}
	}
}

// TestCachedScratchVolumesReadTheIndexes checks that the ScratchVolumes a sync looks up through the
// informers' indexes are those of the namespace that name the target, or that select by label,
// from a cache that watches every namespace and from one that watches a few.
func TestCachedScratchVolumesReadTheIndexes(t *testing.T) {
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
	want := func(ns, target string) []string {
		var out []string
		for _, o := range objs {
			sv := o.(*v1alpha1.ScratchVolume)
			if sv.Namespace == ns && ((target == "" && sv.Spec.Target.Selector != nil) || (target != "" && sv.Spec.Target.Name == target)) {
				out = append(out, sv.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, namespaces := range [][]string{nil, {"ns-0", "ns-1", "ns-2"}} {
		r := &ScratchVolumeReconciler{Informers: cachedIn(t, namespaces, objs...)}
		found := map[bool]int{}
		for _, ns := range []string{"ns-0", "ns-1", "ns-2", "ns-3"} {
			for _, target := range []string{"", "db-0", "db-2", "db-1", "none"} {
				got, err := r.cachedScratchVolumes(ns, target)
				if names := sortedNames(t, got, err); !slices.Equal(names, want(ns, target)) {
					t.Errorf("informers per namespace %v: namespace %s, target %q: got %v, want %v", namespaces, ns, target, names, want(ns, target))
				}
				found[target == ""] += len(got)
			}
		}
		if found[true] == 0 || found[false] == 0 {
			t.Fatalf("selectors or named ScratchVolumes never found (%v): the comparison proves nothing", found)
		}
		// A change of a namespace's rules reaches every ScratchVolume there, however it selects.
		reqs := r.scratchVolumesInNamespace(context.Background(), &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1"}})
		if len(reqs) != 6 {
			t.Errorf("a LimitRange change in ns-1 reconciles %d ScratchVolumes, want its 6", len(reqs))
		}
	}
}

// TestReadsWithoutTheCachesInformers: a controller whose Informers did not make the cache's
// informers says so instead of finding nothing.
func TestReadsWithoutTheCachesInformers(t *testing.T) {
	r := &ScratchVolumeReconciler{Informers: &fleetcache.Informers{}}
	if _, err := r.cachedStatefulSets("ns", "", labels.Everything()); err == nil || !strings.Contains(err.Error(), "no informer") {
		t.Errorf("reading without informers: %v, want an error naming the cause", err)
	}
}

// cachedIn is the informers of a cache that holds objs with the controller's indexes: one
// informer of each kind, or, with namespaces, one of each kind per namespace, as a manager
// restricted to those namespaces has. The informers list and watch nothing.
func cachedIn(t *testing.T, namespaces []string, objs ...client.Object) *fleetcache.Informers {
	t.Helper()
	in := &fleetcache.Informers{}
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	for _, ix := range informerIndexes() {
		for _, ns := range scopes {
			informer := in.NewInformer(&toolscache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					return &metav1.List{}, nil
				},
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
			}, ix.obj, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
			if err := informer.AddIndexers(ix.indexers); err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if reflect.TypeOf(o) == reflect.TypeOf(ix.obj) && (ns == "" || o.GetNamespace() == ns) {
					if err := informer.GetIndexer().Add(o); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	return in
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
	r := &ScratchVolumeReconciler{Client: c, APIReader: gone, Recorder: capture, Informers: cachedIn(t, nil, &sv, cached)}

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

// withFieldIndexes gives a fake client the cache's field index (setupIndexes).
func withFieldIndexes(b *fake.ClientBuilder) *fake.ClientBuilder {
	return b.WithIndex(&v1alpha1.NodeIOProfile{}, indexObservedScratchVolumes, observedScratchVolumes)
}
