package fleetcache

// This file keeps the informers the manager's cache makes, so that the controller reads its
// indexes one way whether the cache watches every namespace (one informer of a kind) or a few (one
// informer of a kind per namespace, behind an informer controller-runtime gives no indexer of).
// Reading an informer's indexer hands out the cache's own objects: a List of the cache copies each
// object into its items, and every reconcile of a selector read all its targets.

import (
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
)

// Informers records the informers of a manager's cache: its NewInformer is the cache's
// (cache.Options.NewInformer). The zero value is ready to use.
type Informers struct {
	mu     sync.RWMutex
	byType map[reflect.Type][]toolscache.SharedIndexInformer
}

// NewInformer makes an informer as the cache would, and records it by the type of obj.
func (in *Informers) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
	indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.byType == nil {
		in.byType = map[reflect.Type][]toolscache.SharedIndexInformer{}
	}
	t := reflect.TypeOf(obj)
	in.byType[t] = append(in.byType[t], inf)
	return inf
}

// ByIndex returns the objects of type T, a pointer type such as *appsv1.StatefulSet, that index
// files under key in every informer of that type; the index is one added to the informer
// (AddIndexers), client-go's namespace index among them. They are the cache's own, to read only.
func ByIndex[T runtime.Object](in *Informers, index, key string) ([]T, error) {
	t := reflect.TypeFor[T]()
	in.mu.RLock()
	infs := in.byType[t]
	in.mu.RUnlock()
	if len(infs) == 0 {
		return nil, fmt.Errorf("no informer of %v was made through Informers.NewInformer: the manager's cache must be made with it", t)
	}
	var out []T
	for _, inf := range infs {
		objs, err := inf.GetIndexer().ByIndex(index, key)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if obj, ok := o.(T); ok {
				out = append(out, obj)
			}
		}
	}
	return out, nil
}
