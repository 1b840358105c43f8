package decide

// This file decides what the status says about the use of the RAM volumes: the node agents'
// observations summed up per target, the recommended size, and what it asks of memory limits.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/capacity"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// UsageOf is what the profiles report about the RAM volumes of sv's pods, by pod name.
func UsageOf(sv *v1alpha1.ScratchVolume, profiles []v1alpha1.NodeIOProfile) []v1alpha1.ScratchVolumeUsage {
	out := []v1alpha1.ScratchVolumeUsage{}
	for _, p := range profiles {
		for _, u := range p.Status.ScratchVolumes {
			if u.Namespace == sv.Namespace && u.ScratchVolume == sv.Name {
				out = append(out, u)
			}
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.ScratchVolumeUsage) int { return cmp.Compare(a.Pod, b.Pod) })
	return out
}

// capacity writes the usage, the recommendation and the Capacity condition into st, from the
// observations of the pods of st's targets; a pod of a StatefulSet no longer selected does not
// count. Without observations read (rep.observed nil) it keeps what the last status said. It
// returns the volumes that filled up since the last status.
func (rep *Report) capacity(st *v1alpha1.ScratchVolumeStatus) (episodes []capacity.Episode) {
	last := rep.sv.Status
	if rep.observed == nil {
		st.Usage, st.RecommendedSize, st.FullPods = last.Usage, last.RecommendedSize, last.FullPods
		for i := range st.Targets {
			if j := slices.IndexFunc(last.Targets, func(t v1alpha1.ScratchTargetStatus) bool { return t.Name == st.Targets[i].Name }); j >= 0 {
				st.Targets[i].Usage, st.Targets[i].LargePages = last.Targets[j].Usage, last.Targets[j].LargePages
			}
		}
		return nil
	}
	targets := map[string][]v1alpha1.ScratchVolumeUsage{}
	for _, t := range st.Targets {
		targets[t.Name] = nil
	}
	var obs []v1alpha1.ScratchVolumeUsage
	for _, o := range rep.observed {
		if t, ok := statefulSetOf(o.Pod, targets); ok {
			targets[t] = append(targets[t], o)
			obs = append(obs, o)
		}
	}
	for i := range st.Targets {
		st.Targets[i].Usage = capacity.Summarize(targets[st.Targets[i].Name])
		st.Targets[i].LargePages = podPages(targets[st.Targets[i].Name])
	}
	pages := largePagesCondition(rep.sv.Spec.LargePages, podPages(obs))
	pages.ObservedGeneration = rep.sv.Generation
	rep.setCondition(&st.Conditions, pages)
	size := rep.sv.Spec.Size
	st.Usage = capacity.Summarize(obs)
	st.RecommendedSize = capacity.Recommend(obs, size)
	st.FullPods, episodes = capacity.NewEpisodes(last.FullPods, obs)
	cond := capacity.Condition(obs, size, st.RecommendedSize)
	if len(obs) > 0 {
		cond.Message += rep.limitsFor(st.RecommendedSize)
	}
	cond.ObservedGeneration = rep.sv.Generation
	rep.setCondition(&st.Conditions, cond)
	return episodes
}

// limitsFor says what growing the volume to rec asks of the containers' memory limits: under
// accounting Validate, whether each limit holds the larger volume; "" when rec is no larger.
func (rep *Report) limitsFor(rec *resource.Quantity) string {
	if rec == nil || rec.Cmp(rep.sv.Spec.Size) <= 0 || len(rep.containers) == 0 {
		return ""
	}
	switch rep.sv.Spec.Memory.Accounting {
	case v1alpha1.MemoryReserve:
		return "; accounting Reserve adds it to the containers' memory requests and limits"
	case v1alpha1.MemoryIgnore:
		return "; accounting Ignore: check the containers' memory limits yourself"
	}
	if short := rep.memoryShortFor(rec); short != "" {
		return "; with accounting Validate it needs larger memory limits for container " + short
	}
	return "; the containers' memory limits hold it"
}

// memoryShortFor names, under accounting Validate, the containers whose memory limit would not
// hold a volume of size, with what they have and need; "" when all do, or under another
// accounting.
func (rep *Report) memoryShortFor(size *resource.Quantity) string {
	if a := rep.sv.Spec.Memory.Accounting; a != "" && a != v1alpha1.MemoryValidate {
		return ""
	}
	resized := rep.sv.DeepCopy()
	resized.Spec.Size = size.DeepCopy()
	var short []string
	for _, target := range slices.Sorted(maps.Keys(rep.containers)) {
		c := rep.containers[target]
		limit, ok := c.Resources.Limits[corev1.ResourceMemory]
		need, err := inject.MemoryNeed(resized, c)
		if !ok || err != nil || limit.Cmp(need) >= 0 {
			continue
		}
		short = append(short, fmt.Sprintf("%s of %s (%s, needs %s)", c.Name, target, quantity.Approx(limit.Value()), quantity.Approx(need.Value())))
	}
	return strings.Join(short, ", ")
}

// statefulSetOf returns which of targets (StatefulSet names) pod belongs to: a StatefulSet names
// its pods <name>-<ordinal>.
func statefulSetOf(pod string, targets map[string][]v1alpha1.ScratchVolumeUsage) (string, bool) {
	i := strings.LastIndexByte(pod, '-')
	if i <= 0 || i == len(pod)-1 || strings.Trim(pod[i+1:], "0123456789") != "" {
		return "", false
	}
	_, ok := targets[pod[:i]]
	return pod[:i], ok
}
