// Package probectl is the probe side of the node agent's DaemonSet mode: it measures its node's
// storage with the probe package and publishes the figures in the node's NodeIOProfile and as
// Prometheus metrics. Its sibling readaheadctl is the read-ahead side; both write the NodeIOProfile
// through the nodeprofile package, each under a field manager of its own.
//
// Each node's agent runs its own controller-runtime manager without leader election, knows its
// node from the downward API, and caches only its own NodeIOProfile and Node (nodeprofile.CacheOptions). Setup
// adds three parts to that manager:
//
//   - a scheduler that asks for a run at start and then every Config.Period plus jitter;
//   - a ProfileReconciler that asks for a run when a user sets a new value of the
//     dbtune.io/probe-requested annotation on the profile
//     (`kubectl annotate nodeioprofile NODE dbtune.io/probe-requested=$(date +%s) --overwrite`),
//     and records the value it served in dbtune.io/probe-served;
//   - the Runner, where both requests end up: it queues at most one run and never runs two at
//     once, takes a probe slot, runs the probe within the options' time limit, and publishes.
//
// # Probe slots
//
// A shared storage backend must not be measured by every node at once, so a node probes only while
// it holds one of Config.MaxProbingNodes Leases (coordination.k8s.io/v1) named <prefix>-0 to
// <prefix>-(N-1) in Config.LeaseNamespace. A node takes a Lease that is free (no holder) or
// expired (unchanged for its leaseDurationSeconds, timed on the node's own clock), with a
// resourceVersion precondition so that only one node wins it; renews it every third of its
// duration while probing, and stops probing if it cannot; and clears the holder when done. While
// every slot is held it retries with capped, jittered backoff, and the Probed condition says so
// with reason WaitingForProbeSlot.
//
// # Status
//
// The agent server-side applies, under the dbtune-node-agent field manager, only its part of the
// status: targets, comparison, the deprecated speedup (coldRead and smallFiles only), kernel,
// transparentHugePages, lastRunTime, lastRunDurationMilliseconds and the Probed and Degraded conditions. The readAhead list and the ReadAheadApplied condition belong to the
// read-ahead side, which must apply them under a field manager of its own. A failed write is kept
// in memory and retried with backoff, so a run measured while the API server is away is written
// when it comes back; the agent keeps running meanwhile.
//
// # Metrics
//
// Collected from the last run's figures; a scrape never starts a probe. The device label holds the
// kernel name of the whole disk (vda, nvme0n1, dm-0), as node_exporter's node_disk_* series do,
// so the two join on it; it is empty for tmpfs.
//
//	dbtune_node_probe_write_bytes_per_second{target,device,mode="buffered|fdatasync|direct"}
//	dbtune_node_probe_read_bytes_per_second{target,device}              cold sequential read
//	dbtune_node_probe_device_read_bytes_per_second{target,device}       raw device read (hdparm -t)
//	dbtune_node_probe_file_churn_files_per_second{target,device,size,op="create|read_unlink"}
//	dbtune_node_probe_temp_file_bytes_per_second{target,device,size,pages="as_mounted|large"}
//	dbtune_node_probe_fdatasync_duration_seconds{target,device}         histogram, etcd's buckets
//	dbtune_node_probe_fdatasync_last_run_seconds{target,device,percentile="50|99"}
//	dbtune_node_probe_tmpfs_to_disk_ratio{workload="buffered_write|cold_read|small_file_create|temp_file|large_page_temp_file"}
//	dbtune_node_probe_tmpfs_speedup_ratio{workload="cold_read|small_files"}   deprecated
//	dbtune_node_probe_target_info{target,path,kind,device,fstype,scheduler,rotational}
//	dbtune_node_probe_last_run_timestamp_seconds
//	dbtune_node_probe_last_success_timestamp_seconds
//	dbtune_node_probe_last_run_duration_seconds
//	dbtune_node_probe_runs_total{result="success|partial|failed"}
//
// The fdatasync histogram has the boundaries of etcd_disk_wal_fsync_duration_seconds and adds
// every run's samples to its buckets, which are therefore counters, so etcd's alert expression
// works with a window that spans a run:
//
//	histogram_quantile(0.99, rate(dbtune_node_probe_fdatasync_duration_seconds_bucket[12h])) > 0.5
//
// Its _sum is NaN: the probe keeps bucket counts and percentiles, not the total of the latencies.
// fdatasync_last_run_seconds holds the last run's percentiles as the status reports them. Nothing
// divides a disk's fdatasync by a tmpfs one: on tmpfs fdatasync is a no-op, so such a ratio would
// be the disk's latency in microseconds under another name.
// The gauges hold the figures of the last run that measured something; a run that measured
// nothing leaves them, and dbtune_node_probe_last_success_timestamp_seconds tells how old they are.
package probectl
