// Package fleetcache is what the ScratchVolume controller keeps between reconciles, and how it
// keeps it small when a selector picks thousands of StatefulSets: the transforms that trim and
// share the informer caches' objects, the remembered decisions that spare planning unchanged
// targets, the write-war guards, and the controller's writes the cache has not seen yet. It
// holds the decide package's results; it makes no decision and does no I/O of its own.
package fleetcache
