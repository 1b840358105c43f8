package readaheadctl

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

// deviceResult is a step after acting on it.
type deviceResult struct {
	step
	// after is the read-ahead the device has now, nil when it cannot be read.
	after *int64
	// err says why the device does not have its policy's value.
	err error
}

// restoreResult is a saved device after restoring it.
type restoreResult struct {
	entry    readahead.Entry
	restored readahead.Restored
	err      error
}

// results is everything act did, with the state file as it is afterwards.
type results struct {
	devices  []deviceResult
	restores []restoreResult
	entries  []readahead.Entry
	// entriesErr is set when the state file could not be read back after acting.
	entriesErr error
}

// act restores what no policy owns, then applies what the policies want. A blocked plan
// changes nothing.
func (r *nodeReconciler) act(ctx context.Context, p plan, steps []step, events *eventBatch) results {
	var res results
	if p.blocked != nil {
		for _, s := range steps {
			res.devices = append(res.devices, deviceResult{step: s, after: s.current, err: s.err})
		}
		res.entries = p.saved
		return res
	}
	for _, e := range p.restores {
		res.restores = append(res.restores, r.restore(ctx, e, events))
	}
	for _, s := range steps {
		res.devices = append(res.devices, r.apply(ctx, s, events))
	}
	res.entries, res.entriesErr = r.store.Entries()
	return res
}

// apply carries out the step's decision through readahead.Apply, which saves the original
// before the first write and writes nothing when the decision is no change. It runs for
// unchanged devices too, so the state file follows a device whose owner changed.
func (r *nodeReconciler) apply(ctx context.Context, s step, events *eventBatch) deviceResult {
	res := deviceResult{step: s, after: s.current, err: s.err}
	if s.err != nil {
		return res
	}
	c, err := readahead.Apply(r.host, r.store, s.device, s.policy.Name, s.decision)
	if err != nil {
		res.err = err
		res.after = nil
		if kib, readErr := r.host.ReadAhead(s.device); readErr == nil {
			res.after = &kib
		}
		return res
	}
	res.after = &c.KeptKiB
	if c.KeptKiB != res.desired {
		res.err = fmt.Errorf("the kernel kept %d KiB of the %d KiB asked for %s", c.KeptKiB, c.RequestedKiB, s.device)
	}
	if c.Changed {
		r.recordChange(ctx, s, c, events)
	}
	return res
}

func (r *nodeReconciler) recordChange(ctx context.Context, s step, c readahead.Change, events *eventBatch) {
	pol := s.policy
	log.FromContext(ctx).Info("Set read-ahead", "device", s.device.String(), "policy", pol.Name,
		"beforeKiB", c.BeforeKiB, "keptKiB", c.KeptKiB, "drift", s.action == actionRepair)
	if s.action == actionRepair {
		events.add(eventKey{eventType: corev1.EventTypeWarning, reason: EventDriftRepaired, action: actionSet, policy: pol.Name},
			fmt.Sprintf("Read-ahead changed outside the agent, set back for ReadAheadPolicy %s: ", pol.Name),
			fmt.Sprintf("%s was %d KiB (the agent had set %d), now %d KiB", s.device, c.BeforeKiB, *s.saved.AppliedKiB, c.KeptKiB))
		return
	}
	item := fmt.Sprintf("%s %d -> %d KiB", s.device, c.BeforeKiB, c.KeptKiB)
	if s.action == actionApply {
		item += fmt.Sprintf(" (original saved in %s)", r.store.Path())
	}
	events.add(eventKey{eventType: corev1.EventTypeNormal, reason: EventApplied, action: actionSet, policy: pol.Name},
		fmt.Sprintf("Set read-ahead for ReadAheadPolicy %s: ", pol.Name), item)
}

// restore puts a device's original back, or drops the entry of a device that has gone away.
func (r *nodeReconciler) restore(ctx context.Context, e readahead.Entry, events *eventBatch) restoreResult {
	rr, err := readahead.Restore(r.host, r.store, e.DeviceID)
	res := restoreResult{entry: e, restored: rr, err: err}
	if err != nil {
		return res
	}
	log.FromContext(ctx).Info("Restored read-ahead", "device", e.String(), "originalKiB", e.OriginalKiB,
		"beforeKiB", rr.BeforeKiB, "keptKiB", rr.KeptKiB, "gone", rr.Gone)
	if rr.Gone {
		events.add(eventKey{eventType: corev1.EventTypeNormal, reason: EventDeviceGone, action: actionRestore, policy: e.Policy},
			"Dropped the saved original read-ahead of devices that have gone away or now name another device: ",
			fmt.Sprintf("%s (original %d KiB)", e.DeviceID, e.OriginalKiB))
		return res
	}
	events.add(eventKey{eventType: corev1.EventTypeNormal, reason: EventRestored, action: actionRestore, policy: e.Policy},
		fmt.Sprintf("Restored the original read-ahead, as ReadAheadPolicy %s no longer applies to these devices: ", e.Policy),
		fmt.Sprintf("%s %d -> %d KiB", e.DeviceID, rr.BeforeKiB, rr.KeptKiB))
	return res
}
