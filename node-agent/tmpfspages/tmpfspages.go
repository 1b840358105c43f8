// Package tmpfspages sets the page size a tmpfs keeps its files in: the huge= option of a mounted
// tmpfs, changed in place through the kernel's mount API (fspick(2) and fsconfig(2)).
//
// The kubelet mounts a memory emptyDir without a huge= option, so every page of a temporary file
// is a 4 KiB page, allocated, charged and freed one by one, where ext4 and XFS move the same bytes
// in large folios. huge=within_size lets the tmpfs use large folios for the part of a file its
// size already covers, so a file never holds more memory than a 4 KiB-page tmpfs would give it.
// A reconfiguration changes the superblock: every view of the mount, the container's bind mount
// included, takes the new option at once for the pages allocated from then on.
//
// Only a tmpfs mounted exactly at the given directory is ever changed: the directory is opened
// without following symbolic links, its mount is identified by the mount ID statx(2) gives for
// the open file, and the mount table must show that mount as a tmpfs whose mount point is the
// directory. fspick(2) is then called on the open file, not on the path, so nothing mounted or
// renamed in between can be picked instead.
package tmpfspages

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
)

// Values of the tmpfs huge= option (Documentation/admin-guide/mm/transhuge.rst).
const (
	// Never is a tmpfs of small pages only: what a mount without huge= gets, unless the kernel's
	// command line sets another default.
	Never = "never"
	// WithinSize allocates a large folio only where the file's size covers it whole.
	WithinSize = "within_size"
)

// Flags of linux/mount.h that x/sys does not name.
const (
	fspickCloexec   = 0x1 // FSPICK_CLOEXEC
	fspickEmptyPath = 0x8 // FSPICK_EMPTY_PATH
	fsopenCloexec   = 0x1 // FSOPEN_CLOEXEC
	fsmountCloexec  = 0x1 // FSMOUNT_CLOEXEC
)

// The ways a change can fail that a caller reports differently.
var (
	// ErrUnsupported: this kernel cannot give a tmpfs large pages (no transparent huge pages, or
	// no mount API).
	ErrUnsupported = errors.New("not supported by this kernel")
	// ErrRefused: the kernel refused the option.
	ErrRefused = errors.New("refused by the kernel")
	// ErrPermission: the agent lacks CAP_SYS_ADMIN.
	ErrPermission = errors.New("needs CAP_SYS_ADMIN")
	// ErrNotTmpfsMount: the directory is not the mount point of a tmpfs (not mounted yet, or
	// something else is mounted there).
	ErrNotTmpfsMount = errors.New("not the mount point of a tmpfs")
)

// Paths are where the kernel's facts are read; the zero value means the usual places.
type Paths struct {
	// ShmemEnabled is transparent_hugepage/shmem_enabled (default under /sys/kernel/mm).
	ShmemEnabled string
	// Cmdline is the kernel's command line (default /proc/cmdline).
	Cmdline string
	// MountInfo is the mount table of the caller's mount namespace (default /proc/self/mountinfo).
	MountInfo string
}

func (p Paths) complete() Paths {
	if p.ShmemEnabled == "" {
		p.ShmemEnabled = "/sys/kernel/mm/transparent_hugepage/shmem_enabled"
	}
	if p.Cmdline == "" {
		p.Cmdline = "/proc/cmdline"
	}
	if p.MountInfo == "" {
		p.MountInfo = "/proc/self/mountinfo"
	}
	return p
}

// Kernel is what the node's kernel says about large pages on tmpfs.
type Kernel struct {
	// ShmemEnabled is the selected value of transparent_hugepage/shmem_enabled: always,
	// within_size, advise, never, deny or force; "" when the file is missing, that is when the
	// kernel has no transparent huge pages.
	ShmemEnabled string
	// TmpfsDefault is the huge= option of a tmpfs mounted without one: transparent_hugepage_tmpfs=
	// on the kernel's command line (Linux 6.14 and later), else never.
	TmpfsDefault string
}

