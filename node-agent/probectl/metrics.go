package probectl

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Results of a run, the values of the runs_total result label.
const (
	resultSuccess = "success"
	resultPartial = "partial"
	resultFailed  = "failed"
)

var (
	descWrite = prometheus.NewDesc("dbtune_node_probe_write_bytes_per_second",
		"Sequential write throughput of the last run: buffered (plain dd), fdatasync (dd conv=fdatasync) or direct (dd oflag=direct).",
		[]string{"target", "device", "mode"}, nil)
	descRead = prometheus.NewDesc("dbtune_node_probe_read_bytes_per_second",
		"Cold sequential read throughput of the last run (tmpfs cannot evict its pages, so there it is a memory read).",
		[]string{"target", "device"}, nil)
	descDeviceRead = prometheus.NewDesc("dbtune_node_probe_device_read_bytes_per_second",
		"Buffered read throughput of the raw block device in the last run (hdparm -t).",
		[]string{"target", "device"}, nil)
	descChurn = prometheus.NewDesc("dbtune_node_probe_file_churn_files_per_second",
		"Small-file rate of the last run, per file size in bytes: create (create+write+close) or read_unlink (open+read+close+unlink).",
		[]string{"target", "device", "size", "op"}, nil)
	descTempFile = prometheus.NewDesc("dbtune_node_probe_temp_file_bytes_per_second",
		"Temporary-file rate of the last run, per file size in bytes: bytes written (each read back once) over the time of the loop. pages: as_mounted on the target as it is mounted, large on a tmpfs of the agent's own with huge=within_size (tmpfs targets only).",
		[]string{"target", "device", "size", "pages"}, nil)
	descFsync = prometheus.NewDesc("dbtune_node_probe_fdatasync_duration_seconds",
		"Latency of fdatasync after a small write, with etcd's wal_fsync buckets, summed over the runs since the agent started. The sum is not measured and is NaN.",
		[]string{"target", "device"}, nil)
	descFsyncLastRun = prometheus.NewDesc("dbtune_node_probe_fdatasync_last_run_seconds",
		"fdatasync latency after a small write in the last run, at the 50th and 99th percentile. On tmpfs fdatasync is a no-op: the disk's figure is the one that tells a cost.",
		[]string{"target", "device", "percentile"}, nil)
	descRatio = prometheus.NewDesc("dbtune_node_probe_tmpfs_to_disk_ratio",
		"The tmpfs target's figure divided by the disk target's in the last run: buffered_write (sequential write without fdatasync, as temporary files are written), cold_read, small_file_create, temp_file (the temporary-file rate, tmpfs as mounted), large_page_temp_file (the same on a tmpfs with huge=within_size). fdatasync has no ratio: on tmpfs it is a no-op.",
		[]string{"workload"}, nil)
	descSpeedup = prometheus.NewDesc("dbtune_node_probe_tmpfs_speedup_ratio",
		"Deprecated, removed in the next release: use dbtune_node_probe_tmpfs_to_disk_ratio. Still published for cold_read and small_files; sequential_write and fdatasync, which compared with tmpfs's no-op fdatasync, are gone.",
		[]string{"workload"}, nil)
	descInfo = prometheus.NewDesc("dbtune_node_probe_target_info",
		"What each target of the last run was on; always 1.",
		[]string{"target", "path", "kind", "device", "fstype", "scheduler", "rotational"}, nil)
	descLastRun = prometheus.NewDesc("dbtune_node_probe_last_run_timestamp_seconds",
		"When the last run finished, whatever its result.", nil, nil)
	descLastSuccess = prometheus.NewDesc("dbtune_node_probe_last_success_timestamp_seconds",
		"When the last run that measured every target finished.", nil, nil)
	descDuration = prometheus.NewDesc("dbtune_node_probe_last_run_duration_seconds",
		"How long the last run that got to probe took.", nil, nil)
	descRuns = prometheus.NewDesc("dbtune_node_probe_runs_total",
		"Probe runs by result: success (every target measured), partial (some figures) or failed (none).",
		[]string{"result"}, nil)
)

