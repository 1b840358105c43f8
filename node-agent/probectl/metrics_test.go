package probectl

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// gather collects the registry's families by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// find returns the series of family name whose labels include want, or nil.
func find(mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func gaugeValue(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	m := find(mfs, name, labels)
	if m == nil {
		t.Fatalf("no %s%v", name, labels)
	}
	return m.GetGauge().GetValue()
}

func TestMetricsPublishTheLastRun(t *testing.T) {
	c := newProbeCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	mfs := gather(t, reg)
	if find(mfs, "dbtune_node_probe_last_run_timestamp_seconds", nil) != nil {
		t.Error("a last-run timestamp before any run")
	}
	if m := find(mfs, "dbtune_node_probe_runs_total", map[string]string{"result": "success"}); m == nil || m.GetCounter().GetValue() != 0 {
		t.Errorf("runs_total{result=success} must start at 0, got %v", m)
	}

	full := run(tmpfsResult(), diskResult())
	c.observe(runOutcome{Result: full}, t1)
	c.observe(runOutcome{Result: full}, t1)
	c.observe(runOutcome{Err: errors.New("refusing to start the probe run: target /probe/disk does not exist")}, t1.Add(1))

	mfs = gather(t, reg)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dbtune_node_probe_write_bytes_per_second", map[string]string{"target": "disk", "device": "vda", "mode": "fdatasync"}, 3e8},
		{"dbtune_node_probe_write_bytes_per_second", map[string]string{"target": "disk", "device": "vda", "mode": "direct"}, 2e8},
		{"dbtune_node_probe_write_bytes_per_second", map[string]string{"target": "tmpfs", "device": "", "mode": "buffered"}, 3e9},
		{"dbtune_node_probe_read_bytes_per_second", map[string]string{"target": "disk", "device": "vda"}, 5e8},
		{"dbtune_node_probe_device_read_bytes_per_second", map[string]string{"target": "disk", "device": "vda"}, 4e8},
		{"dbtune_node_probe_file_churn_files_per_second", map[string]string{"target": "disk", "size": "5000", "op": "read_unlink"}, 30000},
		// tmpfs 3e9 B/s buffered against the disk's 1e9: the synced rates (2.9e9, 3e8) are not compared.
		{"dbtune_node_probe_tmpfs_to_disk_ratio", map[string]string{"workload": "buffered_write"}, 3},
		{"dbtune_node_probe_tmpfs_to_disk_ratio", map[string]string{"workload": "cold_read"}, 12},
		{"dbtune_node_probe_tmpfs_to_disk_ratio", map[string]string{"workload": "small_file_create"}, 10},
		{"dbtune_node_probe_temp_file_bytes_per_second", map[string]string{"target": "tmpfs", "device": "", "size": "4194304", "pages": "as_mounted"}, 1048576000},
		{"dbtune_node_probe_temp_file_bytes_per_second", map[string]string{"target": "tmpfs", "device": "", "size": "4194304", "pages": "large"}, 4194304000},
		{"dbtune_node_probe_temp_file_bytes_per_second", map[string]string{"target": "disk", "device": "vda", "size": "4194304", "pages": "as_mounted"}, 2097152000},
		{"dbtune_node_probe_tmpfs_to_disk_ratio", map[string]string{"workload": "temp_file"}, 0.5},
		{"dbtune_node_probe_tmpfs_to_disk_ratio", map[string]string{"workload": "large_page_temp_file"}, 2},
		{"dbtune_node_probe_fdatasync_last_run_seconds", map[string]string{"target": "disk", "device": "vda", "percentile": "50"}, 0.0009},
		{"dbtune_node_probe_fdatasync_last_run_seconds", map[string]string{"target": "disk", "device": "vda", "percentile": "99"}, 0.003},
		{"dbtune_node_probe_tmpfs_speedup_ratio", map[string]string{"workload": "cold_read"}, 12},
		{"dbtune_node_probe_tmpfs_speedup_ratio", map[string]string{"workload": "small_files"}, 10},
		{"dbtune_node_probe_target_info", map[string]string{"target": "disk", "device": "vda", "fstype": "ext4", "rotational": "false"}, 1},
		{"dbtune_node_probe_last_run_duration_seconds", nil, 1.9},
	} {
		if got := gaugeValue(t, mfs, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %g, want %g", tc.name, tc.labels, got, tc.want)
		}
	}
	if find(mfs, "dbtune_node_probe_write_bytes_per_second", map[string]string{"target": "tmpfs", "mode": "direct"}) != nil {
		t.Error("an unsupported O_DIRECT write must publish no figure")
	}
	if find(mfs, "dbtune_node_probe_temp_file_bytes_per_second", map[string]string{"target": "disk", "pages": "large"}) != nil {
		t.Error("a disk target has no large-page temporary files")
	}
	assertNoRatioAgainstNoOp(t, mfs)
	if got, want := gaugeValue(t, mfs, "dbtune_node_probe_last_run_timestamp_seconds", nil), unixSeconds(t1.Add(1)); got != want {
		t.Errorf("last run = %f, want the failed run's %f", got, want)
	}
	if got, want := gaugeValue(t, mfs, "dbtune_node_probe_last_success_timestamp_seconds", nil), unixSeconds(t1); got != want {
		t.Errorf("last success = %f, want %f", got, want)
	}
	runs := map[string]float64{}
	for _, m := range mfs["dbtune_node_probe_runs_total"].GetMetric() {
		runs[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	if diff := cmp.Diff(map[string]float64{"success": 2, "partial": 0, "failed": 1}, runs); diff != "" {
		t.Errorf("runs_total (-want +got):\n%s", diff)
	}
}

// assertNoRatioAgainstNoOp fails on any ratio series that divides by tmpfs's no-op fdatasync: the
// former speedup's fdatasync and sequential_write (the synced write), or any such workload.
func assertNoRatioAgainstNoOp(t *testing.T, mfs map[string]*dto.MetricFamily) {
	t.Helper()
	for name, mf := range mfs {
		if !strings.HasSuffix(name, "_ratio") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); strings.Contains(v, "sync") || v == "sequential_write" {
					t.Errorf("%s{%s=%q}: a ratio against tmpfs's no-op fdatasync", name, l.GetName(), v)
				}
			}
		}
	}
}

