package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
)

// This file measures what a database server's temporary files do: a filesort's merge files, an
// on-disk temporary table. Each is an unlinked file (O_TMPFILE), written in blocks, read back with
// preads of the same size and closed, one after another. The workload runs on every target and, on
// a tmpfs target, once more on a tmpfs of the probe's own with huge=within_size: Kubernetes mounts
// a memory emptyDir with 4 KiB pages, which a ScratchVolume's tmpfs replaces by large ones.

const (
	tmpfileFlags = unix.O_TMPFILE | unix.O_RDWR | unix.O_CLOEXEC
	namedFlags   = unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC
	// namedTempFile is the name of a temporary file where O_TMPFILE is refused; it is unlinked as
	// soon as it is created, so one name serves every file.
	namedTempFile = "temp"
)

// tempDir is where one filesystem's temporary files are made: a directory of the target, or the
// root of the probe's own tmpfs.
type tempDir struct {
	fd int
	// path names the directory in messages.
	path string
	// mountOptions are reported with every result.
	mountOptions string
	// named is set where the filesystem refuses O_TMPFILE: each file is then created under a name
	// and unlinked at once, as servers make their temporary files where O_TMPFILE is missing.
	named bool
}

// tempFiles runs every temporary-file workload of o in d, in order, and returns the results it
// got, also when one fails.
func tempFiles(ctx context.Context, d *tempDir, o *Options, bufs *buffers) ([]TempFileResult, error) {
	unsupported, err := d.chooseOpen()
	if err != nil {
		return nil, err
	}
	if unsupported != "" {
		return unsupportedTempFiles(o, unsupported), nil
	}
	results := make([]TempFileResult, 0, len(o.TempFiles))
	for _, s := range o.TempFiles {
		r, err := d.loop(ctx, s, bufs, o)
		if err != nil {
			return results, fmt.Errorf("%d-byte files: %w", s.FileBytes, err)
		}
		results = append(results, *r)
	}
	return results, nil
}

// unsupportedTempFiles is one result per file size that says why none was measured.
func unsupportedTempFiles(o *Options, why string) []TempFileResult {
	results := make([]TempFileResult, 0, len(o.TempFiles))
	for _, s := range o.TempFiles {
		results = append(results, TempFileResult{FileSizeBytes: s.FileBytes, BlockSizeBytes: min(o.TempFileBlockBytes, s.FileBytes), Unsupported: why})
	}
	return results
}

// chooseOpen finds out, before anything is timed, how the filesystem makes a temporary file. It
// returns why it cannot make one at all, or the error of a filesystem that fails otherwise (full,
// read-only, not writable).
func (d *tempDir) chooseOpen() (unsupported string, err error) {
	fd, terr := unix.Openat(d.fd, ".", tmpfileFlags, 0o600)
	if terr == nil {
		closeFd(fd)
		return "", nil
	}
	if !tmpfileRefused(terr) {
		return "", ioFailure(d.path, terr, "failed to open a temporary file (O_TMPFILE) in %s: %w", d.path, terr)
	}
	d.named = true
	fd, err = unix.Openat(d.fd, namedTempFile, namedFlags, 0o600)
	if err != nil {
		return "", ioFailure(d.path, err, "failed to create a temporary file in %s: %w", d.path, err)
	}
	defer closeFd(fd)
	if uerr := unix.Unlinkat(d.fd, namedTempFile, 0); uerr != nil {
		return fmt.Sprintf("the filesystem refuses O_TMPFILE (%v) and the removal of an open file (%v)", terr, uerr), nil
	}
	return "", nil
}

// tmpfileRefused tells an open(O_TMPFILE) that the filesystem does not support (EOPNOTSUPP), or
// that a kernel before Linux 3.11 took for a directory open (EISDIR, EINVAL), from a real failure.
func tmpfileRefused(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL)
}

// loop runs one workload, timing the whole loop, and stops early at the workload's time cap.
func (d *tempDir) loop(ctx context.Context, s TempFileSize, bufs *buffers, o *Options) (*TempFileResult, error) {
	block := min(o.TempFileBlockBytes, s.FileBytes)
	start := time.Now()
	stop := stopper(ctx, start, o.TempFileMaxDuration)
	done := 0
	for done < s.Files {
		if err := stop(); errors.Is(err, errCapReached) {
			break
		} else if err != nil {
			return nil, err
		}
		// Shifting the block per file keeps files distinct for filesystems that deduplicate.
		off := int64(done*4096) % (int64(len(bufs.write)) - block + 1)
		if err := d.oneFile(s.FileBytes, bufs.write[off:off+block], bufs.read[:block]); err != nil {
			return nil, err
		}
		done++
	}
	elapsed := time.Since(start)
	return &TempFileResult{
		FileSizeBytes:       s.FileBytes,
		BlockSizeBytes:      block,
		Files:               int32(min(done, math.MaxInt32)),
		BytesPerSecond:      PerSecond(int64(done)*s.FileBytes, elapsed),
		ElapsedMicroseconds: elapsed.Microseconds(),
		MountOptions:        d.mountOptions,
	}, nil
}

// oneFile opens a temporary file, fills it with size bytes written a block at a time, reads it
// back with preads of the block's size and closes it, which frees it.
func (d *tempDir) oneFile(size int64, block, buf []byte) error {
	fd, err := d.open()
	if err != nil {
		return err
	}
	err = d.writeAndReadBack(fd, size, block, buf)
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = ioFailure(d.path, cerr, "failed to close a temporary file in %s: %w", d.path, cerr)
	}
	return err
}

