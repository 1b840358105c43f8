// Package capacity turns the node agents' observations of the RAM scratch volumes of some pods
// into what a ScratchVolume's status says about its size: a summary of the use, the Capacity
// condition, a recommended size, and which full episodes are new and deserve an Event. It is pure:
// the controller gives it the observations and writes what it returns.
package capacity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// The rule behind the condition and the recommendation; docs/tuning.md states the same.
const (
	// NearFullPercent of its size is where a volume's peak over the agents' window counts as near
	// full.
	NearFullPercent = 90
	// FullPercent is the agent's own threshold: a volume with less than 1% free is full, because
	// the next write that does not fit fails, not only the one that meets zero.
	FullPercent = 99
	// Percentile of the pods' peaks the recommendation starts from: the largest peak with up to a
	// hundred pods, while one runaway pod of a large fleet does not size all the others.
	Percentile = 99
	// MarginPercent is added to that peak: the observations miss what falls between two samples,
	// and the next month's largest sort is rarely this month's.
	MarginPercent = 25
	// FullFactor: a volume found full only shows that it needed more than its size, so the
	// recommendation is at least this many times the current size.
	FullFactor = 2
)

const mi = 1 << 20

// Summarize sums up the observations of some pods; nil when there are none.
func Summarize(obs []v1alpha1.ScratchVolumeUsage) *v1alpha1.ScratchUsage {
	if len(obs) == 0 {
		return nil
	}
	s := &v1alpha1.ScratchUsage{Pods: int32(len(obs))}
	for i := range obs {
		o := &obs[i]
		s.PeakBytes = max(s.PeakBytes, o.PeakBytes)
		s.PeakPercent = max(s.PeakPercent, percent(o.PeakBytes, o.SizeBytes))
		s.WindowPeakBytes = max(s.WindowPeakBytes, o.WindowPeakBytes)
		s.FullEpisodes += o.FullEpisodes
		if o.FullEpisodes > 0 {
			s.FullPods++
		}
		if o.LastFullTime != nil && (s.LastFullTime == nil || s.LastFullTime.Before(o.LastFullTime)) {
			s.LastFullTime = o.LastFullTime.DeepCopy()
		}
		if s.ObservedSince == nil || o.SampledSince.Before(s.ObservedSince) {
			s.ObservedSince = o.SampledSince.DeepCopy()
		}
	}
	return s
}

// percent is used as a percentage of size, rounded up, so that 99.2% full never reads 99.
func percent(used, size int64) int32 {
	if size <= 0 {
		return 0
	}
	return int32(min(100, (used*100+size-1)/size))
}

// Recommend is the size the observations call for: the Percentile of the pods' peaks plus
// MarginPercent, at least FullFactor times size when a volume was found full, rounded up to a
// tidy quantity and kept within the bounds of spec.size. Nil without observations.
func Recommend(obs []v1alpha1.ScratchVolumeUsage, size resource.Quantity) *resource.Quantity {
	if len(obs) == 0 {
		return nil
	}
	peaks := make([]int64, 0, len(obs))
	full := false
	for _, o := range obs {
		peaks = append(peaks, o.PeakBytes)
		full = full || o.FullEpisodes > 0 || o.Full
	}
	slices.Sort(peaks)
	rank := int(math.Ceil(float64(Percentile)/100*float64(len(peaks)))) - 1
	want := float64(peaks[max(rank, 0)]) * (100 + MarginPercent) / 100
	if full {
		want = max(want, FullFactor*float64(size.Value()))
	}
	lo, hi := resource.MustParse(v1alpha1.MinScratchVolumeSize), resource.MustParse(v1alpha1.MaxScratchVolumeSize)
	bytes := min(max(tidy(want), lo.Value()), hi.Value())
	return resource.NewQuantity(bytes, resource.BinarySI)
}

// RecommendRecent is Recommend from the pods' peaks over the agents' window (the last hour by
// default) instead of their whole lives: what recent use calls for, which a spike leaves once it
// is older than the window. A volume found full within the window (its window peak at FullPercent
// of its size) counts as full.
func RecommendRecent(obs []v1alpha1.ScratchVolumeUsage, size resource.Quantity) *resource.Quantity {
	recent := make([]v1alpha1.ScratchVolumeUsage, len(obs))
	for i, o := range obs {
		recent[i] = v1alpha1.ScratchVolumeUsage{SizeBytes: o.SizeBytes, PeakBytes: o.WindowPeakBytes,
			Full: o.Full || percent(o.WindowPeakBytes, o.SizeBytes) >= FullPercent}
	}
	return Recommend(recent, size)
}

// Step is the tidy step at a size of bytes: 16Mi up to 256Mi, 64Mi up to 1Gi, 256Mi up to 4Gi,
// 1Gi above.
func Step(bytes int64) int64 {
	switch {
	case bytes <= 256*mi:
		return 16 * mi
	case bytes <= 1024*mi:
		return 64 * mi
	case bytes <= 4096*mi:
		return 256 * mi
	}
	return 1024 * mi
}

// Tidy rounds bytes up to its Step.
func Tidy(bytes int64) int64 { return tidy(float64(bytes)) }

// tidy rounds up to a step that grows with the size, so that a recommendation reads like one a
// person would write (384Mi, 1280Mi, 6Gi) and does not move with every byte of a new peak.
func tidy(bytes float64) int64 {
	step := float64(Step(int64(math.Ceil(bytes))))
	return int64(math.Ceil(bytes/step) * step)
}

