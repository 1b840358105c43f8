package controllers

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/capacity"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// The node agents write how full each pod's RAM volume has been into their node's NodeIOProfile
// (status.scratchVolumes); the controller reads them from its cache, trimmed to that list, to sum
// them up in each ScratchVolume's status.
//
// +kubebuilder:rbac:groups=dbtune.io,resources=nodeioprofiles,verbs=list;watch

// indexObservedScratchVolumes indexes NodeIOProfiles by the ScratchVolumes ("namespace/name")
// whose pods' volumes they report.
const indexObservedScratchVolumes = "status.scratchVolumes.scratchVolume"

func observedKey(namespace, name string) string { return namespace + "/" + name }

// observedScratchVolumes is the index function of indexObservedScratchVolumes.
func observedScratchVolumes(o client.Object) []string {
	reports := o.(*v1alpha1.NodeIOProfile).Status.ScratchVolumes
	keys := make([]string, 0, len(reports))
	for _, u := range reports {
		keys = append(keys, observedKey(u.Namespace, u.ScratchVolume))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// scratchVolumesForProfile maps a NodeIOProfile to the ScratchVolumes it reports on. An update is
// mapped from the old object too, so a ScratchVolume whose last pod left the list hears of it.
func (r *ScratchVolumeReconciler) scratchVolumesForProfile(_ context.Context, o client.Object) []reconcile.Request {
	keys := observedScratchVolumes(o)
	reqs := make([]reconcile.Request, 0, len(keys))
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	}
	return reqs
}

// scratchVolumesChanged passes the NodeIOProfile updates that change the reports on the pods'
// RAM volumes; the probe's and read-ahead's own updates concern no ScratchVolume.
func scratchVolumesChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*v1alpha1.NodeIOProfile)
		after, ok2 := e.ObjectNew.(*v1alpha1.NodeIOProfile)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(before.Status.ScratchVolumes, after.Status.ScratchVolumes)
	}}
}

// trimProfile keeps of a NodeIOProfile what the manager's controllers read: the reports on the
// pods' RAM volumes here, the read-ahead state and conditions in package readaheadstatus. The
// probe's figures of every node would otherwise sit in the manager's memory for nothing.
func trimProfile(obj any) (any, error) {
	p, ok := obj.(*v1alpha1.NodeIOProfile)
	if !ok {
		return obj, nil
	}
	return &v1alpha1.NodeIOProfile{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion, Generation: p.Generation},
		Status: v1alpha1.NodeIOProfileStatus{
			Conditions: p.Status.Conditions, ReadAhead: p.Status.ReadAhead, ScratchVolumes: p.Status.ScratchVolumes,
		},
	}, nil
}

// observe reads what the node agents report about the RAM volumes of sv's pods into rep. A failed
// read leaves the usage part of the status as it was.
func (r *ScratchVolumeReconciler) observe(ctx context.Context, sv *v1alpha1.ScratchVolume, rep *report) error {
	var profiles v1alpha1.NodeIOProfileList
	if err := r.List(ctx, &profiles, client.MatchingFields{indexObservedScratchVolumes: observedKey(sv.Namespace, sv.Name)}); err != nil {
		return fmt.Errorf("failed to list the NodeIOProfiles reporting on ScratchVolume %s/%s: %w", sv.Namespace, sv.Name, err)
	}
	rep.observed = []v1alpha1.ScratchVolumeUsage{}
	for _, p := range profiles.Items {
		for _, u := range p.Status.ScratchVolumes {
			if u.Namespace == sv.Namespace && u.ScratchVolume == sv.Name {
				rep.observed = append(rep.observed, u)
			}
		}
	}
	slices.SortFunc(rep.observed, func(a, b v1alpha1.ScratchVolumeUsage) int { return cmp.Compare(a.Pod, b.Pod) })
	return nil
}

