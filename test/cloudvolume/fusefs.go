package cloudvolume

import (
	"context"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fuseName names the FUSE file system: its mounts have the type fuse.<fuseName>.
const fuseName = "cloudvolume"

// diskName is the one file of the FUSE file system: the loop device's backing file.
const diskName = "disk"

// maxRequestBytes is the largest read or write the kernel sends the FUSE server (its max_write and
// max_read). It stays below 1 MiB, which with its header would not fit the pipe go-fuse splices
// reads through.
const maxRequestBytes = 512 << 10

// diskDir is the root of the FUSE file system: a directory holding diskName.
type diskDir struct {
	fs.Inode
	disk *diskFile
}

var _ fs.NodeOnAdder = (*diskDir)(nil)

func (d *diskDir) OnAdd(ctx context.Context) {
	child := d.NewPersistentInode(ctx, d.disk, fs.StableAttr{Mode: syscall.S_IFREG})
	d.AddChild(diskName, child, false)
}

// diskFile is diskName: its data lives in a file on this machine, and every request to it goes
// through the throttle.
type diskFile struct {
	fs.Inode
	backing  string
	throttle *throttle
}

var (
	_ fs.NodeOpener    = (*diskFile)(nil)
	_ fs.NodeGetattrer = (*diskFile)(nil)
)

// Open opens the backing file without O_DIRECT whatever the loop device asked for: the backing
// file's own speed is the host's page cache, and the throttle alone decides the volume's speed.
func (d *diskFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	f, err := os.OpenFile(d.backing, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	return &throttledFile{file: fs.NewLoopbackFileFromOS(f), throttle: d.throttle}, 0, fs.OK
}

func (d *diskFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Stat(d.backing, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	return fs.OK
}

// throttledFile is an open diskName. go-fuse finds a handle's operations by interface assertion, so
// each one the loop device uses is forwarded explicitly: an operation missing here fails with
// ENOSYS, which the loop device reports as an I/O error.
type throttledFile struct {
	file     *fs.LoopbackFile
	throttle *throttle
}

var (
	_ fs.FileReader    = (*throttledFile)(nil)
	_ fs.FileWriter    = (*throttledFile)(nil)
	_ fs.FileFsyncer   = (*throttledFile)(nil)
	_ fs.FileFlusher   = (*throttledFile)(nil)
	_ fs.FileReleaser  = (*throttledFile)(nil)
	_ fs.FileGetattrer = (*throttledFile)(nil)
	_ fs.FileAllocater = (*throttledFile)(nil)
)

func (f *throttledFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if err := f.throttle.admit(ctx, len(dest)); err != nil {
		return nil, syscall.EINTR
	}
	f.throttle.countRead(len(dest))
	return f.file.Read(ctx, dest, off)
}

func (f *throttledFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if err := f.throttle.admit(ctx, len(data)); err != nil {
		return 0, syscall.EINTR
	}
	f.throttle.countWrite(len(data))
	return f.file.Write(ctx, data, off)
}

// Fsync answers ENOSYS, which the kernel takes as "this file system needs no fsync": it completes
// every later fsync of the file at once without asking the server (any other error would reach the
// loop device as an I/O error). Cloud volumes acknowledge a write only once it is durable and
// report no volatile write cache (EBS and Persistent Disk alike), so the kernel sends them no cache
// flush at all; here the loop device still sends one, and it must cost nothing, not even a round
// trip to this server. The backing file is scratch space no one reads after a crash of the machine.
func (f *throttledFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return syscall.ENOSYS
}

func (f *throttledFile) Flush(ctx context.Context) syscall.Errno { return f.file.Flush(ctx) }

func (f *throttledFile) Release(ctx context.Context) syscall.Errno { return f.file.Release(ctx) }

func (f *throttledFile) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.file.Getattr(ctx, out)
}

func (f *throttledFile) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return f.file.Allocate(ctx, off, size, mode)
}

// mountDiskFS serves a FUSE file system at dir whose diskName is backing, throttled by t. There is
// no fusermount on the machines this runs on, so the server mounts by itself (as root).
func mountDiskFS(dir, backing string, t *throttle) (*fuse.Server, error) {
	root := &diskDir{disk: &diskFile{backing: backing, throttle: t}}
	return fs.Mount(dir, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			DirectMount:       true,
			DirectMountStrict: true,
			FsName:            "dbtune-cloudvolume",
			Name:              fuseName,
			MaxWrite:          maxRequestBytes,
			MaxBackground:     64,
			// The loop device submits its direct I/O asynchronously; without this capability the
			// kernel turns each request into a synchronous one, and the volume serves one request
			// per latency period whatever the IOPS allow.
			ExtraCapabilities: fuse.CAP_ASYNC_DIO,
		},
	})
}
