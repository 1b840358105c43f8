package controllers_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// assertEvent waits for an Event with reason about the named ScratchVolume.
func assertEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
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

// TestFleetChangesAreFewEvents applies a selector ScratchVolume to six StatefulSets: the Injected
// Events name every one of them, and there are fewer Events than StatefulSets (one per pass over
// the targets, not one per StatefulSet). A StatefulSet that joins later gets an Event of its own,
// related to it, that says where its RAM volume went; deleting the ScratchVolume reverts all
// seven the same way.
func TestFleetChangesAreFewEvents(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	var fleet []string
	for i := range 6 {
		name := fmt.Sprintf("db-%d", i)
		fleet = append(fleet, name)
		create(t, e, mariadbStatefulSet(ns, name))
	}
	sv := scratchVolume(ns, "fleet", "")
	sv.Spec.Target = v1alpha1.ScratchTarget{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "db"}}}
	create(t, e, sv)
	testenv.Eventually(t, waitTimeout, func() string { return injectedCount(t, e, ns, 6) })
	testenv.Eventually(t, waitTimeout, func() string { return changeEventsName(t, ns, "fleet", decide.EventInjected, fleet) })

	create(t, e, mariadbStatefulSet(ns, "db-6"))
	testenv.Eventually(t, waitTimeout, func() string { return injectedCount(t, e, ns, 7) })
	testenv.Eventually(t, waitTimeout, func() string {
		for _, ev := range changeEvents(t, ns, "fleet", decide.EventInjected) {
			if ev.Related != nil && ev.Related.Name == "db-6" {
				if want := "into container mariadb of StatefulSet db-6"; !strings.Contains(ev.Note, want) {
					return fmt.Sprintf("db-6's Injected Event says %q, want %q", ev.Note, want)
				}
				return ""
			}
		}
		return "no Injected Event related to db-6"
	})

	if err := e.Client.Delete(ctxFor(t), sv); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		return changeEventsName(t, ns, "fleet", decide.EventReverted, append(fleet, "db-6"))
	})
}

// changeEvents lists the Events with reason about the named ScratchVolume.
func changeEvents(t *testing.T, ns, name, reason string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := env.Client.List(ctxFor(t), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var evs []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Name == name && ev.Reason == reason {
			evs = append(evs, ev)
		}
	}
	return evs
}

// manyNote reads the StatefulSets an Event about several names: "… into 6 StatefulSets: a, b; …".
var manyNote = regexp.MustCompile(` (\d+) StatefulSets: ([^;]+)`)

// changeEventsName tells what is missing for the Events with reason about the named ScratchVolume
// to name each of sts once, in fewer Events than StatefulSets; "" when nothing is.
func changeEventsName(t *testing.T, ns, name, reason string, sts []string) string {
	t.Helper()
	evs := changeEvents(t, ns, name, reason)
	var named []string
	for _, ev := range evs {
		if m := manyNote.FindStringSubmatch(ev.Note); m != nil {
			names := strings.Split(m[2], ", ")
			if n, _ := strconv.Atoi(m[1]); n != len(names) {
				return fmt.Sprintf("the Event says %d StatefulSets and names %d: %q", n, len(names), ev.Note)
			}
			named = append(named, names...)
			continue
		}
		if ev.Related == nil || !strings.HasSuffix(ev.Note, "StatefulSet "+ev.Related.Name) && !strings.Contains(ev.Note, "StatefulSet "+ev.Related.Name+" ") {
			return fmt.Sprintf("an Event about one StatefulSet does not name the one it is related to: %+v %q", ev.Related, ev.Note)
		}
		named = append(named, ev.Related.Name)
	}
	slices.Sort(named)
	want := slices.Sorted(slices.Values(sts))
	switch {
	case !slices.Equal(named, want):
		return fmt.Sprintf("%d %s Events name %v, want %v", len(evs), reason, named, want)
	case len(evs) >= len(sts):
		notes := make([]string, len(evs))
		for i, ev := range evs {
			notes[i] = ev.Note
		}
		return fmt.Sprintf("%d %s Events for %d StatefulSets: %q", len(evs), reason, len(sts), notes)
	}
	return ""
}