// ReadKernel reads the node's facts. A missing shmem_enabled is a fact (no transparent huge
// pages), not an error.
func ReadKernel(p Paths) (Kernel, error) {
	p = p.complete()
	k := Kernel{TmpfsDefault: Never}
	raw, err := os.ReadFile(p.ShmemEnabled)
	switch {
	case err == nil:
		k.ShmemEnabled = selected(string(raw))
	case !errors.Is(err, os.ErrNotExist):
		return Kernel{}, fmt.Errorf("failed to read %s: %w", p.ShmemEnabled, err)
	}
	cmdline, err := os.ReadFile(p.Cmdline)
	if err != nil {
		return Kernel{}, fmt.Errorf("failed to read the kernel's command line: %w", err)
	}
	for _, w := range strings.Fields(string(cmdline)) {
		if v, ok := strings.CutPrefix(w, "transparent_hugepage_tmpfs="); ok && v != "" {
			k.TmpfsDefault = v
		}
	}
	return k, nil
}

// selected returns the bracketed word of a sysfs choice list ("always [never] deny" → never).
func selected(list string) string {
	for _, w := range strings.Fields(list) {
		if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") {
			return strings.Trim(w, "[]")
		}
	}
	return strings.TrimSpace(list)
}

// Supported reports whether the kernel can give a tmpfs large pages at all.
func (k Kernel) Supported() bool { return k.ShmemEnabled != "" }

// Override says why the kernel ignores every tmpfs mount's huge= option, or "": shmem_enabled
// deny turns large pages off on all of them, force turns them on.
func (k Kernel) Override() string {
	switch k.ShmemEnabled {
	case "deny":
		return "the node's transparent_hugepage/shmem_enabled is deny, which turns large pages off on every tmpfs whatever its huge= option"
	case "force":
		return "the node's transparent_hugepage/shmem_enabled is force, which gives every tmpfs large pages whatever its huge= option"
	}
	return ""
}

// Option returns the huge= value among a tmpfs's superblock options (rw,size=…,huge=within_size);
// the kernel shows none for never.
func Option(superOptions string) string {
	for _, o := range strings.Split(superOptions, ",") {
		if v, ok := strings.CutPrefix(o, "huge="); ok {
			return v
		}
	}
	return Never
}

// Change is what Set found and did.
type Change struct {
	// Before and After are the huge= option of the mount before and after.
	Before, After string
	// Reconfigured is true when Set changed the superblock, false when it already had the option.
	Reconfigured bool
}

// Set gives the tmpfs mounted at dir the huge= option value, unless it has it already, and reads
// the mount table again to check that it took. dir must be the mount point of a tmpfs in the
// caller's mount namespace.
func Set(p Paths, dir, value string) (Change, error) {
	p = p.complete()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Change{}, fmt.Errorf("failed to open %s: %w", dir, err)
	}
	defer func() { _ = unix.Close(fd) }()
	m, err := mountOf(p.MountInfo, fd, dir)
	if err != nil {
		return Change{}, err
	}
	c := Change{Before: Option(m.SuperOptions), After: Option(m.SuperOptions)}
	if c.Before == value {
		return c, nil
	}
	if err := reconfigure(fd, value); err != nil {
		return c, fmt.Errorf("failed to set huge=%s on the tmpfs at %s: %w", value, dir, err)
	}
	c.Reconfigured = true
	m, err = mountOf(p.MountInfo, fd, dir)
	if err != nil {
		return c, fmt.Errorf("failed to read the tmpfs at %s back after setting huge=%s: %w", dir, value, err)
	}
	if c.After = Option(m.SuperOptions); c.After != value {
		return c, fmt.Errorf("the kernel took huge=%s for the tmpfs at %s, but its mount table shows huge=%s", value, dir, c.After)
	}
	return c, nil
}

// Current returns the huge= option of the tmpfs mounted at dir.
func Current(p Paths, dir string) (string, error) {
	p = p.complete()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("failed to open %s: %w", dir, err)
	}
	defer func() { _ = unix.Close(fd) }()
	m, err := mountOf(p.MountInfo, fd, dir)
	if err != nil {
		return "", err
	}
	return Option(m.SuperOptions), nil
}

