package capacity

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

var since = metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))

// pod is one observation of a pod's volume of sizeMi with a peak of peakMi (also its window peak).
func pod(name string, peakMi, sizeMi int64) v1alpha1.ScratchVolumeUsage {
	return v1alpha1.ScratchVolumeUsage{Namespace: "db", Pod: name, ScratchVolume: "tmp", SampledSince: since,
		SizeBytes: sizeMi * mi, PeakBytes: peakMi * mi, WindowPeakBytes: peakMi * mi}
}

func full(o v1alpha1.ScratchVolumeUsage, episodes int64) v1alpha1.ScratchVolumeUsage {
	o.FullEpisodes, o.PeakBytes, o.WindowPeakBytes = episodes, o.SizeBytes, o.SizeBytes
	return o
}

func TestRecommend(t *testing.T) {
	many := func(n int, peakMi func(i int) int64) []v1alpha1.ScratchVolumeUsage {
		var obs []v1alpha1.ScratchVolumeUsage
		for i := range n {
			obs = append(obs, pod("p", peakMi(i), 4096))
		}
		return obs
	}
	tests := []struct {
		name string
		obs  []v1alpha1.ScratchVolumeUsage
		size string
		want string // "" for no recommendation
	}{
		{"nothing observed", nil, "512Mi", ""},
		{"one pod: its peak plus a quarter, to 16Mi", []v1alpha1.ScratchVolumeUsage{pod("a", 100, 512)}, "512Mi", "128Mi"},
		{"the largest of a few pods", []v1alpha1.ScratchVolumeUsage{pod("a", 10, 512), pod("b", 300, 512), pod("c", 40, 512)}, "512Mi", "384Mi"},
		{"an idle volume: the admission minimum", []v1alpha1.ScratchVolumeUsage{pod("a", 0, 512)}, "512Mi", "16Mi"},
		{"a full volume: twice the size", []v1alpha1.ScratchVolumeUsage{full(pod("a", 0, 512), 1), pod("b", 10, 512)}, "512Mi", "1Gi"},
		{"full but a larger peak elsewhere", []v1alpha1.ScratchVolumeUsage{full(pod("a", 0, 512), 1), pod("b", 1000, 2048)}, "512Mi", "1280Mi"},
		{"full at the largest size: the maximum", []v1alpha1.ScratchVolumeUsage{full(pod("a", 0, 65536), 2)}, "64Gi", "64Gi"},
		{"gibibyte steps above 4Gi", []v1alpha1.ScratchVolumeUsage{pod("a", 4000, 8192)}, "8Gi", "5Gi"},
		// 200 pods peaking at 1..200 MiB: the 99th percentile is the 198th, so one runaway pod does
		// not size the fleet.
		{"the 99th percentile of a fleet", many(200, func(i int) int64 { return int64(i + 1) }), "4Gi", "256Mi"},
		{"a runaway pod in a fleet", many(200, func(i int) int64 { return map[bool]int64{true: 4000, false: 50}[i == 7] }), "4Gi", "64Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Recommend(tt.obs, resource.MustParse(tt.size))
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("Recommend = %s, want none", got)
			case tt.want != "" && (got == nil || got.Cmp(resource.MustParse(tt.want)) != 0):
				t.Errorf("Recommend = %v, want %s", got, tt.want)
			}
		})
	}
}

