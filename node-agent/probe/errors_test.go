package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sentinels are every kind of failure the probe names.
var sentinels = []error{
	ErrTargetNotFound, ErrNotDirectory, ErrReadOnly, ErrNotWritable, ErrNotEnoughSpace, ErrTargetFull,
	ErrDeviceUnreadable, ErrTimeLimit, ErrInvalidOptions, ErrNotProbed,
}

// assertKinds checks that err matches every error of want and no other sentinel.
func assertKinds(t *testing.T, err error, want ...error) {
	t.Helper()
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("error %q does not match %v", err, w)
		}
	}
	for _, s := range sentinels {
		if errors.Is(err, s) && !errors.Is(errors.Join(want...), s) {
			t.Errorf("error %q matches %v too", err, s)
		}
	}
}

// assertPath checks that err holds an Error about path.
func assertPath(t *testing.T, err error, path string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Path != path {
		t.Errorf("error %q: Error %+v, want one about %s", err, e, path)
	}
}

// TestRefusalsAreTyped provokes the failures that need no privilege and checks their kinds.
func TestRefusalsAreTyped(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "missing")
	tests := []struct {
		name    string
		targets []Target
		options func(o *Options)
		kinds   []error
		path    string
	}{
		{name: "missing directory", targets: []Target{{Path: missing}}, kinds: []error{ErrTargetNotFound, fs.ErrNotExist}, path: missing},
		{name: "a file", targets: []Target{{Path: file}}, kinds: []error{ErrNotDirectory}, path: file},
		{name: "a missing device", targets: []Target{{Path: tmp, Device: "/dev/does-not-exist"}},
			kinds: []error{ErrDeviceUnreadable, fs.ErrNotExist, unix.ENOENT}, path: "/dev/does-not-exist"},
		{name: "a device that is a regular file", targets: []Target{{Path: tmp, Device: file}}, kinds: []error{ErrDeviceUnreadable}, path: file},
		{name: "every problem at once", targets: []Target{{Path: file}, {Path: missing}}, kinds: []error{ErrNotDirectory, ErrTargetNotFound}},
		{name: "not enough space", targets: []Target{{Path: tmp}}, kinds: []error{ErrNotEnoughSpace}, path: tmp,
			options: func(o *Options) { o.SkipFreeSpaceCheck, o.SeqWriteBytes, o.MaxTotalWriteBytes = false, 1<<50, 1<<52 }},
		{name: "invalid options", targets: []Target{{Path: tmp}}, kinds: []error{ErrInvalidOptions},
			options: func(o *Options) { o.DirectWriteBlockBytes, o.ChurnMaxDuration = 1000, 0 }},
		{name: "duplicate names", targets: []Target{{Name: "x", Path: tmp}, {Name: "x", Path: tmp}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := smallOptions()
			o.SkipFreeSpaceCheck = true
			if tt.options != nil {
				tt.options(&o)
			}
			res, err := Run(context.Background(), tt.targets, o)
			if err == nil {
				t.Fatalf("Run succeeded: %+v", res)
			}
			assertKinds(t, err, tt.kinds...)
			if tt.path != "" {
				assertPath(t, err, tt.path)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
				t.Errorf("a refused run left files: %v", entries)
			}
		})
	}
}

// TestEveryValidationErrorIsTyped: each error Validate joins matches ErrInvalidOptions, so that a
// caller listing them one by one classifies each.
func TestEveryValidationErrorIsTyped(t *testing.T) {
	o := DefaultOptions()
	o.SeqWriteBytes, o.MaxDuration, o.ChurnMaxDuration, o.Churn = 0, 0, 0, []ChurnSize{{}}
	var leaves []error
	var walk func(err error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok && strings.Contains(err.Error(), "\n") {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		leaves = append(leaves, err)
	}
	walk(o.Validate(1))
	if len(leaves) != 4 {
		t.Errorf("Validate found %d problems, want 4: %v", len(leaves), leaves)
	}
	for _, err := range leaves {
		assertKinds(t, err, ErrInvalidOptions)
	}
}

// TestStoppedRunsAreTyped: the run's own time limit and the caller's cancellation, before the
// first target, name their cause in the run's error and in the target's.
func TestStoppedRunsAreTyped(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
		kinds   []error
	}{
		{"time limit", context.Background(), time.Nanosecond, []error{ErrTimeLimit, context.DeadlineExceeded}},
		{"canceled", canceled, time.Minute, []error{context.Canceled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := smallOptions()
			o.SkipFreeSpaceCheck, o.MaxDuration = true, tt.timeout
			res, err := Run(tt.ctx, []Target{{Path: dir}}, o)
			assertKinds(t, err, tt.kinds...)
			if res == nil {
				t.Fatal("no result")
			}
			tr := res.Targets[0]
			assertKinds(t, tr.Err, append([]error{ErrNotProbed}, tt.kinds...)...)
			if tr.Err == nil || tr.Error != tr.Err.Error() || !strings.HasPrefix(tr.Error, "not probed: ") {
				t.Errorf("target error %q, typed %v", tr.Error, tr.Err)
			}
			assertKinds(t, res.Err(), append([]error{ErrNotProbed}, tt.kinds...)...)
			assertEmpty(t, dir)
		})
	}
}

