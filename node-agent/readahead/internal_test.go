package readahead

import (
	"errors"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompareNatural(t *testing.T) {
	got := []string{"sdaa", "dm-10", "sda10", "nvme10n1", "sda", "dm-2", "sda2", "nvme1n1p2", "nvme1n1", "sdb", "loop0", "dm-02"}
	slices.SortFunc(got, compareNatural)
	want := []string{"dm-02", "dm-2", "dm-10", "loop0", "nvme1n1", "nvme1n1p2", "nvme10n1", "sda", "sda2", "sda10", "sdaa", "sdb"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("natural order mismatch (-want +got):\n%s", diff)
	}
}

func TestParseDevNum(t *testing.T) {
	if d, err := ParseDevNum(" 253:12\n"); err != nil || d != (DevNum{253, 12}) {
		t.Errorf("ParseDevNum(253:12) = %v, %v", d, err)
	}
	for _, bad := range []string{"", "8", "8:", ":0", "a:b", "8:0:1", "-1:0", "4294967296:0"} {
		if _, err := ParseDevNum(bad); err == nil {
			t.Errorf("ParseDevNum(%q) succeeded", bad)
		}
	}
}

func TestDeviceErrorClassification(t *testing.T) {
	id := DeviceID{Name: "sda", Dev: DevNum{8, 0}}
	tests := []struct {
		errno   syscall.Errno
		want    error
		message string
	}{
		{syscall.ENOENT, ErrDeviceNotFound, "failed to set read-ahead of sda (8:0) through /dev/sda: no such file or directory (the device does not exist or has gone away)"},
		{syscall.ENXIO, ErrDeviceNotFound, "failed to set read-ahead of sda (8:0) through /dev/sda: no such device or address (the device does not exist or has gone away)"},
		{syscall.ENODEV, ErrDeviceNotFound, "failed to set read-ahead of sda (8:0) through /dev/sda: no such device (the device does not exist or has gone away)"},
		{syscall.EACCES, ErrPermission, "failed to set read-ahead of sda (8:0) through /dev/sda: permission denied (setting read-ahead needs CAP_SYS_ADMIN for the ioctl, or root for sysfs)"},
		{syscall.EPERM, ErrPermission, "failed to set read-ahead of sda (8:0) through /dev/sda: operation not permitted (setting read-ahead needs CAP_SYS_ADMIN for the ioctl, or root for sysfs)"},
		{syscall.EROFS, ErrReadOnly, "failed to set read-ahead of sda (8:0) through /dev/sda: read-only file system (/sys is mounted read-only; the agent needs a privileged container)"},
		{syscall.EINVAL, nil, "failed to set read-ahead of sda (8:0) through /dev/sda: invalid argument"},
	}
	for _, tt := range tests {
		err := error(&DeviceError{Op: "set read-ahead", Device: id, Path: "/dev/sda", Err: tt.errno})
		if got := err.Error(); got != tt.message {
			t.Errorf("%v: message\n got %s\nwant %s", tt.errno, got, tt.message)
		}
		if !errors.Is(err, tt.errno) {
			t.Errorf("%v: the errno does not match", tt.errno)
		}
		for _, sentinel := range []error{ErrDeviceNotFound, ErrPermission, ErrReadOnly} {
			if got := errors.Is(err, sentinel); got != errors.Is(tt.want, sentinel) {
				t.Errorf("%v: errors.Is(%v) = %t", tt.errno, sentinel, got)
			}
		}
	}
}

// stubHost fails or answers as told, to see which host the fallback uses.
type stubHost struct {
	kib   int64
	err   error
	calls int
}

func (h *stubHost) ReadAhead(DeviceID) (int64, error) { h.calls++; return h.kib, h.err }

func (h *stubHost) SetReadAhead(DeviceID, int64) error { h.calls++; return h.err }

func TestFallbackHost(t *testing.T) {
	id := DeviceID{Name: "sda", Dev: DevNum{8, 0}}
	fail := func(errno syscall.Errno) error {
		return &DeviceError{Op: "set read-ahead", Device: id, Path: "x", Err: errno}
	}
	tests := []struct {
		name           string
		primary        error
		secondary      error
		wantSecondary  bool
		wantErrMatches []error
	}{
		{name: "ioctl works", wantSecondary: false},
		{name: "no device node", primary: fail(syscall.ENOENT), wantSecondary: true},
		{name: "no CAP_SYS_ADMIN", primary: fail(syscall.EACCES), wantSecondary: true},
		{name: "other ioctl errors are final", primary: fail(syscall.EINVAL), wantErrMatches: []error{syscall.EINVAL}},
		{
			name: "both refused", primary: fail(syscall.EACCES), secondary: fail(syscall.EROFS), wantSecondary: true,
			wantErrMatches: []error{ErrPermission, ErrReadOnly},
		},
		{
			name: "sysfs says the device is gone", primary: fail(syscall.ENOENT), secondary: fail(syscall.ENOENT), wantSecondary: true,
			wantErrMatches: []error{ErrDeviceNotFound},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			primary, secondary := &stubHost{kib: 1, err: tt.primary}, &stubHost{kib: 2, err: tt.secondary}
			h := fallbackHost{primary: primary, secondary: secondary}
			kib, err := h.ReadAhead(id)
			if tt.wantErrMatches == nil && (err != nil || (kib == 2) != tt.wantSecondary) {
				t.Errorf("ReadAhead = %d, %v; want the %s host's answer", kib, err, map[bool]string{true: "secondary", false: "primary"}[tt.wantSecondary])
			}
			err = h.SetReadAhead(id, 4)
			for _, target := range tt.wantErrMatches {
				if !errors.Is(err, target) {
					t.Errorf("SetReadAhead error %v does not match %v", err, target)
				}
			}
			if tt.wantErrMatches == nil && err != nil {
				t.Errorf("SetReadAhead = %v", err)
			}
			if got := secondary.calls > 0; got != tt.wantSecondary {
				t.Errorf("secondary used = %t, want %t", got, tt.wantSecondary)
			}
		})
	}
}