// mountOf returns the mount table's entry for the mount the open directory fd is on, which must
// be a tmpfs mounted at dir.
func mountOf(table string, fd int, dir string) (mountinfo.Entry, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return mountinfo.Entry{}, fmt.Errorf("failed to statx %s: %w", dir, err)
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return mountinfo.Entry{}, fmt.Errorf("the kernel gave no mount ID for %s: %w", dir, ErrUnsupported)
	}
	entries, err := mountinfo.Read(table)
	if err != nil {
		return mountinfo.Entry{}, err
	}
	for _, e := range entries {
		if e.ID != stx.Mnt_id {
			continue
		}
		if e.FSType != "tmpfs" || filepath.Clean(e.MountPoint) != filepath.Clean(dir) {
			return mountinfo.Entry{}, fmt.Errorf("%s is on a %s mounted at %s: %w", dir, e.FSType, e.MountPoint, ErrNotTmpfsMount)
		}
		return e, nil
	}
	return mountinfo.Entry{}, fmt.Errorf("the mount of %s (ID %d) is not in %s: %w", dir, stx.Mnt_id, table, ErrNotTmpfsMount)
}

// reconfigure sets huge=value on the superblock of the mount whose root fd is: fspick(2) takes
// the mount the open file is on, and refuses (EINVAL) a file that is not that mount's root.
func reconfigure(fd int, value string) error {
	fc, err := unix.Fspick(fd, "", fspickCloexec|fspickEmptyPath)
	if err != nil {
		return classify("fspick", err, -1)
	}
	defer func() { _ = unix.Close(fc) }()
	if err := unix.FsconfigSetString(fc, "huge", value); err != nil {
		return classify("huge="+value, err, fc)
	}
	if err := unix.FsconfigReconfigure(fc); err != nil {
		return classify("reconfigure", err, fc)
	}
	return nil
}

// classify maps an errno of the mount API to the errors callers tell apart, with the messages
// the kernel logged in the filesystem context fc (-1 for none).
func classify(step string, err error, fc int) error {
	msg := kernelLog(fc)
	if msg != "" {
		msg = " (" + msg + ")"
	}
	switch {
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%s: %w%s: %w", step, err, msg, ErrPermission)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%s: %w (no fspick/fsconfig before Linux 5.2): %w", step, err, ErrUnsupported)
	case errors.Is(err, unix.EINVAL) && step != "fspick":
		return fmt.Errorf("%s: %w%s: %w", step, err, msg, ErrRefused)
	}
	return fmt.Errorf("%s: %w%s", step, err, msg)
}

// kernelLog reads what the kernel logged in a filesystem context: lines such as
// "e tmpfs: Bad value for 'huge'", joined, without their level letters.
func kernelLog(fc int) string {
	if fc < 0 {
		return ""
	}
	var lines []string
	buf := make([]byte, 1024)
	for range 8 {
		n, err := unix.Read(fc, buf)
		if err != nil || n <= 0 {
			break
		}
		line := string(bytes.TrimSpace(buf[:n]))
		if len(line) > 2 && line[1] == ' ' {
			line = line[2:]
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "; ")
}

// Detached is a tmpfs of the caller's own that no path leads to: created with fsopen(2) and
// fsmount(2), reached through its file descriptor, gone when it is closed. Its pages are charged
// to the caller's memory cgroup.
type Detached struct {
	// Fd is the detached mount's root; open files under it with openat(2).
	Fd int
}

// NewDetached mounts a detached tmpfs of sizeBytes with huge=value ("" for the kernel's default).
func NewDetached(sizeBytes int64, value string) (*Detached, error) {
	fc, err := unix.Fsopen("tmpfs", fsopenCloexec)
	if err != nil {
		return nil, classify("fsopen tmpfs", err, -1)
	}
	defer func() { _ = unix.Close(fc) }()
	if err := unix.FsconfigSetString(fc, "size", strconv.FormatInt(sizeBytes, 10)); err != nil {
		return nil, classify("size", err, fc)
	}
	if value != "" {
		if err := unix.FsconfigSetString(fc, "huge", value); err != nil {
			return nil, classify("huge="+value, err, fc)
		}
	}
	if err := unix.FsconfigCreate(fc); err != nil {
		return nil, classify("create", err, fc)
	}
	mfd, err := unix.Fsmount(fc, fsmountCloexec, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, classify("fsmount", err, fc)
	}
	return &Detached{Fd: mfd}, nil
}

// Close unmounts the detached tmpfs; its files go with the last descriptor open on them.
func (d *Detached) Close() error { return unix.Close(d.Fd) }
