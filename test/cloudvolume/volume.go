package cloudvolume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// DefaultBackingDir is where backing files go unless Options.BackingDir says otherwise: a directory
// on the machine's disk on ordinary Linux systems, where /tmp is often a tmpfs.
const DefaultBackingDir = "/var/tmp"

// Options describe a volume to open.
type Options struct {
	// Profile is the performance the volume is provisioned with.
	Profile Profile
	// SizeBytes is the device's size. The backing file is sparse: it takes only what is written.
	SizeBytes int64
	// MountPoint is an existing empty directory where the ext4 file system is mounted.
	MountPoint string
	// BackingDir is where the backing file is made (DefaultBackingDir when empty).
	BackingDir string
	// Logf, when set, hears what Open recovered from killed processes.
	Logf func(string, ...any)
}

func (o *Options) validate() error {
	if err := o.Profile.Validate(); err != nil {
		return err
	}
	if o.SizeBytes < 64*MiB {
		return fmt.Errorf("a cloud volume of %d bytes is too small for ext4 with a journal: ask for 64 MiB or more", o.SizeBytes)
	}
	if !filepath.IsAbs(o.MountPoint) {
		return fmt.Errorf("the mount point %q is not an absolute path: give the directory to mount the volume on", o.MountPoint)
	}
	st, err := os.Stat(o.MountPoint)
	if err != nil {
		return fmt.Errorf("the mount point %s cannot be used: %w; create it first", o.MountPoint, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("the mount point %s is not a directory: give a directory to mount the volume on", o.MountPoint)
	}
	return nil
}

// Volume is an open cloud-shaped volume: a throttled loop device with ext4 mounted on it.
type Volume struct {
	opts     Options
	rec      *record
	throttle *throttle
	server   *fuse.Server
	loop     *os.File
}

// Open recovers what killed processes left behind, then makes a volume and mounts its file system
// on opts.MountPoint. When Open fails it has undone whatever it made.
func Open(opts Options) (*Volume, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.BackingDir == "" {
		opts.BackingDir = DefaultBackingDir
	}
	if err := Recover(opts.Logf); err != nil {
		return nil, fmt.Errorf("failed to clean up after a killed process before opening a cloud volume: %w", err)
	}
	rec, err := newRecord()
	if err != nil {
		return nil, err
	}
	v := &Volume{opts: opts, rec: rec, throttle: newThrottle(opts.Profile)}
	if err := v.setUp(); err != nil {
		return nil, errors.Join(err, v.Close())
	}
	return v, nil
}

// setUp makes the volume step by step, recording each change before making it. The throttle starts
// only at the end: making the file system at the profile's speed would only slow tests down.
func (v *Volume) setUp() error {
	steps := []func() error{v.makeBackingFile, v.mountFUSE, v.attachLoop, v.makeFilesystem, v.mountFilesystem}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	v.throttle.enable()
	return nil
}

func (v *Volume) makeBackingFile() error {
	if err := v.rec.update(func(r *record) {
		r.WorkDir = filepath.Join(v.opts.BackingDir, "dbtune-cloudvolume-"+filepath.Base(r.Dir))
	}); err != nil {
		return err
	}
	if err := os.Mkdir(v.rec.WorkDir, 0o700); err != nil {
		return fmt.Errorf("failed to create the volume's directory in %s: %w", v.opts.BackingDir, err)
	}
	f, err := os.OpenFile(v.rec.backing(), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("failed to create the volume's backing file: %w", err)
	}
	err = f.Truncate(v.opts.SizeBytes)
	return errors.Join(err, f.Close())
}

func (v *Volume) mountFUSE() error {
	if err := os.Mkdir(v.rec.fuseDir(), 0o755); err != nil {
		return fmt.Errorf("failed to create the FUSE mount point: %w", err)
	}
	if err := v.rec.update(func(r *record) { r.FUSEMounted = true }); err != nil {
		return err
	}
	// The directory is the record's own: whatever is mounted there is the volume's.
	if _, err := mountSharedParent(v.rec.fuseDir()); err != nil {
		return err
	}
	server, err := mountDiskFS(v.rec.fuseDir(), v.rec.backing(), v.throttle)
	if err != nil {
		return fmt.Errorf("failed to mount the volume's FUSE file system at %s (needs root and /dev/fuse): %w", v.rec.fuseDir(), err)
	}
	v.server = server
	return nil
}

func (v *Volume) attachLoop() error {
	loop, err := attachLoop(v.rec.diskPath(), func(dev string) error {
		return v.rec.update(func(r *record) { r.LoopDevice = dev })
	})
	if err != nil {
		return err
	}
	v.loop = loop
	return nil
}

// makeFilesystem runs mkfs.ext4, for which there is no library. nodiscard: the FUSE file cannot
// punch holes on request. The inode tables and journal are written now rather than by a kernel
// thread after the mount, whose writes would show up in the first measurements.
func (v *Volume) makeFilesystem() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F",
		"-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0", v.rec.LoopDevice)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("failed to make an ext4 file system on %s (mkfs.ext4 is in e2fsprogs): %w: %s",
			v.rec.LoopDevice, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (v *Volume) mountFilesystem() error {
	if err := v.rec.update(func(r *record) { r.MountPoint = v.opts.MountPoint }); err != nil {
		return err
	}
	id, err := mountSharedParent(v.opts.MountPoint)
	if err != nil {
		return err
	}
	if err := v.rec.update(func(r *record) { r.ParentMountID = id }); err != nil {
		return err
	}
	if err := unix.Mount(v.rec.LoopDevice, v.opts.MountPoint, "ext4", 0, ""); err != nil {
		return fmt.Errorf("failed to mount ext4 from %s on %s: %w", v.rec.LoopDevice, v.opts.MountPoint, err)
	}
	return nil
}

// mountSharedParent binds dir onto itself as a shared mount, for the volume's mount to go on, and
// returns the bind's mount ID. A process that makes a mount namespace (a container runtime, a
// test's sandbox) gets a copy of every mount; an unmount reaches the copies only through the
// parent mount's peers and slaves, and on this machine's private mounts there are none, so the
// copy would hold the volume after Close: the loop device could not be freed nor the FUSE server
// stop. Below a shared parent, a namespace that makes its copies slaves (as the MariaDB harness's
// sandboxes do) loses the volume when Close unmounts it.
func mountSharedParent(dir string) (string, error) {
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("failed to bind %s onto itself: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		return "", fmt.Errorf("failed to make the mount at %s shared: %w", dir, err)
	}
	m, ok, err := mountAt(dir)
	if err != nil || !ok {
		return "", fmt.Errorf("failed to find the bind of %s in the mount table: %w", dir, err)
	}
	return m.ID, nil
}

// Device is the volume's block device, such as /dev/loop3.
func (v *Volume) Device() string { return v.rec.LoopDevice }

// MountPoint is where the volume's ext4 file system is mounted.
func (v *Volume) MountPoint() string { return v.opts.MountPoint }

// Profile is the performance the volume is provisioned with.
func (v *Volume) Profile() Profile { return v.opts.Profile }

// DirectIO reports whether the loop device bypasses the page cache of its FUSE file, so that the
// volume's data is cached once, by the file system on it, as on a real block device.
func (v *Volume) DirectIO() bool { return loopDirectIO(v.rec.LoopDevice) }

// Stats counts what reached the device since Open returned.
func (v *Volume) Stats() Stats { return v.throttle.stats() }

// Close unmounts the file system, frees the loop device, stops the FUSE server and removes the
// backing file. It may be called again after a failure, and on a half-made volume.
func (v *Volume) Close() error {
	var errs []error
	if v.rec.MountPoint != "" {
		// Writing back what the file system still holds goes through the throttle like any write;
		// it need not wait for tokens nobody measures any more.
		v.throttle.enabled.Store(false)
		errs = append(errs, v.rec.unmountFilesystem())
	}
	if v.loop != nil {
		errs = append(errs, v.loop.Close())
		v.loop = nil
	}
	errs = append(errs, detachLoop(v.rec.LoopDevice, v.rec.diskPath()))
	if v.server != nil {
		if err := v.server.Unmount(); err != nil {
			errs = append(errs, fmt.Errorf("failed to unmount the FUSE file system at %s: %w", v.rec.fuseDir(), err))
		} else {
			v.server = nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("failed to close the cloud volume at %s (%s names what is left; the next Open retries): %w",
			v.opts.MountPoint, v.rec.Dir, err)
	}
	return v.rec.undo()
}
