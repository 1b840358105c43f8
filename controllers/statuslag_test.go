package controllers_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
	"github.com/dbtune/scratch-operator/test/testmanager"
)

// heldWatch holds back what a watch of one resource receives from the first event that contains
// marker on, until released: the manager's cache keeps showing what it saw before, as an informer
// behind its API server does.
type heldWatch struct {
	rt       http.RoundTripper
	resource string
	marker   []byte
	released chan struct{}
	once     sync.Once
}

func newHeldWatch(resource, marker string) *heldWatch {
	return &heldWatch{resource: resource, marker: []byte(marker), released: make(chan struct{})}
}

func (h *heldWatch) release() { h.once.Do(func() { close(h.released) }) }

// RoundTrip sends req on, and holds back what the answer to a watch of the resource brings.
func (h *heldWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(req)
	if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, "/"+h.resource) {
		resp.Body = &heldBody{ReadCloser: resp.Body, h: h}
	}
	return resp, err
}

// heldBody hands on what a watch received until the marker shows in it, then only once released.
type heldBody struct {
	io.ReadCloser
	h       *heldWatch
	tail    []byte // the end of what was read, so that a marker split across two reads is found
	holding bool
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.holding {
		b.tail = append(b.tail, p[:n]...)
		b.holding = bytes.Contains(b.tail, b.h.marker)
		b.tail = b.tail[max(0, len(b.tail)-len(b.h.marker)):]
	}
	if b.holding {
		<-b.h.released
	}
	return n, err
}

// TestNoDecisionFromAStatusOlderThanItsOwnWrite refuses the pods of an injection, and holds back
// the manager's ScratchVolume watch from the status that records the refusal on. The controller
// puts the StatefulSet back and records the refusal in the status; until its cache shows that
// status, the copy it holds says nothing of the refusal, and a decision made from it would inject
// again the pods the API server just refused, taking a second pod of the database away. It must
// wait for its own write instead.
func TestNoDecisionFromAStatusOlderThanItsOwnWrite(t *testing.T) {
	testenv.Require(t, env)
	own, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	ns := own.Namespace(t)
	const refusal = "no RAM volumes here"
	held := newHeldWatch("scratchvolumes", refusal)
	cfg := rest.CopyConfig(own.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { held.rt = rt; return held })
	testmanager.RunIn(t, cfg, own.Scheme, []string{ns}, nil)
	t.Cleanup(held.release) // before the manager stops: its informers wait on the held watch

	create(t, own, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, own, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	injected := getSTS(t, own, ns, "db")
	// The StatefulSet controller deletes a pod to roll it, and the API server refuses its successor.
	create(t, own, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "db.refused"},
		InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Namespace: ns, Name: "db", UID: injected.UID},
		Reason:         "FailedCreate", Type: corev1.EventTypeWarning, LastTimestamp: metav1.Now(),
		Message: "create Pod db-1 in StatefulSet db failed error: pods \"db-1\" is forbidden: " + refusal,
	})
	injected.Status = appsv1.StatefulSetStatus{ObservedGeneration: injected.Generation, Replicas: 1, CurrentRevision: "db-1", UpdateRevision: "db-2"}
	if err := own.Client.Status().Update(ctxFor(t), injected); err != nil {
		t.Fatal(err)
	}

	// It puts the StatefulSet back at once, from the copy it had before the refusal...
	testenv.Eventually(t, waitTimeout, func() string {
		if sts := getSTS(t, own, ns, "db"); sts.Generation == injected.Generation {
			return fmt.Sprintf("the refused injection is still there (generation %d, annotations %v)", sts.Generation, sts.Spec.Template.Annotations)
		}
		return ""
	})
	reverted := getSTS(t, own, ns, "db")
	if _, carried := reverted.Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+"tmp"]; carried {
		t.Fatalf("the StatefulSet carries the refused injection again at generation %d (injected at %d): it was put back and injected again", reverted.Generation, injected.Generation)
	}
	// ... and, while its cache still shows the ScratchVolume as it was before it recorded the
	// refusal, writes nothing more.
	time.Sleep(2 * time.Second)
	if sts := getSTS(t, own, ns, "db"); sts.Generation != reverted.Generation {
		t.Errorf("the controller wrote the StatefulSet again (generation %d to %d) from a ScratchVolume older than its own status write",
			reverted.Generation, sts.Generation)
	}

	held.release()
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, own, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionFalse, v1alpha1.ReasonPodsRefused)
	})
	time.Sleep(time.Second)
	if sts := getSTS(t, own, ns, "db"); sts.Generation != reverted.Generation {
		t.Errorf("the controller wrote the StatefulSet again (generation %d to %d) once its cache had the refusal",
			reverted.Generation, sts.Generation)
	}
}