// An agent that may not mount a tmpfs of its own publishes no large-page rate and no ratio for
// it; the tmpfs as mounted keeps both.
func TestMetricsWithoutLargePages(t *testing.T) {
	tmpfs := tmpfsResult()
	tmpfs.LargePageTempFiles = []probe.TempFileResult{{FileSizeBytes: 4 << 20, Unsupported: "the probe may not mount a tmpfs of its own"}}
	c := newProbeCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	c.observe(runOutcome{Result: run(tmpfs, diskResult())}, t1)
	mfs := gather(t, reg)
	if m := find(mfs, "dbtune_node_probe_temp_file_bytes_per_second", map[string]string{"pages": "large"}); m != nil {
		t.Errorf("an unsupported variant published %v", m)
	}
	if m := find(mfs, "dbtune_node_probe_tmpfs_to_disk_ratio", map[string]string{"workload": "large_page_temp_file"}); m != nil {
		t.Errorf("an unsupported variant has a ratio: %v", m)
	}
	if got := gaugeValue(t, mfs, "dbtune_node_probe_tmpfs_to_disk_ratio", map[string]string{"workload": "temp_file"}); got != 0.5 {
		t.Errorf("temp_file ratio = %g, want 0.5", got)
	}
}

// TestMetricsPassLint: the families follow Prometheus' naming rules (promlint, as promtool check
// metrics applies them), the new percentile gauge included.
func TestMetricsPassLint(t *testing.T) {
	c := newProbeCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	c.observe(runOutcome{Result: run(tmpfsResult(), diskResult())}, t1)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestFsyncHistogramAccumulates: the buckets are counters over the runs, on etcd's boundaries.
func TestFsyncHistogramAccumulates(t *testing.T) {
	c := newProbeCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	full := run(tmpfsResult(), diskResult())
	c.observe(runOutcome{Result: full}, t1)
	c.observe(runOutcome{Result: full}, t1)

	m := find(gather(t, reg), "dbtune_node_probe_fdatasync_duration_seconds", map[string]string{"target": "disk", "device": "vda"})
	if m == nil {
		t.Fatal("no fdatasync histogram for the disk")
	}
	h := m.GetHistogram()
	if h.GetSampleCount() != 100 || !math.IsNaN(h.GetSampleSum()) {
		t.Errorf("count %d sum %g, want 100 and NaN", h.GetSampleCount(), h.GetSampleSum())
	}
	got := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		got[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	if len(got) != 14 || got[0.001] != 60 || got[0.002] != 90 || got[8.192] != 0 {
		t.Errorf("buckets = %v, want etcd's 14 bounds with 60 at 1ms and 90 at 2ms", got)
	}
}
