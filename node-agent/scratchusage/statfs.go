package scratchusage

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Usage is what the filesystem of a volume reports about itself.
type Usage struct {
	SizeBytes uint64
	UsedBytes uint64
	// FreeBytes is what an unprivileged writer can still write (f_bavail), which on tmpfs is
	// SizeBytes - UsedBytes.
	FreeBytes uint64
}

// FS reads a volume's usage. HostFS is the real one; tests may stage figures.
type FS interface {
	Usage(dir string) (Usage, error)
}

// ErrNotTmpfs is returned for a volume directory that is not a tmpfs mount point as seen by the
// agent: the kubelet has not mounted it yet, or the host path is mounted without HostToContainer
// propagation and the agent sees the directory underneath. Its figures would be the node's disk.
var ErrNotTmpfs = errors.New("not a tmpfs")

// HostFS reads usage with one statfs(2) per call, which opens nothing in the volume.
var HostFS FS = statfsFS{}

type statfsFS struct{}

func (statfsFS) Usage(dir string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Usage{}, fmt.Errorf("failed to statfs %s: %w", dir, err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		return Usage{}, fmt.Errorf("%s has filesystem type %#x: %w", dir, st.Type, ErrNotTmpfs)
	}
	bsize := uint64(st.Bsize)
	return Usage{
		SizeBytes: st.Blocks * bsize,
		UsedBytes: (st.Blocks - st.Bfree) * bsize,
		FreeBytes: st.Bavail * bsize,
	}, nil
}
