package controllers_test

import (
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// assertEvent waits for an Event with reason about the named ScratchVolume.
func assertEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	eventually(t, func() string {
		list := &eventsv1.EventList{}
		if err := env.Client.List(ctxFor(t), list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		for _, ev := range list.Items {
			if ev.Regarding.Name == name && ev.Reason == reason {
				return ""
			}
		}
		return "no " + reason + " event for " + name
	})
}
