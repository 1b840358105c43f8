package cloudvolume

import (
	"fmt"
	"time"
)

// MiB is a mebibyte, the unit cloud providers use for volume throughput.
const MiB int64 = 1 << 20

// Profile is the performance a volume is provisioned with. A zero limit means unlimited.
type Profile struct {
	// Name identifies the profile in logs and reports.
	Name string
	// BytesPerSecond caps reads and writes together, in bytes per second.
	BytesPerSecond int64
	// IOPS caps the read and write requests per second together.
	IOPS int64
	// Latency is added to every read and write, as the network round trip of a remote volume.
	Latency time.Duration
}

// GP3 is an AWS EBS gp3 volume at its baseline, which every size gets without paying for more:
// 3,000 IOPS and 125 MiB/s whatever the size, and no burst credits
// (https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html). AWS states no latency;
// about 1 ms per request is what gp3 volumes show in practice ("single-digit millisecond" is the
// published wording).
var GP3 = Profile{Name: "gp3", BytesPerSecond: 125 * MiB, IOPS: 3000, Latency: time.Millisecond}

// PDBalanced is a Google Cloud pd-balanced persistent disk at its baseline: 3,000 IOPS and 140 MiB/s,
// to which each provisioned GiB adds 6 IOPS and 0.28 MiB/s
// (https://cloud.google.com/compute/docs/disks/performance#performance_limits). Google states no
// latency figure for it; 1 ms is taken as for gp3.
var PDBalanced = Profile{Name: "pd-balanced", BytesPerSecond: 140 * MiB, IOPS: 3000, Latency: time.Millisecond}

// LocalNVMe is a local NVMe disk, whose limits are far above what this machine's page cache and a
// FUSE round trip allow: no limits at all, so that the device is as fast as the emulation gets.
var LocalNVMe = Profile{Name: "local-nvme"}

// Unlimited reports whether the profile imposes nothing.
func (p Profile) Unlimited() bool {
	return p.BytesPerSecond == 0 && p.IOPS == 0 && p.Latency == 0
}

// Validate rejects negative limits.
func (p Profile) Validate() error {
	if p.BytesPerSecond < 0 || p.IOPS < 0 || p.Latency < 0 {
		return fmt.Errorf("profile %q has a negative limit (bandwidth %d B/s, %d IOPS, latency %s): use 0 for unlimited",
			p.Name, p.BytesPerSecond, p.IOPS, p.Latency)
	}
	return nil
}

// String describes the profile in one line, for logs and reports.
func (p Profile) String() string {
	if p.Unlimited() {
		return p.Name + " (unlimited)"
	}
	return fmt.Sprintf("%s (%s, %s, %s per request)", p.Name, limitText(p.BytesPerSecond/MiB, "MiB/s"), limitText(p.IOPS, "IOPS"), p.Latency)
}

func limitText(n int64, unit string) string {
	if n == 0 {
		return "unlimited " + unit
	}
	return fmt.Sprintf("%d %s", n, unit)
}
