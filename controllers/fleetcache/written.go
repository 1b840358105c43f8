package fleetcache

// This file remembers the generations of the controller's own writes that the cache has not
// seen yet.

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Written remembers, per StatefulSet, the generation the controller's last write gave it, until
// the cache shows that generation or a later one. A decision made on an older copy would write the
// same entries again, or take the entries just written, not yet seen, for entries another writer
// removed.
type Written struct {
	mu  sync.Mutex
	gen map[types.NamespacedName]int64
}

// Record notes the generation a write gave a StatefulSet, as read from the API server after it.
func (w *Written) Record(key types.NamespacedName, generation int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen == nil {
		w.gen = map[types.NamespacedName]int64{}
	}
	w.gen[key] = generation
}

// Behind reports whether sts, as the cache has it, is older than the controller's last write to
// it; once it is not, the write is forgotten.
func (w *Written) Behind(sts *appsv1.StatefulSet) bool {
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