func TestCondition(t *testing.T) {
	size := resource.MustParse("512Mi")
	nearly := pod("b", 470, 512) // 92%
	nowFull := pod("c", 200, 512)
	nowFull.Full = true
	tests := []struct {
		name       string
		obs        []v1alpha1.ScratchVolumeUsage
		status     metav1.ConditionStatus
		reason     string
		inMessages []string
	}{
		{"nothing observed", nil, metav1.ConditionUnknown, v1alpha1.ReasonCapacityNotObserved, []string{"no node agent has reported"}},
		{"room to spare", []v1alpha1.ScratchVolumeUsage{pod("a", 100, 512), pod("b", 300, 512)}, metav1.ConditionTrue, v1alpha1.ReasonCapacitySufficient,
			[]string{"peak 300Mi of 512Mi (59%) over 2 pod(s) observed since 2026-12-01T08:00:00Z", "recommended size 384Mi", "would free 128Mi of memory per pod (256Mi over 2 pods)"}},
		{"near full", []v1alpha1.ScratchVolumeUsage{pod("a", 100, 512), nearly}, metav1.ConditionFalse, v1alpha1.ReasonCapacityNearFull,
			[]string{"pod b (92%) came within 10% of full", "recommended size 640Mi", "needs 128Mi more memory per pod"}},
		{"full once", []v1alpha1.ScratchVolumeUsage{full(pod("a", 0, 512), 2), nearly}, metav1.ConditionFalse, v1alpha1.ReasonCapacityFull,
			[]string{"the RAM volume of pod a was found full", "No space left on device", "1 of them found full 2 time(s)", "recommended size 1Gi (at least 2 times the size"}},
		{"full now, by the flag", []v1alpha1.ScratchVolumeUsage{nowFull}, metav1.ConditionFalse, v1alpha1.ReasonCapacityFull, []string{"pod c was found full"}},
		{"full long ago: the window peak has fallen, the pod's peak stays", []v1alpha1.ScratchVolumeUsage{func() v1alpha1.ScratchVolumeUsage {
			o := full(pod("a", 0, 512), 1)
			o.WindowPeakBytes = 10 * mi
			return o
		}()}, metav1.ConditionTrue, v1alpha1.ReasonCapacitySufficient, []string{"found full 1 time(s)", "recommended size 1Gi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Condition(tt.obs, size, Recommend(tt.obs, size))
			if c.Type != v1alpha1.ConditionCapacity || c.Status != tt.status || c.Reason != tt.reason {
				t.Errorf("condition %s=%s (%s), want %s (%s): %s", c.Type, c.Status, c.Reason, tt.status, tt.reason, c.Message)
			}
			for _, s := range tt.inMessages {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q lacks %q", c.Message, s)
				}
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	later := metav1.NewTime(since.Add(time.Hour))
	a, b := full(pod("a", 0, 256), 3), pod("b", 200, 512)
	a.LastFullTime, a.WindowPeakBytes = &later, 20*mi
	b.SampledSince = metav1.NewTime(since.Add(-time.Hour))
	want := &v1alpha1.ScratchUsage{Pods: 2, PeakBytes: 256 * mi, PeakPercent: 100, WindowPeakBytes: 200 * mi,
		FullPods: 1, FullEpisodes: 3, LastFullTime: &later, ObservedSince: &b.SampledSince}
	if diff := cmp.Diff(want, Summarize([]v1alpha1.ScratchVolumeUsage{a, b})); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
	if got := Summarize(nil); got != nil {
		t.Errorf("Summarize(nil) = %+v, want nil", got)
	}
}

func TestNewEpisodes(t *testing.T) {
	restarted := metav1.NewTime(since.Add(time.Hour))
	records := []v1alpha1.FullPod{
		{Pod: "a", SampledSince: since, Episodes: 2}, // seen twice, now three times
		{Pod: "b", SampledSince: since, Episodes: 1}, // unchanged
		{Pod: "c", SampledSince: since, Episodes: 5}, // its agent restarted: counts from zero again
		{Pod: "gone", SampledSince: since, Episodes: 1},
	}
	c := full(pod("c", 0, 64), 1)
	c.SampledSince = restarted
	obs := []v1alpha1.ScratchVolumeUsage{full(pod("a", 0, 64), 3), full(pod("b", 0, 64), 1), c, full(pod("d", 0, 64), 1), pod("e", 3, 64)}
	keep, news := NewEpisodes(records, obs)
	wantKeep := []v1alpha1.FullPod{
		{Pod: "a", SampledSince: since, Episodes: 3}, {Pod: "b", SampledSince: since, Episodes: 1},
		{Pod: "c", SampledSince: restarted, Episodes: 1}, {Pod: "d", SampledSince: since, Episodes: 1},
	}
	if diff := cmp.Diff(wantKeep, keep); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	wantNews := []Episode{
		{Pod: "a", New: 1, Total: 3, SampledSince: since, SizeBytes: 64 * mi},
		{Pod: "c", New: 1, Total: 1, SampledSince: restarted, SizeBytes: 64 * mi},
		{Pod: "d", New: 1, Total: 1, SampledSince: since, SizeBytes: 64 * mi},
	}
	if diff := cmp.Diff(wantNews, news); diff != "" {
		t.Errorf("episodes to announce (-want +got):\n%s", diff)
	}
	// Announcing is idempotent: the same observations against the kept records announce nothing.
	if _, again := NewEpisodes(keep, obs); len(again) != 0 {
		t.Errorf("announced %+v again", again)
	}
}
