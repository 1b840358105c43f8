package scratchusage

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the window label of dbtune_scratch_volume_peak_bytes besides the window's duration.
const windowPod = "pod"

var volumeLabels = []string{"namespace", "pod", "scratchvolume"}

var (
	descUsed = prometheus.NewDesc("dbtune_scratch_volume_used_bytes",
		"Bytes in use in the ScratchVolume's RAM volume of the pod, at the last sample.", volumeLabels, nil)
	descSize = prometheus.NewDesc("dbtune_scratch_volume_size_bytes",
		"Size of the ScratchVolume's RAM volume of the pod (the tmpfs size, which the kubelet sets from sizeLimit).", volumeLabels, nil)
	descPeak = prometheus.NewDesc("dbtune_scratch_volume_peak_bytes",
		`Most bytes in use seen in the RAM volume: window="pod" since the agent first sampled it (the pod's start, unless the agent restarted since), or over the sliding window the label names (for example "1h").`,
		append(volumeLabels[:len(volumeLabels):len(volumeLabels)], "window"), nil)
	descFull = prometheus.NewDesc("dbtune_scratch_volume_full_total",
		"Times the RAM volume was observed full (free space under the agent's threshold) after a sample that was not.", volumeLabels, nil)
)

// collector publishes the figures of the last sampling round. A scrape reads them; it never
// samples.
type collector struct {
	sampler *Sampler
	window  string
}

func newCollector(s *Sampler) *collector {
	return &collector{sampler: s, window: windowLabel(s.cfg.Window)}
}

// Describe sends every descriptor the collector can produce.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUsed, descSize, descPeak, descFull} {
		ch <- d
	}
}

// Collect sends each tracked volume's figures.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for v, s := range c.sampler.Snapshot() {
		labels := []string{v.Namespace, v.Pod, v.ScratchVolume}
		ch <- prometheus.MustNewConstMetric(descUsed, prometheus.GaugeValue, float64(s.UsedBytes), labels...)
		ch <- prometheus.MustNewConstMetric(descSize, prometheus.GaugeValue, float64(s.SizeBytes), labels...)
		ch <- prometheus.MustNewConstMetric(descPeak, prometheus.GaugeValue, float64(s.PeakBytes), append(labels, windowPod)...)
		ch <- prometheus.MustNewConstMetric(descPeak, prometheus.GaugeValue, float64(s.WindowPeakBytes), append(labels, c.window)...)
		ch <- prometheus.MustNewConstMetric(descFull, prometheus.CounterValue, float64(s.FullTotal), labels...)
	}
}

// windowLabel writes a window as PromQL would (1h, 30m, 1h30m), not as Go does (1h0m0s).
func windowLabel(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}
