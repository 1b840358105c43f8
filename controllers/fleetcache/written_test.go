package fleetcache

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestWrittenGenerations(t *testing.T) {
	var w Written
	at := func(gen int64) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", Generation: gen}}
	}
	if w.Behind(at(1)) {
		t.Error("behind with no write recorded")
	}
	w.Record(types.NamespacedName{Namespace: "ns", Name: "db"}, 5)
	if !w.Behind(at(4)) {
		t.Error("a copy at generation 4 is not behind a write that made generation 5")
	}
	if !w.Behind(at(4)) {
		t.Error("a copy still behind was forgotten before the cache caught up")
	}
	if w.Behind(at(5)) {
		t.Error("a copy at the written generation is behind")
	}
	if w.Behind(at(4)) {
		t.Error("the write was not forgotten once the cache had seen it")
	}
	w.Record(types.NamespacedName{Namespace: "ns", Name: "other"}, 9)
	if w.Behind(at(2)) {
		t.Error("a write to another StatefulSet makes this one behind")
	}
}

func TestWrittenStatuses(t *testing.T) {
	var s Statuses
	at := func(name, rv string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}
	}
	if s.Behind(at("tmp", "7")) {
		t.Error("behind with no write recorded")
	}
	s.Record(types.NamespacedName{Namespace: "ns", Name: "tmp"}, "100")
	// Resource versions order by value, not as text: "99" is older than "100".
	if !s.Behind(at("tmp", "99")) {
		t.Error("a copy at resourceVersion 99 is not behind a status write that made 100")
	}
	if !s.Behind(at("tmp", "99")) {
		t.Error("a copy still behind was forgotten before the cache caught up")
	}
	if s.Behind(at("other", "1")) {
		t.Error("a status write to another ScratchVolume makes this one behind")
	}
	if s.Behind(at("tmp", "100")) {
		t.Error("a copy at the written resourceVersion is behind")
	}
	if s.Behind(at("tmp", "99")) {
		t.Error("the write was not forgotten once the cache had seen it")
	}
	// A later write by anyone else also shows the cache has caught up.
	s.Record(types.NamespacedName{Namespace: "ns", Name: "tmp"}, "200")
	if s.Behind(at("tmp", "201")) {
		t.Error("a copy newer than the write is behind")
	}
	// A version outside the API server's order holds nothing back.
	s.Record(types.NamespacedName{Namespace: "ns", Name: "tmp"}, "300")
	if s.Behind(at("tmp", "not-a-number")) {
		t.Error("a copy whose resourceVersion cannot be compared is behind")
	}
}
