package fleetcache

// This file keeps the write-war guard of every StatefulSet the controller restored recently.

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// Guards keeps the decide.Guard of every StatefulSet the controller restored recently. It is the
// authority while the manager runs (the cached status of a ScratchVolume can lag behind the last
// restore); the status copy seeds it after a restart.
type Guards struct {
	mu     sync.Mutex
	guards map[types.NamespacedName]decide.Guard
}

// Update runs fn on the guard of key, seeding it from svs' status when the store has none, and
// returns the guard fn made.
func (s *Guards) Update(key types.NamespacedName, svs []*v1alpha1.ScratchVolume, fn func(decide.Guard) decide.Guard) decide.Guard {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.guards == nil {
		s.guards = map[types.NamespacedName]decide.Guard{}
	}
	g, ok := s.guards[key]
	if !ok {
		g = decide.GuardFromStatus(svs, key.Name)
	}
	g = fn(g)
	if len(g.Restores) == 0 && g.War == nil {
		delete(s.guards, key)
	} else {
		s.guards[key] = g
	}
	return g
}
