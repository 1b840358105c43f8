package fleetcache

// This file holds once, for the whole process, the values that cached objects and remembered
// decisions of a fleet have in common.

import (
	"crypto/sha256"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// maxSharedValues bounds the distinct values a sharedTable keeps for sharing. Past it the table
// starts again: values already shared stay shared, new ones are shared from then on.
const maxSharedValues = 4096

// sharedTable hands out one value per key: the first made for it. It keeps at most
// maxSharedValues.
type sharedTable[T any] struct {
	mu     sync.Mutex
	values map[string]T
}

// get returns the value kept for key, or keeps and returns build's.
func (t *sharedTable[T]) get(key string, build func() T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.values[key]; ok {
		return v
	}
	if t.values == nil || len(t.values) >= maxSharedValues {
		t.values = map[string]T{}
	}
	v := build()
	t.values[key] = v
	return v
}

// sharedMaps and sharedOwners hold the maps and owner lists that cached objects share.
var (
	sharedMaps   sharedTable[map[string]string]
	sharedOwners sharedTable[[]metav1.OwnerReference]
)

// shareMap returns a map equal to kv that every cached object with an equal one holds, its keys and
// values shared too.
func shareMap(kv map[string]string) map[string]string {
	if kv == nil {
		return nil
	}
	keys := slices.Sorted(maps.Keys(kv))
	var key strings.Builder
	for _, k := range keys {
		writeField(&key, k)
		writeField(&key, kv[k])
	}
	return sharedMaps.get(key.String(), func() map[string]string {
		out := make(map[string]string, len(kv))
		for k, v := range kv {
			out[share(k)] = share(v)
		}
		return out
	})
}

// shareOwners returns an owner list equal to refs that every cached object with an equal one
// holds: the drop-in ConfigMaps of one ScratchVolume are all owned by it.
func shareOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if refs == nil {
		return nil
	}
	var key strings.Builder
	for _, o := range refs {
		for _, f := range []string{o.APIVersion, o.Kind, o.Name, string(o.UID), flag(o.Controller), flag(o.BlockOwnerDeletion)} {
			writeField(&key, f)
		}
	}
	return sharedOwners.get(key.String(), func() []metav1.OwnerReference {
		out := slices.Clip(slices.Clone(refs))
		for i := range out {
			o := &out[i]
			o.APIVersion, o.Kind, o.Name, o.UID = share(o.APIVersion), share(o.Kind), share(o.Name), share(o.UID)
		}
		return out
	})
}

// flag tells an unset, false and true optional flag apart in a key.
func flag(b *bool) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatBool(*b)
}

// writeField appends s to a key of several strings so that no other strings make the same key.
func writeField(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

// share returns the one copy of s the process holds (unique drops it when nothing holds it any
// more).
func share[S ~string](s S) S {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// locationsKey tells location lists apart: equal lists, equal keys.
func locationsKey(l []v1alpha1.TempLocation) string {
	var b strings.Builder
	for _, loc := range l {
		for _, f := range []string{string(loc.Data), string(loc.Medium), loc.Option, loc.Path} {
			writeField(&b, f)
		}
	}
	return b.String()
}

// sharedValues hands out one copy of each distinct value, values told apart by their JSON (all
// that the remembered decisions keep is exported, and a quantity's JSON is its canonical form).
// The copies are read only, as everything the decisions keep.
type sharedValues[T any] struct {
	// values are keyed by the SHA-256 of their JSON, which a plan's drop-in file makes a few KiB.
	values sharedTable[*T]
}

// intern returns the shared value equal to *v, v itself the first time (and nil for nil).
func (s *sharedValues[T]) intern(v *T) *T {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	key := sha256.Sum256(raw)
	return s.values.get(string(key[:]), func() *T { return v })
}
