package probe

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/api/quantity"
)

// plan is a target that passed the checks, with what Inspect found.
type plan struct {
	Target
	kind Kind
	prov Provenance
}

// preflight checks every target before anything is written and reports all problems at once, so
// that a user fixes a command line in one go.
func preflight(targets []Target, o *Options) ([]plan, error) {
	if len(targets) == 0 {
		return nil, errors.New("no target to probe")
	}
	plans := make([]plan, 0, len(targets))
	var errs []error
	for _, t := range targets {
		p, err := checkTarget(t, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		plans = append(plans, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	assignNames(plans)
	return plans, checkUniqueNames(plans)
}

func checkTarget(t Target, o *Options) (plan, error) {
	if err := checkDirectory(t.Path); err != nil {
		return plan{}, err
	}
	kind, prov, err := Inspect(t.Path, *o)
	if err != nil {
		return plan{}, err
	}
	if !o.SkipFreeSpaceCheck {
		if err := checkFreeSpace(t.Path, 2*o.PeakBytesPerTarget()); err != nil {
			return plan{}, err
		}
	}
	if t.Device != "" {
		if err := checkDevice(t.Device); err != nil {
			return plan{}, err
		}
	}
	return plan{Target: t, kind: kind, prov: prov}, nil
}

func checkDirectory(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &Error{Kind: ErrTargetNotFound, Path: path, Err: quiet(fmt.Sprintf("target %s does not exist", path), err)}
	case err != nil:
		return ioFailure(path, err, "failed to examine target %s: %w", path, err)
	case !fi.IsDir():
		return failure(ErrNotDirectory, path, "target %s is not a directory", path)
	}
	switch err := unix.Access(path, unix.W_OK|unix.X_OK); {
	case errors.Is(err, unix.EROFS):
		return &Error{Kind: ErrReadOnly, Path: path, Err: quiet(fmt.Sprintf("target %s is on a read-only filesystem", path), err)}
	case err != nil:
		return failure(ErrNotWritable, path, "target %s is not writable: %w", path, err)
	}
	return nil
}

// checkFreeSpace refuses a target without twice the room the run needs, so that a probe never
// pushes a node's database disk or tmpfs to full. Space reserved for root does not count.
func checkFreeSpace(path string, need int64) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return ioFailure(path, err, "failed to statfs %s: %w", path, err)
	}
	free := int64(sfs.Bavail) * sfs.Bsize
	if free < need {
		return failure(ErrNotEnoughSpace, path,
			"not enough free space in %s: the probe needs %s free (twice what it writes there at once), only %s is free",
			path, formatBytes(need), formatBytes(free))
	}
	return nil
}

func checkDevice(device string) error {
	fd, err := unix.Open(device, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return failure(ErrDeviceUnreadable, device, "cannot read device %s: %w", device, err)
	}
	defer closeFd(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return failure(ErrDeviceUnreadable, device, "failed to stat device %s: %w", device, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return failure(ErrDeviceUnreadable, device, "device %s is not a block device", device)
	}
	return nil
}

// assignNames names unnamed targets after their kind, numbering repeats ("disk", "disk-2").
func assignNames(plans []plan) {
	used := map[string]int{}
	for i := range plans {
		if plans[i].Name != "" {
			used[plans[i].Name]++
		}
	}
	for i := range plans {
		if plans[i].Name != "" {
			continue
		}
		base := defaultName(plans[i].kind)
		name := base
		for n := 2; used[name] > 0; n++ {
			name = base + "-" + strconv.Itoa(n)
		}
		used[name]++
		plans[i].Name = name
	}
}

func defaultName(k Kind) string {
	if k == KindTmpfs {
		return "tmpfs"
	}
	return "disk"
}

func checkUniqueNames(plans []plan) error {
	seen := map[string]bool{}
	for i := range plans {
		name := plans[i].Name
		if seen[name] {
			return fmt.Errorf("two targets are named %q; target names must be unique", name)
		}
		seen[name] = true
	}
	return nil
}

// formatBytes shows a byte count exactly and, from a mebibyte on, rounded as quantity.Approx writes
// it, as both are useful in an error.
func formatBytes(n int64) string {
	if n >= MiB {
		return fmt.Sprintf("%d bytes (%s)", n, quantity.Approx(n))
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
