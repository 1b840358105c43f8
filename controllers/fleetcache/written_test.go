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