// fsyncBucketBounds are etcd's boundaries, in seconds, as the histogram publishes them.
var fsyncBucketBounds = prometheus.ExponentialBuckets(probe.FsyncBucketStartSeconds, probe.FsyncBucketFactor, probe.FsyncBucketCount)

// probeCollector publishes what the runs measured. It only ever reads what the last run left:
// a scrape never starts a probe.
type probeCollector struct {
	mu sync.Mutex
	// last holds the gauges of the last run that measured something, built when it finished.
	last []prometheus.Metric
	// fsync accumulates each target's fdatasync histogram over the runs, so that its buckets
	// are counters, as rate() and etcd's alert expressions expect.
	fsync        map[fsyncKey]*fsyncTotals
	runs         map[string]float64
	lastRun      time.Time
	lastSuccess  time.Time
	lastDuration time.Duration
	ran          bool
}

type fsyncKey struct{ target, device string }

type fsyncTotals struct {
	count   uint64
	buckets map[float64]uint64
}

func newProbeCollector() *probeCollector {
	return &probeCollector{
		fsync: map[fsyncKey]*fsyncTotals{},
		runs:  map[string]float64{resultSuccess: 0, resultPartial: 0, resultFailed: 0},
	}
}

// Describe sends every descriptor the collector can produce.
func (c *probeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWrite, descRead, descDeviceRead, descChurn, descTempFile, descFsync, descFsyncLastRun, descRatio,
		descSpeedup, descInfo, descLastRun, descLastSuccess, descDuration, descRuns} {
		ch <- d
	}
}

// Collect sends what the last runs measured.
func (c *probeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.last {
		ch <- m
	}
	for k, t := range c.fsync {
		ch <- prometheus.MustNewConstHistogram(descFsync, t.count, math.NaN(), t.buckets, k.target, k.device)
	}
	for result, n := range c.runs {
		ch <- prometheus.MustNewConstMetric(descRuns, prometheus.CounterValue, n, result)
	}
	if !c.ran {
		return
	}
	ch <- prometheus.MustNewConstMetric(descLastRun, prometheus.GaugeValue, unixSeconds(c.lastRun))
	if !c.lastSuccess.IsZero() {
		ch <- prometheus.MustNewConstMetric(descLastSuccess, prometheus.GaugeValue, unixSeconds(c.lastSuccess))
	}
	if c.lastDuration > 0 {
		ch <- prometheus.MustNewConstMetric(descDuration, prometheus.GaugeValue, c.lastDuration.Seconds())
	}
}