// capacity writes the usage, the recommendation and the Capacity condition into st, from the
// observations of the pods of st's targets; a pod of a StatefulSet no longer selected does not
// count. Without observations read (rep.observed nil) it keeps what the last status said.
func (rep *report) capacity(st *v1alpha1.ScratchVolumeStatus) {
	last := rep.sv.Status
	if rep.observed == nil {
		st.Usage, st.RecommendedSize, st.FullPods = last.Usage, last.RecommendedSize, last.FullPods
		for i := range st.Targets {
			if j := slices.IndexFunc(last.Targets, func(t v1alpha1.ScratchTargetStatus) bool { return t.Name == st.Targets[i].Name }); j >= 0 {
				st.Targets[i].Usage = last.Targets[j].Usage
			}
		}
		return
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
	}
	size := rep.sv.Spec.Size
	st.Usage = capacity.Summarize(obs)
	st.RecommendedSize = capacity.Recommend(obs, size)
	st.FullPods, rep.episodes = capacity.NewEpisodes(last.FullPods, obs)
	cond := capacity.Condition(obs, size, st.RecommendedSize)
	if len(obs) > 0 {
		cond.Message += rep.limitsFor(st.RecommendedSize)
	}
	cond.ObservedGeneration = rep.sv.Generation
	meta.SetStatusCondition(&st.Conditions, cond)
}

// limitsFor says what growing the volume to rec asks of the containers' memory limits: under
// accounting Validate, whether each limit holds the larger volume; "" when rec is no larger.
func (rep *report) limitsFor(rec *resource.Quantity) string {
	if rec == nil || rec.Cmp(rep.sv.Spec.Size) <= 0 || len(rep.containers) == 0 {
		return ""
	}
	switch rep.sv.Spec.Memory.Accounting {
	case v1alpha1.MemoryReserve:
		return "; accounting Reserve adds it to the containers' memory requests and limits"
	case v1alpha1.MemoryIgnore:
		return "; accounting Ignore: check the containers' memory limits yourself"
	}
	resized := rep.sv.DeepCopy()
	resized.Spec.Size = rec.DeepCopy()
	var short []string
	for _, target := range slices.Sorted(maps.Keys(rep.containers)) {
		c := rep.containers[target]
		limit, ok := c.Resources.Limits[corev1.ResourceMemory]
		need, err := inject.MemoryNeed(resized, c)
		if !ok || err != nil || limit.Cmp(need) >= 0 {
			continue
		}
		short = append(short, fmt.Sprintf("%s of %s (%s, needs %s)", c.Name, target, capacity.Bytes(limit.Value()), capacity.Bytes(need.Value())))
	}
	if len(short) == 0 {
		return "; the containers' memory limits hold it"
	}
	return "; with accounting Validate it needs larger memory limits for container " + strings.Join(short, ", ")
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

// announceFull records one Warning Event per pod whose volume filled up since the last status,
// saying what to do.
func (r *ScratchVolumeReconciler) announceFull(sv *v1alpha1.ScratchVolume, episodes []capacity.Episode, rec string) {
	for _, e := range episodes {
		times := "was found full"
		if e.New > 1 {
			times = fmt.Sprintf("was found full %d times", e.New)
		}
		advice := "raise spec.size together with the container's memory"
		if rec != "" {
			advice = fmt.Sprintf("raise spec.size (status.recommendedSize says %s) together with the container's memory", rec)
		}
		r.Recorder.Eventf(sv, nil, corev1.EventTypeWarning, EventScratchVolumeFull, actionCheck,
			"the %s RAM volume of pod %s %s (%d time(s) since %s): writes of temporary data there fail with \"No space left on device\"; %s, or find the query that spills this much",
			capacity.Bytes(e.SizeBytes), e.Pod, times, e.Total, e.SampledSince.UTC().Format("2006-01-02T15:04:05Z"), advice)
	}
}

// recommended writes q for a message; "" when there is none.
func recommended(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return capacity.Bytes(q.Value())
}