// TestNotWritableTarget refuses a directory the probe may not write in. Root may write anywhere,
// so as root the check runs on a thread without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH.
func TestNotWritableTarget(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "read-only-mode")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	var err error
	withoutDACOverride(t, func() {
		_, err = Run(context.Background(), []Target{{Path: dir}}, smallOptions())
	})
	assertKinds(t, err, ErrNotWritable, unix.EACCES)
	assertPath(t, err, dir)
	if want := "target " + dir + " is not writable: permission denied"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Run = %v, want %q", err, want)
	}
	assertEmpty(t, dir)
}

// withoutDACOverride calls f on an OS thread that has lost the capabilities to bypass file
// permissions. The thread is never handed back to other goroutines: it ends with f's goroutine.
func withoutDACOverride(t *testing.T, f func()) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked, so the stripped thread exits with this goroutine
		if os.Geteuid() == 0 {
			if err := dropDACCapabilities(); err != nil {
				done <- err
				return
			}
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("failed to drop CAP_DAC_OVERRIDE on the test thread: %v", err)
	}
}

// dropDACCapabilities removes the capabilities that bypass file permissions from the calling
// thread, from its permitted set too: access(2) checks as root with the permitted capabilities.
func dropDACCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	for _, c := range []uint{unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH} {
		data[c/32].Effective &^= 1 << (c % 32)
		data[c/32].Permitted &^= 1 << (c % 32)
	}
	return unix.Capset(&hdr, &data[0])
}

// TestErrnoKinds: what a failed system call in a target means, for the errnos the kernel returns
// that cannot be provoked on demand during a run.
func TestErrnoKinds(t *testing.T) {
	for errno, kind := range map[unix.Errno]error{
		unix.EROFS:  ErrReadOnly,
		unix.EACCES: ErrNotWritable,
		unix.EPERM:  ErrNotWritable,
		unix.ENOSPC: ErrTargetFull,
		unix.EDQUOT: ErrTargetFull,
		unix.EIO:    nil,
	} {
		cause := &os.PathError{Op: "open", Path: "/t/f", Err: errno}
		err := ioFailure("/t/f", cause, "failed to create %s: %w", "/t/f", cause)
		want := []error{errno}
		if kind != nil {
			want = append(want, kind)
		}
		assertKinds(t, err, want...)
		assertPath(t, err, "/t/f")
		if got := err.Error(); got != "failed to create /t/f: open /t/f: "+errno.Error() {
			t.Errorf("message %q", got)
		}
		w := writeError("/t/f", 1, 2, errno)
		assertKinds(t, w, want...)
		if filled := strings.HasPrefix(w.Error(), "the filesystem filled up: /t/f got 1 of 2 bytes: "); filled != errors.Is(kind, ErrTargetFull) {
			t.Errorf("writeError(%v) = %q", errno, w)
		}
	}
}

func TestTargetFailures(t *testing.T) {
	full := writeError("/t/.dbtune-probe-1/sequential", 1, 2, unix.ENOSPC)
	var tr TargetResult
	tr.fail(fmt.Errorf("sequential write: %w", full))
	tr.fail(joinFailures(tr.Err, ioFailure("/t/.dbtune-probe-1", unix.EACCES, "failed to remove %s: %w", "/t/.dbtune-probe-1", unix.EACCES)))
	tr.fail(joinFailures(tr.Err, errors.New("third")))
	want := "sequential write: the filesystem filled up: /t/.dbtune-probe-1/sequential got 1 of 2 bytes: no space left on device; " +
		"failed to remove /t/.dbtune-probe-1: permission denied; third"
	if tr.Error != want || tr.Err.Error() != want {
		t.Errorf("target error %q, want %q", tr.Error, want)
	}
	assertKinds(t, tr.Err, ErrTargetFull, ErrNotWritable, unix.ENOSPC, unix.EACCES)

	tr.Name, tr.Path = "disk", "/t"
	res := Result{Targets: []TargetResult{tr}}
	assertKinds(t, res.Err(), ErrTargetFull, ErrNotWritable)
	if got := res.Err().Error(); got != "target disk (/t): "+want {
		t.Errorf("Result.Err() = %q", got)
	}

	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var back TargetResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Error != want || back.Err != nil || strings.Contains(string(b), `"Err"`) {
		t.Errorf("JSON %s read back as %+v", b, back)
	}
}
