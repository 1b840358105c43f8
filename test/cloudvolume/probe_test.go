package cloudvolume_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/test/cloudvolume"
)

// TestProbe runs the node agent's probe on a gp3-like volume, as the agent would on a node whose
// disk is one, and checks that what it reports follows from the profile.
func TestProbe(t *testing.T) {
	p := cloudvolume.GP3
	v := openVolume(t, p, 512*cloudvolume.MiB)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := probe.Run(ctx, []probe.Target{{Name: "gp3", Path: v.MountPoint(), Device: v.Device()}}, probeOptions())
	if err != nil {
		t.Fatal(err)
	}
	target := res.Targets[0]
	if target.Err != nil {
		t.Fatalf("the probe failed on the volume: %v", target.Err)
	}
	raw, _ := json.Marshal(target)
	t.Logf("Probe result: %s", raw)
	checkDirectWrite(t, p, target.DirectWrite)
	checkFdatasync(t, p, target.Fdatasync)
	checkDeviceRead(t, p, target.DeviceRead)
	if target.ColdRead != nil {
		checkUpper(t, "the probe's cold read (B/s)", float64(target.ColdRead.BytesPerSecond), float64(p.BytesPerSecond))
	}
}

// probeOptions shrinks a regular run to what the volume can do in a few seconds.
func probeOptions() probe.Options {
	o := probe.DefaultOptions()
	o.SeqWriteBytes, o.SeqWriteBlockBytes = 64*probe.MiB, 16*probe.MiB
	o.DirectWriteBytes, o.DirectWriteBlockBytes = 128*probe.MiB, probe.MiB
	o.DirectWriteMaxDuration = 2 * time.Second
	o.Churn = []probe.ChurnSize{{FileBytes: 5000, Files: 200}}
	o.FsyncSamples = 300
	o.FsyncMaxDuration = 2 * time.Second
	o.DeviceReadMaxBytes = 256 * probe.MiB
	o.DeviceReadDuration = 2 * time.Second
	return o
}

// checkDirectWrite: the probe writes one O_DIRECT block at a time, but the loop device passes a
// block on in pieces that travel together, so their round trips overlap with the wait for
// bandwidth: the write runs at the volume's bandwidth, like fio's.
func checkDirectWrite(t *testing.T, p cloudvolume.Profile, r *probe.ThroughputResult) {
	t.Helper()
	if r == nil || r.BytesPerSecond == 0 {
		t.Fatalf("the probe reported no O_DIRECT write: %+v", r)
	}
	checkRate(t, "the probe's O_DIRECT write (B/s)", float64(r.BytesPerSecond), float64(p.BytesPerSecond))
}

// checkFdatasync: the probe's file is preallocated, so each write and fdatasync costs the data
// write, ext4's journal write and its commit record: three round trips queued on nothing else.
// Between one and six round trips plus a millisecond of the machine's own time is consistent; a
// latency not applied (well under 1 ms) or applied per page (tens of ms) is not.
func checkFdatasync(t *testing.T, p cloudvolume.Profile, r *probe.FdatasyncResult) {
	t.Helper()
	if r == nil || r.Samples == 0 {
		t.Fatalf("the probe reported no fdatasync latency: %+v", r)
	}
	p50 := time.Duration(r.P50Microseconds) * time.Microsecond
	low, high := p.Latency, 6*p.Latency+time.Millisecond
	t.Logf("The probe's fdatasync p50 is %s (p99 %dµs) for a %s round trip (consistent: %s to %s)", p50, r.P99Microseconds, p.Latency, low, high)
	if p50 < low || p50 > high {
		t.Errorf("the probe's fdatasync p50 is %s, outside %s to %s for a volume with a %s round trip", p50, low, high, p.Latency)
	}
}

// checkDeviceRead: the raw device read goes through read-ahead, a few requests at a time, so it
// may stay below the bandwidth but must never exceed it.
func checkDeviceRead(t *testing.T, p cloudvolume.Profile, r *probe.ThroughputResult) {
	t.Helper()
	if r == nil || r.BytesPerSecond == 0 {
		t.Fatalf("the probe reported no raw device read: %+v", r)
	}
	t.Logf("The probe's raw device read is %d B/s, %.3f of the configured %d", r.BytesPerSecond,
		float64(r.BytesPerSecond)/float64(p.BytesPerSecond), p.BytesPerSecond)
	checkUpper(t, "the probe's raw device read (B/s)", float64(r.BytesPerSecond), float64(p.BytesPerSecond))
}