// observe takes in a finished run. As in the status, a run that measured nothing leaves the
// previous figures in place; the timestamps and the run counter tell what happened.
func (c *probeCollector) observe(o runOutcome, finished time.Time) {
	v := judge(o)
	result := resultFailed
	switch {
	case v.measuredAny() && len(v.problems) == 0:
		result = resultSuccess
	case v.measuredAny():
		result = resultPartial
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran = true
	c.runs[result]++
	c.lastRun = finished
	if result == resultSuccess {
		c.lastSuccess = finished
	}
	if o.Result == nil || !v.measuredAny() {
		return
	}
	c.lastDuration = time.Duration(o.Result.DurationMilliseconds) * time.Millisecond
	c.last = gauges(o.Result)
	for i := range o.Result.Targets {
		c.addFsync(&o.Result.Targets[i])
	}
}

func (c *probeCollector) addFsync(t *probe.TargetResult) {
	f := t.Fdatasync
	if f == nil || f.Samples == 0 {
		return
	}
	k := fsyncKey{t.Name, t.Provenance.Device}
	tot := c.fsync[k]
	if tot == nil {
		tot = &fsyncTotals{buckets: map[float64]uint64{}}
		for _, b := range fsyncBucketBounds {
			tot.buckets[b] = 0
		}
		c.fsync[k] = tot
	}
	tot.count += uint64(f.Samples)
	for _, b := range f.Buckets {
		tot.buckets[float64(b.UpperBoundMicroseconds)/1e6] += uint64(max(b.Count, 0))
	}
}

// gauges builds the per-target figures of a run. The device label is the kernel name (vda,
// nvme0n1, dm-0), the one node_exporter's node_disk_* series carry, so that the two join.
func gauges(res *probe.Result) []prometheus.Metric {
	var ms []prometheus.Metric
	add := func(d *prometheus.Desc, v float64, labels ...string) {
		ms = append(ms, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	for i := range res.Targets {
		t := &res.Targets[i]
		dev := t.Provenance.Device
		add(descInfo, 1, t.Name, t.Path, string(t.Kind), dev, t.Provenance.FilesystemType, t.Provenance.Scheduler, rotational(t.Provenance.Rotational))
		if w := t.SequentialWrite; w != nil {
			add(descWrite, float64(w.BufferedBytesPerSecond), t.Name, dev, "buffered")
			add(descWrite, float64(w.FdatasyncBytesPerSecond), t.Name, dev, "fdatasync")
		}
		if d := t.DirectWrite; d != nil && d.Unsupported == "" {
			add(descWrite, float64(d.BytesPerSecond), t.Name, dev, "direct")
		}
		if r := t.ColdRead; r != nil && r.Unsupported == "" {
			add(descRead, float64(r.BytesPerSecond), t.Name, dev)
		}
		if r := t.DeviceRead; r != nil && r.Unsupported == "" {
			add(descDeviceRead, float64(r.BytesPerSecond), t.Name, dev)
		}
		for _, ch := range t.FileChurn {
			size := strconv.FormatInt(ch.FileSizeBytes, 10)
			add(descChurn, float64(ch.CreateFilesPerSecond), t.Name, dev, size, "create")
			add(descChurn, float64(ch.ReadUnlinkFilesPerSecond), t.Name, dev, size, "read_unlink")
		}
		ms = append(ms, tempFileGauges(t, "as_mounted", t.TempFiles)...)
		ms = append(ms, tempFileGauges(t, "large", t.LargePageTempFiles)...)
		if f := t.Fdatasync; f != nil && f.Samples > 0 {
			add(descFsyncLastRun, float64(f.P50Microseconds)/1e6, t.Name, dev, "50")
			add(descFsyncLastRun, float64(f.P99Microseconds)/1e6, t.Name, dev, "99")
		}
	}
	if c := res.Comparison; c != nil {
		ms = append(ms, ratios(c)...)
	}
	return ms
}

// tempFileGauges publishes one filesystem's temporary-file rates; an unsupported variant has none.
func tempFileGauges(t *probe.TargetResult, pages string, results []probe.TempFileResult) []prometheus.Metric {
	var ms []prometheus.Metric
	for _, r := range results {
		if r.Unsupported == "" && r.Files > 0 {
			ms = append(ms, prometheus.MustNewConstMetric(descTempFile, prometheus.GaugeValue, float64(r.BytesPerSecond),
				t.Name, t.Provenance.Device, strconv.FormatInt(r.FileSizeBytes, 10), pages))
		}
	}
	return ms
}

// ratios publishes the tmpfs/disk comparison, and the figures of the deprecated speedup metric
// that are still published for one release.
func ratios(c *probe.Comparison) []prometheus.Metric {
	var ms []prometheus.Metric
	add := func(d *prometheus.Desc, ratio, workload string) {
		if f, err := strconv.ParseFloat(ratio, 64); err == nil {
			ms = append(ms, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, f, workload))
		}
	}
	add(descRatio, c.BufferedWriteRatio, "buffered_write")
	add(descRatio, c.ColdReadRatio, "cold_read")
	add(descRatio, c.SmallFileCreateRatio, "small_file_create")
	add(descRatio, c.TempFileRatio, "temp_file")
	add(descRatio, c.LargePageTempFileRatio, "large_page_temp_file")
	add(descSpeedup, c.ColdReadRatio, "cold_read")
	add(descSpeedup, c.SmallFileCreateRatio, "small_files")
	return ms
}

func rotational(r *bool) string {
	if r == nil {
		return ""
	}
	return strconv.FormatBool(*r)
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
