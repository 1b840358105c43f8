// Package cloudvolume makes a block device that behaves like a cloud provider's network volume, for
// tests and benchmarks that need one on a machine that has only a local disk.
//
// A Volume is a loop device over a single file served by a FUSE file system in the calling process.
// Every request the loop device sends to that file waits for a bandwidth token bucket, an IOPS token
// bucket and a fixed latency, as a volume with provisioned throughput and IOPS would (see Profile and
// its presets). The device carries an ext4 file system, mounted where the caller asks.
//
// Opening a volume changes the machine: a backing file, a FUSE mount, a loop device and an ext4 mount.
// Each change is recorded in a state file under StateDir before it is made, so that Close, a failed
// Open, and the next Open after the process was killed all undo exactly what was made.
//
// Everything needs root: FUSE without fusermount, loop devices and mounts.
package cloudvolume
