package readaheadctl

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

// report is what a pass writes into the NodeIOProfile and announces.
type report struct {
	devices []v1alpha1.DeviceReadAheadStatus
	// applied is the ReadAheadApplied condition, without its transition time, which depends on
	// what the NodeIOProfile held before.
	applied metav1.Condition
	// problems are everything the user must fix, the blocking one first.
	problems []problem
}

// buildReport turns a pass into device entries and conditions.
func buildReport(p plan, res results) report {
	entries := map[readahead.DeviceID]readahead.Entry{}
	for _, e := range res.entries {
		entries[e.DeviceID] = e
	}
	var rep report
	if p.blocked != nil {
		rep.problems = append(rep.problems, *p.blocked)
	}
	ok := 0
	for _, d := range res.devices {
		st, issue := deviceStatus(p, d, entries)
		rep.devices = append(rep.devices, st)
		switch {
		case d.err != nil:
			rep.problems = append(rep.problems, problem{reason: reasonFor(d.err), subject: d.device.String(), message: issue, policy: d.policy.Name})
		case issue == "" && d.after != nil && *d.after == d.desired:
			ok++
		}
	}
	for _, rr := range res.restores {
		if rr.err != nil {
			rep.devices = append(rep.devices, failedRestoreStatus(rr))
			rep.problems = append(rep.problems, problem{reason: v1alpha1.ReasonRestoreFailed, subject: rr.entry.String(),
				message: restoreFailure(rr.err), policy: rr.entry.Policy})
		}
	}
	if p.blocked != nil && len(res.devices) == 0 {
		for _, e := range p.saved {
			rep.devices = append(rep.devices, savedStatus(e, "left unchanged: "+p.blocked.reason+" (see the ReadAheadApplied condition)"))
		}
	}
	rep.problems = append(rep.problems, p.problems...)
	if res.entriesErr != nil {
		rep.problems = append(rep.problems, *stateProblem(res.entriesErr))
	}
	rep.applied = appliedCondition(p, res, ok, rep.problems)
	return rep
}

// deviceStatus is the entry of a device a policy owns, and what went wrong with it.
func deviceStatus(p plan, d deviceResult, entries map[readahead.DeviceID]readahead.Entry) (v1alpha1.DeviceReadAheadStatus, string) {
	st := v1alpha1.DeviceReadAheadStatus{
		Device: d.device.Name, MajorMinor: d.device.Dev.String(), Policy: d.policy.Name,
		DesiredKiB: new(d.desired), CurrentKiB: d.after,
	}
	if e, ok := entries[d.device]; ok {
		st.OriginalKiB = new(e.OriginalKiB)
		if !e.AppliedAt.IsZero() {
			st.LastAppliedTime = new(metav1.NewTime(e.AppliedAt))
		}
	}
	issue := ""
	switch {
	case p.blocked != nil:
		issue = "left unchanged: " + p.blocked.reason + " (see the ReadAheadApplied condition)"
	case d.err != nil:
		issue = d.err.Error()
	}
	st.Message = issue
	st.OverriddenPolicies = slices.Clone(d.losers)
	return st, issue
}

// failedRestoreStatus keeps a device whose original could not be put back in view: it has no
// policy any more, but still has the agent's value.
func failedRestoreStatus(rr restoreResult) v1alpha1.DeviceReadAheadStatus {
	st := savedStatus(rr.entry, restoreFailure(rr.err))
	st.Policy = ""
	if !rr.restored.Gone && rr.restored.BeforeKiB != 0 {
		st.CurrentKiB = new(rr.restored.BeforeKiB)
	}
	return st
}

func restoreFailure(err error) string {
	return fmt.Sprintf("failed to restore the original read-ahead: %v; the saved original is kept and retried", err)
}

func savedStatus(e readahead.Entry, msg string) v1alpha1.DeviceReadAheadStatus {
	st := v1alpha1.DeviceReadAheadStatus{
		Device: e.Name, MajorMinor: e.Dev.String(), Policy: e.Policy, OriginalKiB: new(e.OriginalKiB), Message: msg,
	}
	if e.AppliedKiB != nil {
		st.DesiredKiB = new(*e.AppliedKiB)
	}
	if !e.AppliedAt.IsZero() {
		st.LastAppliedTime = new(metav1.NewTime(e.AppliedAt))
	}
	return st
}

// reasonFor picks a condition reason for a device failure from the readahead sentinels.
func reasonFor(err error) string {
	switch {
	case errors.Is(err, readahead.ErrCorruptState):
		return v1alpha1.ReasonStateFileCorrupt
	case errors.Is(err, readahead.ErrDeviceChanged):
		return v1alpha1.ReasonDeviceChanged
	case errors.Is(err, readahead.ErrDeviceNotFound):
		return v1alpha1.ReasonDeviceNotFound
	case errors.Is(err, readahead.ErrPermission):
		return v1alpha1.ReasonPermissionDenied
	case errors.Is(err, readahead.ErrReadOnly):
		return v1alpha1.ReasonReadOnlySysfs
	}
	return v1alpha1.ReasonReadAheadFailed
}

// appliedCondition sums the pass up. Every problem makes it False with the first problem's
// reason and all of them in the message: this condition is the read-ahead side's only one, as
// Degraded belongs to the probe (see FieldManager).
func appliedCondition(p plan, res results, ok int, problems []problem) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionReadAheadApplied, Status: metav1.ConditionFalse}
	total := len(res.devices)
	issues := make([]string, 0, len(problems))
	for _, pr := range problems {
		issues = append(issues, pr.String())
	}
	switch {
	case p.blocked != nil:
		c.Reason, c.Message = p.blocked.reason, "no device was changed: "+conditions.List(issues, conditions.MaxListed)
	case len(problems) > 0:
		c.Reason = problems[0].reason
		c.Message = fmt.Sprintf("%d of %d %s the read-ahead of %s policy: %s", ok, total,
			conditions.Plural(total, "device has", "devices have"), conditions.Plural(total, "its", "their"), conditions.List(issues, conditions.MaxListed))
	case total == 0:
		c.Reason, c.Message = v1alpha1.ReasonNoPolicy, "no ReadAheadPolicy selects a device on this node"
	case ok == total:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonApplied
		c.Message = fmt.Sprintf("%d %s the read-ahead of %s policy: %s", total, conditions.Plural(total, "device has", "devices have"),
			conditions.Plural(total, "its", "their"), conditions.List(deviceValues(res.devices), conditions.MaxListed))
	default:
		c.Reason = v1alpha1.ReasonPending
		c.Message = fmt.Sprintf("%d of %d devices have the read-ahead of their policy; see status.readAhead", ok, total)
	}
	return c
}

func deviceValues(devices []deviceResult) []string {
	out := make([]string, 0, len(devices))
	for _, d := range devices {
		out = append(out, fmt.Sprintf("%s %d KiB (%s)", d.device.Name, d.desired, d.policy.Name))
	}
	return out
}
