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

// ownWrites remembers, per object, what the controller's last write to it made (a generation, a
// resource version), until the cache shows it.
type ownWrites[V any] struct {
	mu      sync.Mutex
	written map[types.NamespacedName]V
}

func (w *ownWrites[V]) record(key types.NamespacedName, v V) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil {
		w.written = map[types.NamespacedName]V{}
	}
	w.written[key] = v
}

// behind reports whether the cache's copy of key is older than the last write to it, as older
// tells from what that write made; once it is not, the write is forgotten.
func (w *ownWrites[V]) behind(key types.NamespacedName, older func(written V) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.written[key]
	if !ok {
		return false
	}
	if older(v) {
		return true
	}
	delete(w.written, key)
	return false
}

// Written remembers, per StatefulSet, the generation the controller's last write gave it, until
// the cache shows that generation or a later one. A decision made on an older copy would write the
// same entries again, or take the entries just written, not yet seen, for entries another writer
// removed.
type Written struct{ w ownWrites[int64] }

// Record notes the generation a write gave a StatefulSet, as read from the API server after it.
func (w *Written) Record(key types.NamespacedName, generation int64) { w.w.record(key, generation) }

// Behind reports whether sts, as the cache has it, is older than the controller's last write to
// it; once it is not, the write is forgotten.
func (w *Written) Behind(sts *appsv1.StatefulSet) bool {
	key := types.NamespacedName{Namespace: sts.Namespace, Name: sts.Name}
	return w.w.behind(key, func(generation int64) bool { return sts.Generation < generation })
}

// Statuses remembers, per ScratchVolume, the resourceVersion the controller's last status write
// gave it, until the cache shows that version or a later one. The status holds what later
// decisions start from (a refused rollout, a write war's guard, when a rollout began): a decision
// made on an older copy would not know them, and would inject again the pods the API server just
// refused.
type Statuses struct{ w ownWrites[string] }

// Record notes the resourceVersion a status write gave a ScratchVolume, as its response has it.
func (s *Statuses) Record(key types.NamespacedName, resourceVersion string) {
	s.w.record(key, resourceVersion)
}

// Behind reports whether sv, as the cache has it, is older than the controller's last status write
// to it; once it is not, the write is forgotten. Resource versions are compared as the API server
// defines their order (resourceversion.CompareResourceVersion); a version that does not follow it
// never holds a decision back.
func (s *Statuses) Behind(sv metav1.Object) bool {
	key := types.NamespacedName{Namespace: sv.GetNamespace(), Name: sv.GetName()}
	return s.w.behind(key, func(written string) bool {
		cmp, err := resourceversion.CompareResourceVersion(sv.GetResourceVersion(), written)
		return err == nil && cmp < 0
	})
}
