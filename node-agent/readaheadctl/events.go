package readaheadctl

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// eventKey is what makes two Events distinct for the events.k8s.io recorder, which folds Events
// with the same regarding and related objects, type, reason and action into one series that
// keeps the first note. One Event per key and pass, listing every device, keeps each device's
// change visible: separate per-device Events would be folded into the first one's note.
type eventKey struct {
	eventType, reason, action string
	// policy is the related ReadAheadPolicy, "" for none.
	policy string
}

// eventBatch gathers the notes of one pass.
type eventBatch struct {
	keys  []eventKey
	heads map[eventKey]string
	items map[eventKey][]string
	// uids makes the related references exact; a policy that is already gone is referred to by
	// name only.
	uids map[string]types.UID
}

func newEventBatch(policies []*v1alpha1.ReadAheadPolicy) *eventBatch {
	b := &eventBatch{heads: map[eventKey]string{}, items: map[eventKey][]string{}, uids: map[string]types.UID{}}
	for _, p := range policies {
		b.uids[p.Name] = p.UID
	}
	return b
}

// add records one item under a key; head opens the note the first time the key is used.
func (b *eventBatch) add(k eventKey, head, item string) {
	if _, ok := b.heads[k]; !ok {
		b.keys = append(b.keys, k)
		b.heads[k] = head
	}
	b.items[k] = append(b.items[k], item)
}

// emit sends one Event per key about the node.
func (b *eventBatch) emit(rec recorder.EventRecorder, node *metav1.PartialObjectMetadata) {
	for _, k := range b.keys {
		note := conditions.Cut(b.heads[k]+strings.Join(b.items[k], "; "), conditions.MaxEventNote)
		if k.policy == "" {
			rec.Eventf(nodeRef(node), nil, k.eventType, k.reason, k.action, "%s", note)
			continue
		}
		rec.Eventf(nodeRef(node), policyRef(k.policy, b.uids[k.policy]), k.eventType, k.reason, k.action, "%s", note)
	}
}
