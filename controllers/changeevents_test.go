package controllers

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// recordedEvent is an Event as the recorder was asked for it.
type recordedEvent struct {
	regarding, related, reason, action, note string
}

type eventCapture struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (c *eventCapture) Eventf(regarding, related runtime.Object, _, reason, action, note string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := recordedEvent{regarding: objectName(regarding), reason: reason, action: action, note: fmt.Sprintf(note, args...)}
	if related != nil {
		ev.related = objectName(related)
	}
	c.events = append(c.events, ev)
}

func (c *eventCapture) AnnotatedEventf(regarding, related runtime.Object, _ map[string]string, eventtype, reason, action, note string, args ...any) {
	c.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func objectName(o runtime.Object) string {
	m := o.(metav1.Object)
	return m.GetNamespace() + "/" + m.GetName()
}

// namedScratchVolume is a ScratchVolume of namespace "ns" that only an Event names.
func namedScratchVolume(name string) *v1alpha1.ScratchVolume {
	return &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// TestChangeEventsOnePerScratchVolumeAndReason gathers the changes of a pass as its parallel syncs
// add them: one Event per ScratchVolume and reason, a lone StatefulSet's own note, the first names of
// many in order with their number, and nothing left over for the next pass.
func TestChangeEventsOnePerScratchVolumeAndReason(t *testing.T) {
	capture := &eventCapture{}
	r := &ScratchVolumeReconciler{Recorder: capture}
	events := r.changeEvents()
	fleet, other := namedScratchVolume("fleet"), namedScratchVolume("other")
	injected := func(name string) decide.Change {
		return decide.Change{SV: fleet, Reason: decide.EventInjected, Action: decide.ActionInject, Note: "Injected a 256Mi RAM volume into container mysql of StatefulSet " + name, Many: "Injected a 256Mi RAM volume into"}
	}
	var wg sync.WaitGroup
	for i := 11; i >= 0; i-- {
		wg.Go(func() {
			name := fmt.Sprintf("db-%02d", i)
			events.add(testenv.StatefulSet("ns", name), injected(name))
		})
	}
	wg.Wait()
	events.add(testenv.StatefulSet("ns", "db-03"), decide.Change{SV: fleet, Reason: decide.EventRestored, Action: decide.ActionInject, Note: "Restored entries of StatefulSet db-03", Many: "Restored entries in"})
	events.add(testenv.StatefulSet("ns", "db-07"), decide.Change{SV: other, Reason: decide.EventUpdated, Action: decide.ActionInject, Note: "Updated the injection in StatefulSet db-07", Many: "Updated the injection in"})
	events.add(testenv.StatefulSet("ns", "db-02"), decide.Change{SV: other, Reason: decide.EventUpdated, Action: decide.ActionInject, Note: "Updated the injection in StatefulSet db-02", Many: "Updated the injection in"})
	events.record()

	want := []recordedEvent{
		{"ns/fleet", "ns/db-00", decide.EventInjected, decide.ActionInject, "Injected a 256Mi RAM volume into 12 StatefulSets: db-00, db-01, db-02, db-03, db-04, db-05, db-06, db-07 and 4 more; status.targets says where each one's temporary data goes"},
		{"ns/fleet", "ns/db-03", decide.EventRestored, decide.ActionInject, "Restored entries of StatefulSet db-03"},
		{"ns/other", "ns/db-02", decide.EventUpdated, decide.ActionInject, "Updated the injection in 2 StatefulSets: db-02, db-07; status.targets says where each one's temporary data goes"},
	}
	if fmt.Sprint(capture.events) != fmt.Sprint(want) {
		t.Errorf("recorded\n%v\nwant\n%v", capture.events, want)
	}
	events.record()
	if len(capture.events) != len(want) {
		t.Errorf("a second record sent %d more Events; the first should have forgotten what it sent", len(capture.events)-len(want))
	}
}

// TestChangeEventsNotesFitTheAPI keeps notes within the API server's 1 KiB, lone and many, cut on a
// character, not inside one.
func TestChangeEventsNotesFitTheAPI(t *testing.T) {
	capture := &eventCapture{}
	r := &ScratchVolumeReconciler{Recorder: capture}
	events := r.changeEvents()
	long := strings.Repeat("é", 120) // 240 bytes: eight of them pass 1 KiB
	sv := namedScratchVolume("fleet")
	for i := range 9 {
		name := fmt.Sprintf("%s-%d", long, i)
		events.add(testenv.StatefulSet("ns", name), decide.Change{SV: sv, Reason: decide.EventReverted, Action: decide.ActionRevert, Note: "Removed from " + name, Many: "Removed the RAM volume and its settings from"})
	}
	lone := namedScratchVolume("lone")
	events.add(testenv.StatefulSet("ns", "x"), decide.Change{SV: lone, Reason: decide.EventReverted, Action: decide.ActionRevert, Note: "Removed " + strings.Repeat("é", 600), Many: "Removed from"})
	events.record()
	if len(capture.events) != 2 {
		t.Fatalf("recorded %d Events, want 2", len(capture.events))
	}
	for _, ev := range capture.events {
		if len(ev.note) > conditions.MaxEventNote || !utf8.ValidString(ev.note) || !strings.HasSuffix(ev.note, " …") {
			t.Errorf("note of %d bytes (valid UTF-8: %v), want at most %d, cut with an ellipsis: %q", len(ev.note), utf8.ValidString(ev.note), conditions.MaxEventNote, ev.note)
		}
	}
	if !strings.HasPrefix(capture.events[0].note, "Removed the RAM volume and its settings from 9 StatefulSets: "+long+"-0, ") {
		t.Errorf("the note about many starts %.80q", capture.events[0].note)
	}
}
