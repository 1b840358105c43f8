package decide

// This file decides spec.sizing: the size the volumes' recent peaks call for within the user's
// bounds, whether it has called for it long enough, and whether the controller may write it now
// (approved, or in a maintenance window) or only report it.

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/capacity"
)

// Defaults of spec.sizing.
const (
	DefaultSustainFor     = 6 * time.Hour
	DefaultResizeInterval = 24 * time.Hour
	// sizeHistory is how many automatic resizes status.sizing keeps.
	sizeHistory = 5
)

// Resize is an automatic resize the controller is to write into spec.size: to To, for the reason
// Why (the approval or the window), announced with Event.
type Resize struct {
	From, To resource.Quantity
	Why      string
	Event    string
}

// SizingSeen says whether status.sizing as read (got) already records the last resize of written.
func SizingSeen(got, written *v1alpha1.SizingStatus) bool {
	if written == nil || len(written.History) == 0 {
		return true
	}
	return got != nil && len(got.History) > 0 && !got.History[0].Time.Before(&written.History[0].Time)
}

// sizing writes status.sizing into st, whose usage is decided already. It returns the resize to
// write when spec.sizing lets the controller write one now, and when the decision should be made
// again without an event (the proposal has been sustained long enough, the interval is over, a
// window opens); zero when it waits for nothing.
func (rep *Report) sizing(st *v1alpha1.ScratchVolumeStatus) (resize *Resize, wake time.Time) {
	sv, last := rep.sv, rep.sv.Status.Sizing
	if !SizingSeen(last, rep.knownSizing) {
		last = rep.knownSizing
	}
	policy := sv.Spec.Sizing
	if policy == nil || policy.Mode == "" || policy.Mode == v1alpha1.SizingManual || policy.Min == nil || policy.Max == nil {
		return nil, wake
	}
	if rep.now.IsZero() || (rep.observed == nil && last != nil) {
		// No clock, or the observations could not be read: keep the proposal and its clock.
		st.Sizing = last.DeepCopy()
		return nil, wake
	}
	out := &v1alpha1.SizingStatus{}
	if last != nil {
		out.Last, out.History = last.Last, last.History
	}
	st.Sizing = out
	size := sv.Spec.Size.Value()
	if st.Usage == nil || rep.observed == nil {
		out.Reason, out.Message = v1alpha1.ReasonSizingNotObserved, "no node agent has reported a pod of the targets yet: spec.size stays as it is"
		return nil, wake
	}
	target := sizeFor(rep.observed, sv.Spec.Size, st.Usage.PeakBytes, policy)
	diff := target - size
	if abs(diff) < capacity.Step(min(size, target)) {
		out.Reason = v1alpha1.ReasonSizingSteady
		out.Message = fmt.Sprintf("the pods' peaks of the last window (highest %s) call for %s, within a step of spec.size %s",
			quantity.Approx(st.Usage.WindowPeakBytes), quantity.Approx(target), quantity.Approx(size))
		return nil, wake
	}
	proposed := resource.NewQuantity(target, resource.BinarySI)
	out.Proposed = proposed
	since := metav1.NewTime(rep.now)
	if last != nil && last.Since != nil && last.Proposed != nil && (last.Proposed.Value() > size) == (diff > 0) {
		since = *last.Since // the same direction as before, without a break
	}
	out.Since = &since
	out.ID = shortHash([]byte(fmt.Sprintf("resize %s %d %d", sv.UID, size, target)))[:10]
	sustain, interval := durationOr(policy.SustainFor, DefaultSustainFor), durationOr(policy.Interval, DefaultResizeInterval)
	figures := fmt.Sprintf("the pods' peaks of the last window (highest %s over %d pod(s); %s since they started) have called for %s instead of %s since %s",
		quantity.Approx(st.Usage.WindowPeakBytes), st.Usage.Pods, quantity.Approx(st.Usage.PeakBytes), quantity.Approx(target), quantity.Approx(size),
		since.UTC().Format(time.RFC3339))
	if due := since.Add(sustain); rep.now.Before(due) {
		wake = due
		out.Reason = v1alpha1.ReasonSizingSustaining
		out.Message = fmt.Sprintf("%s; proposed once they have for %s (spec.sizing.sustainFor), at %s", figures, sustain, due.UTC().Format(time.RFC3339))
		return nil, wake
	}
	if len(out.History) > 0 {
		if next := out.History[0].Time.Add(interval); rep.now.Before(next) {
			wake = next
			out.Reason = v1alpha1.ReasonSizingInterval
			out.Message = fmt.Sprintf("%s; the last automatic resize was at %s, the next may come at %s (spec.sizing.interval %s)",
				figures, out.History[0].Time.UTC().Format(time.RFC3339), next.UTC().Format(time.RFC3339), interval)
			return nil, wake
		}
	}
	if short := rep.memoryShortFor(proposed); short != "" {
		out.Reason = v1alpha1.ReasonSizingMemory
		out.Message = fmt.Sprintf("%s; not applied: with accounting Validate it needs larger memory limits for container %s", figures, short)
		return nil, wake
	}
	if policy.Mode == v1alpha1.SizingRecommend {
		out.Reason = v1alpha1.ReasonSizingRecommendOnly
		out.Message = fmt.Sprintf("%s; mode Automatic would set spec.size to %s now (with approval %s=%s, or in a maintenance window)",
			figures, quantity.Approx(target), v1alpha1.ApproveChangeAnnotation, out.ID)
		return nil, wake
	}
	why, reason, wait, next := rep.letThrough(out.ID)
	wake = next
	if why == "" {
		out.Reason = reason
		out.Message = fmt.Sprintf("%s; %s", figures, wait)
		return nil, wake
	}
	change := v1alpha1.SizeChange{
		Time: metav1.NewTime(rep.now), From: sv.Spec.Size.DeepCopy(), To: proposed.DeepCopy(),
		WindowPeakBytes: st.Usage.WindowPeakBytes, PeakBytes: st.Usage.PeakBytes, Pods: st.Usage.Pods, Since: since, Why: why,
	}
	out.History = append([]v1alpha1.SizeChange{change}, out.History...)
	if len(out.History) > sizeHistory {
		out.History = out.History[:sizeHistory]
	}
	out.Last = quantity.Approx(size) + " → " + quantity.Approx(target)
	out.Proposed, out.Since, out.ID = nil, nil, ""
	out.Reason = v1alpha1.ReasonResized
	out.Message = fmt.Sprintf("spec.size %s: %s; %s", out.Last, figures, why)
	return &Resize{From: change.From, To: change.To, Why: why, Event: out.Message}, wake
}

