package controllers

import (
	"errors"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
)

// errCacheBehind says that the cache has not yet seen the controller's own last write to a
// StatefulSet. A decision made on that older copy would write the same entries again, or take the
// entries just written, not yet seen, for entries another writer removed; the reconcile is retried
// instead, like a write that lost a race (staleWrite), and the watch event that brings the write
// into the cache also brings the retry.
var errCacheBehind = errors.New("the cache has not yet seen the last write to the StatefulSet")

// cacheBehindRetry is when a reconcile that found the cache behind is retried, should the watch
// event of the write not bring it first.
const cacheBehindRetry = 250 * time.Millisecond

// writtenGenerations remembers, per StatefulSet, the generation the controller's last write gave
// it, until the cache shows that generation or a later one.
type writtenGenerations struct {
	mu  sync.Mutex
	gen map[types.NamespacedName]int64
}

// record notes the generation a write gave a StatefulSet, as read from the API server after it.
func (w *writtenGenerations) record(key types.NamespacedName, generation int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen == nil {
		w.gen = map[types.NamespacedName]int64{}
	}
	w.gen[key] = generation
}

// behind reports whether sts, as the cache has it, is older than the controller's last write to
// it; once it is not, the write is forgotten.
func (w *writtenGenerations) behind(sts *appsv1.StatefulSet) bool {
	key := types.NamespacedName{Namespace: sts.Namespace, Name: sts.Name}
	w.mu.Lock()
	defer w.mu.Unlock()
	gen, ok := w.gen[key]
	if !ok {
		return false
	}
	if sts.Generation >= gen {
		delete(w.gen, key)
		return false
	}
	return true
}