// Condition is the Capacity condition (without ObservedGeneration) for the observations of a
// ScratchVolume of the given size, with the recommendation rec.
func Condition(obs []v1alpha1.ScratchVolumeUsage, size resource.Quantity, rec *resource.Quantity) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionCapacity}
	if len(obs) == 0 {
		c.Status, c.Reason = metav1.ConditionUnknown, v1alpha1.ReasonCapacityNotObserved
		c.Message = "no node agent has reported a pod of the targets yet: pods are reported once they run the injected template on a node where the node agent runs"
		return c
	}
	var full, near []string
	for _, o := range obs {
		switch p := percent(o.WindowPeakBytes, o.SizeBytes); {
		case o.Full || p >= FullPercent:
			full = append(full, o.Pod)
		case p >= NearFullPercent:
			near = append(near, fmt.Sprintf("%s (%d%%)", o.Pod, p))
		}
	}
	summary := describe(Summarize(obs), obs, size, rec)
	switch {
	case len(full) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonCapacityFull
		c.Message = fmt.Sprintf("the RAM volume of %s was found full within the node agents' window: writes of temporary data there fail with \"No space left on device\"; %s",
			list("pod", full), summary)
	case len(near) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonCapacityNearFull
		c.Message = fmt.Sprintf("the RAM volume of %s came within %d%% of full within the node agents' window; %s",
			list("pod", near), 100-NearFullPercent, summary)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonCapacitySufficient
		c.Message = summary
	}
	return c
}

// describe says what the figures rest on and what the recommendation would change. Nothing in
// it moves with the clock, so an unchanged observation writes no new status.
func describe(s *v1alpha1.ScratchUsage, obs []v1alpha1.ScratchVolumeUsage, size resource.Quantity, rec *resource.Quantity) string {
	msg := fmt.Sprintf("peak %s of %s (%d%%) over %d pod(s) observed since %s",
		quantity.Approx(s.PeakBytes), quantity.Approx(size.Value()), s.PeakPercent, s.Pods, s.ObservedSince.UTC().Format("2006-01-02T15:04:05Z"))
	if s.FullPods > 0 {
		msg += fmt.Sprintf(", %d of them found full %d time(s)", s.FullPods, s.FullEpisodes)
	}
	if rec == nil {
		return msg
	}
	msg += "; recommended size " + quantity.Approx(rec.Value())
	if s.FullPods > 0 {
		msg += fmt.Sprintf(" (at least %d times the size: a full volume's peak only shows the size)", FullFactor)
	}
	pods := int64(len(obs))
	switch d := rec.Value() - size.Value(); {
	case d < 0:
		msg += fmt.Sprintf(", which would free %s of memory per pod (%s over %d pods)", quantity.Approx(-d), quantity.Approx(-d*pods), pods)
	case d > 0:
		msg += fmt.Sprintf(", which needs %s more memory per pod (%s over %d pods)", quantity.Approx(d), quantity.Approx(d*pods), pods)
	default:
		msg += ", the current size"
	}
	return msg
}

// list names at most three items and counts the rest.
func list(noun string, items []string) string {
	slices.Sort(items)
	if len(items) > 3 {
		return fmt.Sprintf("%ss %s and %d more", noun, strings.Join(items[:3], ", "), len(items)-3)
	}
	if len(items) > 1 {
		return noun + "s " + strings.Join(items, ", ")
	}
	return noun + " " + items[0]
}

// Episode is a pod's volume found full once or more since the last announcement.
type Episode struct {
	Pod string
	// New is how many episodes were not announced yet; Total how many the agent counts for the
	// pod since SampledSince.
	New, Total   int64
	SampledSince metav1.Time
	SizeBytes    int64
}

// NewEpisodes compares the agents' counts of full episodes with the ones already announced
// (records, from the status) and returns the records to keep and the episodes to announce. A pod
// whose SampledSince changed is a new pod, or its agent restarted: its count starts again. Pods no
// longer observed are forgotten.
func NewEpisodes(records []v1alpha1.FullPod, obs []v1alpha1.ScratchVolumeUsage) ([]v1alpha1.FullPod, []Episode) {
	known := make(map[string]v1alpha1.FullPod, len(records))
	for _, r := range records {
		known[r.Pod] = r
	}
	var keep []v1alpha1.FullPod
	var news []Episode
	for _, o := range obs {
		if o.FullEpisodes <= 0 {
			continue
		}
		announced := int64(0)
		if r, ok := known[o.Pod]; ok && r.SampledSince.Equal(&o.SampledSince) {
			announced = min(r.Episodes, o.FullEpisodes)
		}
		if n := o.FullEpisodes - announced; n > 0 {
			news = append(news, Episode{Pod: o.Pod, New: n, Total: o.FullEpisodes, SampledSince: o.SampledSince, SizeBytes: o.SizeBytes})
		}
		keep = append(keep, v1alpha1.FullPod{Pod: o.Pod, SampledSince: o.SampledSince, Episodes: o.FullEpisodes})
	}
	slices.SortFunc(keep, func(a, b v1alpha1.FullPod) int { return cmp.Compare(a.Pod, b.Pod) })
	slices.SortFunc(news, func(a, b Episode) int { return cmp.Compare(a.Pod, b.Pod) })
	return keep, news
}