// sizeFor is the size spec.sizing calls for: the recommendation from the pods' recent peaks,
// never below the highest use a pod's volume has had (peak), within min and max.
func sizeFor(obs []v1alpha1.ScratchVolumeUsage, size resource.Quantity, peak int64, policy *v1alpha1.SizingPolicy) int64 {
	target := size.Value()
	if rec := capacity.RecommendRecent(obs, size); rec != nil {
		target = rec.Value()
	}
	target = max(target, capacity.Tidy(peak))
	return min(max(target, policy.Min.Value()), policy.Max.Value())
}

// letThrough says what lets the resize id through now: its approval or an open maintenance window
// ("" when neither), else the reason it waits, what it waits for and when the next window opens.
func (rep *Report) letThrough(id string) (why, reason, wait string, next time.Time) {
	if approved(rep.sv, id) {
		return fmt.Sprintf("approved with %s=%s", v1alpha1.ApproveChangeAnnotation, id), "", "", time.Time{}
	}
	windows := rep.windows
	if c := rep.sv.Spec.Changes; c != nil && len(c.MaintenanceWindows) > 0 {
		windows = c.MaintenanceWindows
	}
	st, err := Windows(windows, rep.now)
	switch {
	case err != nil:
		return "", v1alpha1.ReasonAwaitingApproval, fmt.Sprintf("waits for approval with %s=%s: the maintenance windows cannot be read (%v)", v1alpha1.ApproveChangeAnnotation, id, err), time.Time{}
	case st.Open:
		return "in the maintenance window " + DescribeWindows(windows), "", "", time.Time{}
	case !st.Next.IsZero():
		return "", v1alpha1.ReasonAwaitingWindow, fmt.Sprintf("applied in the next maintenance window, at %s, or now with approval %s=%s",
			st.Next.UTC().Format(time.RFC3339), v1alpha1.ApproveChangeAnnotation, id), st.Next
	}
	return "", v1alpha1.ReasonAwaitingApproval, fmt.Sprintf("waits for approval with %s=%s, or a maintenance window (spec.changes.maintenanceWindows)", v1alpha1.ApproveChangeAnnotation, id), time.Time{}
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return def
	}
	return d.Duration
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
