package fleetcache

// This file remembers the controller's own writes that the cache has not seen yet: the
// generations of its StatefulSet writes, and the resource versions of its status writes.

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
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

// Statuses remembers, per ScratchVolume, the resourceVersion the controller's last status write
// gave it, until the cache shows that version or a later one. The status holds what later
// decisions start from (a refused rollout, a write war's guard, when a rollout began): a decision
// made on an older copy would not know them, and would inject again the pods the API server just
// refused.
type Statuses struct {
	mu sync.Mutex
	rv map[types.NamespacedName]string
}

// Record notes the resourceVersion a status write gave a ScratchVolume, as its response has it.
func (s *Statuses) Record(key types.NamespacedName, resourceVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv == nil {
		s.rv = map[types.NamespacedName]string{}
	}
	s.rv[key] = resourceVersion
}

// Behind reports whether sv, as the cache has it, is older than the controller's last status write
// to it; once it is not, the write is forgotten. Resource versions are compared as the API server
// defines their order (resourceversion.CompareResourceVersion); a version that does not follow it
// never holds a decision back.
func (s *Statuses) Behind(sv metav1.Object) bool {
	key := types.NamespacedName{Namespace: sv.GetNamespace(), Name: sv.GetName()}
	s.mu.Lock()
	defer s.mu.Unlock()
	written, ok := s.rv[key]
	if !ok {
		return false
	}
	if cmp, err := resourceversion.CompareResourceVersion(sv.GetResourceVersion(), written); err == nil && cmp < 0 {
		return true
	}
	delete(s.rv, key)
	return false
}