func (d *tempDir) open() (int, error) {
	if !d.named {
		fd, err := unix.Openat(d.fd, ".", tmpfileFlags, 0o600)
		if err != nil {
			return -1, ioFailure(d.path, err, "failed to open a temporary file (O_TMPFILE) in %s: %w", d.path, err)
		}
		return fd, nil
	}
	fd, err := unix.Openat(d.fd, namedTempFile, namedFlags, 0o600)
	if err != nil {
		return -1, ioFailure(d.path, err, "failed to create a temporary file in %s: %w", d.path, err)
	}
	if err := unix.Unlinkat(d.fd, namedTempFile, 0); err != nil {
		closeFd(fd)
		return -1, ioFailure(d.path, err, "failed to unlink a temporary file in %s: %w", d.path, err)
	}
	return fd, nil
}

func (d *tempDir) writeAndReadBack(fd int, size int64, block, buf []byte) error {
	what := "a temporary file in " + d.path
	var written int64
	for written < size {
		n, err := writeAll(fd, block[:min(int64(len(block)), size-written)])
		written += n
		if err != nil {
			return writeError(what, written, size, err)
		}
	}
	for off := int64(0); off < size; {
		n, err := unix.Pread(fd, buf[:min(int64(len(buf)), size-off)], off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil && n == 0 {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return ioFailure(d.path, err, "failed to read back %s after %d of %d bytes: %w", what, off, size, err)
		}
		off += int64(n)
	}
	return nil
}

// targetTempFiles runs the workloads in a subdirectory of the target's working directory.
func targetTempFiles(ctx context.Context, dir string, p *plan, o *Options, bufs *buffers) ([]TempFileResult, error) {
	path := filepath.Join(dir, "tempfiles")
	if err := unix.Mkdir(path, 0o700); err != nil {
		return nil, ioFailure(path, err, "failed to create %s: %w", path, err)
	}
	defer func() { _ = unix.Rmdir(path) }()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, ioFailure(path, err, "failed to open %s: %w", path, err)
	}
	defer closeFd(fd)
	return tempFiles(ctx, &tempDir{fd: fd, path: path, mountOptions: p.prov.MountOptions}, o, bufs)
}

// largePageTempFiles runs the workloads on a detached tmpfs with huge=within_size, as large as the
// target's tmpfs (at least twice the largest file), unmounted when they are done. When the node
// cannot have it, every result says why.
func largePageTempFiles(ctx context.Context, p *plan, o *Options, bufs *buffers, h *host) ([]TempFileResult, error) {
	if why := largePagesUnavailable(h.pages, h.pagesErr); why != "" {
		return unsupportedTempFiles(o, why), nil
	}
	size := largePageTmpfsBytes(tmpfsBytes(p.Path), o.largestTempFile())
	mnt, err := tmpfspages.NewDetached(size, tmpfspages.WithinSize)
	if err != nil {
		return unsupportedTempFiles(o, largePagesMountRefusal(err)), nil
	}
	defer func() { _ = mnt.Close() }()
	d := &tempDir{fd: mnt.Fd, path: "the probe's own tmpfs (huge=" + tmpfspages.WithinSize + ")",
		mountOptions: detachedMountOptions(size)}
	return tempFiles(ctx, d, o, bufs)
}

// tmpfsBytes is the size of the filesystem under path, 0 when it has none (ramfs) or statfs fails.
func tmpfsBytes(path string) int64 {
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return 0
	}
	return int64(sfs.Blocks) * sfs.Bsize
}

// largePageTmpfsBytes sizes the probe's own tmpfs like the target's, so that both have the same
// limit, but never below twice the largest file; whole pages, as the kernel rounds it.
func largePageTmpfsBytes(targetBytes, largestFile int64) int64 {
	const page = 4096
	size := max(targetBytes, 2*largestFile)
	return (size + page - 1) / page * page
}

// detachedMountOptions are the options the probe's own tmpfs is mounted with, written as the
// mount table shows a tmpfs's, so that they read beside the target's.
func detachedMountOptions(sizeBytes int64) string {
	return fmt.Sprintf("size=%dk,huge=%s", sizeBytes/1024, tmpfspages.WithinSize)
}

// largePagesUnavailable says why the kernel's settings rule out a tmpfs with large pages, or "".
func largePagesUnavailable(k tmpfspages.Kernel, readErr error) string {
	switch {
	case readErr != nil:
		return fmt.Sprintf("the kernel's transparent huge page settings could not be read (%v), so no tmpfs with large pages was measured", readErr)
	case !k.Supported():
		return "the node's kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage/shmem_enabled): " +
			"no tmpfs can have large pages here, a ScratchVolume's included; a kernel built with CONFIG_TRANSPARENT_HUGEPAGE can"
	case k.ShmemEnabled == "deny":
		return k.Override() + ", so a ScratchVolume's tmpfs runs with 4 KiB pages too; " +
			"write never or within_size to it to let each tmpfs choose"
	}
	return ""
}

// largePagesMountRefusal words a failed mount of the probe's own tmpfs.
func largePagesMountRefusal(err error) string {
	switch {
	case errors.Is(err, tmpfspages.ErrPermission):
		return fmt.Sprintf("the probe may not mount a tmpfs of its own (%v): give the node agent's container the capability SYS_ADMIN "+
			"(docs/install.md), which large pages on the ScratchVolumes need too, or run node-agent probe as root", err)
	case errors.Is(err, tmpfspages.ErrUnsupported), errors.Is(err, tmpfspages.ErrRefused):
		return fmt.Sprintf("the node's kernel does not mount a tmpfs with huge=%s (%v), so a ScratchVolume's tmpfs keeps 4 KiB pages too",
			tmpfspages.WithinSize, err)
	}
	return fmt.Sprintf("failed to mount a tmpfs with huge=%s: %v", tmpfspages.WithinSize, err)
}
