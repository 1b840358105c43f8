package decide

// This file paces a ScratchVolume's changes across its targets: at most so many StatefulSets
// rolling out at once, and none more once one of them has taken too long.

import (
	"fmt"
	"math"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// DefaultProgressDeadline is how long a target may stay in flight when neither the ScratchVolume
// nor the manager says.
const DefaultProgressDeadline = 10 * time.Minute

// RolloutDefaults are the manager's pacing, for the ScratchVolumes that set none.
type RolloutDefaults struct {
	// MaxInFlight is a count or a share of the targets; the zero value sets no limit.
	MaxInFlight intstr.IntOrString
	// ProgressDeadline is DefaultProgressDeadline when zero.
	ProgressDeadline time.Duration
}

// Pacing is what one reconcile of a ScratchVolume may start: how many more targets may begin
// rolling out, and which are in flight since when.
type Pacing struct {
	// Limit is the most targets in flight at once; 0 sets none.
	Limit int
	// Since is when each target in flight was first found so, by name.
	Since map[string]time.Time
	// Deadline is how long a target may stay in flight.
	Deadline time.Duration
	// Stopped names the target in flight past the deadline, "" when none: then nothing more is
	// started.
	Stopped string
	// Refused names a target whose pods the API server refused to create under the current spec,
	// "" when none: then nothing more is started either.
	Refused string
}

// Pace is the pacing of a reconcile of sv over targets, as the cache has them, at now. written
// reports the targets the cache does not show the controller's last write to yet: they are in
// flight too.
func Pace(sv *v1alpha1.ScratchVolume, targets []*appsv1.StatefulSet, written func(*appsv1.StatefulSet) bool, d RolloutDefaults, now time.Time) Pacing {
	limit, deadline := d.MaxInFlight, d.ProgressDeadline
	if r := sv.Spec.Rollout; r != nil {
		if r.MaxInFlight != nil {
			limit = *r.MaxInFlight
		}
		if r.ProgressDeadline != nil {
			deadline = r.ProgressDeadline.Duration
		}
	}
	if deadline <= 0 {
		deadline = DefaultProgressDeadline
	}
	p := Pacing{Limit: resolve(limit, len(targets)), Since: map[string]time.Time{}, Deadline: deadline}
	last := map[string]*metav1.Time{}
	for _, t := range sv.Status.Targets {
		last[t.Name] = t.InFlightSince
		if p.Limit > 0 && p.Refused == "" && t.Refused != nil && t.Refused.Generation == sv.Generation {
			p.Refused = t.Name
		}
	}
	var oldest time.Time
	for _, sts := range targets {
		if !InFlight(sts) && (written == nil || !written(sts)) {
			continue
		}
		since := now
		if t := last[sts.Name]; t != nil {
			since = t.Time
		}
		p.Since[sts.Name] = since
		// Without a limit every change is written at once: there is no rollout to stop.
		if p.Limit > 0 && now.Sub(since) > deadline && (p.Stopped == "" || since.Before(oldest)) {
			p.Stopped, oldest = sts.Name, since
		}
	}
	return p
}

// resolve is a count or share of n, a share rounded up and at least 1; 0 for no limit.
func resolve(v intstr.IntOrString, n int) int {
	if v.Type == intstr.Int {
		return int(v.IntVal)
	}
	pct := 0
	if _, err := fmt.Sscanf(strings.TrimSuffix(v.StrVal, "%"), "%d", &pct); err != nil || pct <= 0 || pct >= 100 {
		return 0
	}
	return max(1, int(math.Ceil(float64(n)*float64(pct)/100)))
}

// InFlight reports whether sts is rolling out or not all its pods are ready: its controller has not
// observed its spec, or pods that its update strategy replaces by itself still run an older
// revision, or a pod is not ready. Pods that only a deletion replaces (OnDelete, or below a
// rollingUpdate partition) do not count: no write restarts them.
func InFlight(sts *appsv1.StatefulSet) bool {
	want := replicas(sts)
	st := sts.Status
	switch {
	case st.ObservedGeneration < sts.Generation:
		return true
	case st.ReadyReplicas < want:
		return true
	case sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		return false
	}
	return st.UpdatedReplicas < want-partition(sts)
}

// Budget is how many more targets may begin rolling out now; -1 when there is no limit.
func (p Pacing) Budget() int {
	switch {
	case p.Stopped != "" || p.Refused != "":
		return 0
	case p.Limit == 0:
		return -1
	}
	return max(0, p.Limit-len(p.Since))
}

// Queued is the note of a target whose change waits for the targets in flight.
func (p Pacing) Queued() string {
	if p.Refused != "" {
		return fmt.Sprintf("the change waits: the rollout stopped at StatefulSet %s, whose new pods the API server refused to create", p.Refused)
	}
	if p.Stopped != "" {
		return fmt.Sprintf("the change waits: the rollout stopped at StatefulSet %s, in flight for longer than %s", p.Stopped, p.Deadline)
	}
	return fmt.Sprintf("the change waits for a rollout slot: %d of at most %d StatefulSet(s) in flight (spec.rollout.maxInFlight)", len(p.Since), p.Limit)
}

// refusedMessage says why the rollout stopped at a refused target and what to do.
func (p Pacing) refusedMessage() string {
	return fmt.Sprintf("rollout stopped: the API server refused to create the new pods of StatefulSet %s (see its target's message); no further StatefulSet is changed until the ScratchVolume's spec changes",
		p.Refused)
}

// stoppedMessage says why the rollout stopped and what to do.
func (p Pacing) stoppedMessage() string {
	return fmt.Sprintf("rollout stopped: StatefulSet %s has not rolled out with all pods ready within %s (since %s); no further StatefulSet is changed until it is (kubectl rollout status sts %s), or raise spec.rollout.progressDeadline",
		p.Stopped, p.Deadline, p.Since[p.Stopped].UTC().Format(time.RFC3339), p.Stopped)
}
