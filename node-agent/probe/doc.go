// Package probe measures how a directory's storage behaves under the workloads that database temp
// files produce, the way administrators used to measure it by hand: a `dd bs=128M count=2` sequential
// write (buffered and with `conv=fdatasync`), a `dd bs=512k oflag=direct` write, a cold read of the
// written file, small-file create/read/unlink churn, etcd's 2300-byte write+fdatasync latency check,
// and an `hdparm -t` buffered read of a block device. One workload is a database server's own
// pattern rather than a tool's: temporary files (O_TMPFILE) written and read back in 64 KiB calls,
// which on a tmpfs target also runs on a tmpfs of the probe's own with large pages
// (huge=within_size), mounted detached for the run (see tempfiles.go).
//
// Everything runs in-process through system calls; nothing is shelled out. A run is bounded in bytes
// and time by [Options], refuses to start on a target without room for it, works inside one private
// directory per target and removes that directory whatever happens (cancellation, a full disk, an
// error). Targets are probed one after the other, never concurrently, so that they do not disturb
// each other's figures.
//
// The result types mirror the NodeIOProfile status of api/v1alpha1 field for field (same JSON names,
// units in the names) so that the agent can copy them across; TargetResult.Err, the typed form of a
// target's error, is the one field kept out of the JSON.
//
// Errors are typed where they arise: each matches a sentinel such as [ErrTargetNotFound],
// [ErrTargetFull] or [ErrTimeLimit] with errors.Is, and carries the errno of the failed system call,
// so that a caller never needs to parse a message (see errors.go).
package probe
