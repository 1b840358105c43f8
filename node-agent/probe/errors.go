package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Sentinel errors. Every error Run returns, and every TargetResult.Err, matches the sentinel of
// its kind with errors.Is, so that a caller picks a condition reason without reading messages; the
// errno of a failed system call matches too. A run stopped by its caller matches the context's
// error (context.Canceled, context.DeadlineExceeded) and, through context.Cause, the cause the
// caller gave.
var (
	// ErrTargetNotFound: a target directory does not exist.
	ErrTargetNotFound = errors.New("target directory not found")
	// ErrNotDirectory: a target path is not a directory.
	ErrNotDirectory = errors.New("target is not a directory")
	// ErrReadOnly: a target is on a read-only filesystem (EROFS), found by the checks before the
	// run or by a workload.
	ErrReadOnly = errors.New("target is on a read-only filesystem")
	// ErrNotWritable: the probe may not write in a target (EACCES, EPERM).
	ErrNotWritable = errors.New("target is not writable")
	// ErrNotEnoughSpace: the checks before the run found less than twice what the run keeps on a
	// target at once.
	ErrNotEnoughSpace = errors.New("not enough free space on the target")
	// ErrTargetFull: the filesystem filled up during the run (ENOSPC, EDQUOT).
	ErrTargetFull = errors.New("target filled up during the run")
	// ErrDeviceUnreadable: a target's block device cannot be opened, is not a block device, or
	// failed while it was read.
	ErrDeviceUnreadable = errors.New("device cannot be read")
	// ErrTimeLimit: the run reached Options.MaxDuration. It is the cause of the run's context, so
	// it also matches context.DeadlineExceeded.
	ErrTimeLimit = errors.New("probe run reached its time limit")
	// ErrInvalidOptions: Options.Validate refused the options; every error it joins matches.
	ErrInvalidOptions = errors.New("invalid probe options")
	// ErrNotProbed: the run stopped before it reached a target. The target's error only repeats
	// the run's, which it wraps.
	ErrNotProbed = errors.New("target not probed")
)

// Error is a failure of a kind the probe names. Its message is Err's, in the probe's words; its
// kind and its cause match with errors.Is and it is found with errors.As.
type Error struct {
	// Kind is one of the sentinel errors above, or nil when the failure is of no kind a caller
	// can act on (an I/O error, for example).
	Kind error
	// Path is the target directory, the file in it or the device the failure is about; it is
	// empty when the failure is about an option.
	Path string
	// Err says what failed and wraps the cause: the errno of a failed system call, or
	// context.DeadlineExceeded for the time limit.
	Err error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprint(e.Kind)
	}
	return e.Err.Error()
}

// Unwrap returns the kind and the failure with its cause.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	for _, err := range []error{e.Kind, e.Err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// failure is an Error of the given kind about path, with the message of format and args (which
// wrap the cause with %w when there is one).
func failure(kind error, path, format string, args ...any) error {
	return &Error{Kind: kind, Path: path, Err: fmt.Errorf(format, args...)}
}

// ioFailure is a failed system call on path, of the kind its errno stands for (see errnoKind).
func ioFailure(path string, cause error, format string, args ...any) error {
	return failure(errnoKind(cause), path, format, args...)
}

// errnoKind names what an errno from a system call in a target means for the probe, or returns nil.
func errnoKind(err error) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return nil
	}
	switch errno {
	case unix.EROFS:
		return ErrReadOnly
	case unix.EACCES, unix.EPERM:
		return ErrNotWritable
	case unix.ENOSPC, unix.EDQUOT:
		return ErrTargetFull
	}
	return nil
}

// quietError is a sentence that says all there is to say ("target /x does not exist") and still
// wraps its cause, the errno, for errors.Is.
type quietError struct {
	msg   string
	cause error
}

func quiet(msg string, cause error) error { return &quietError{msg: msg, cause: cause} }

func (e *quietError) Error() string { return e.msg }

func (e *quietError) Unwrap() error { return e.cause }

// invalidOption marks an error of Options.Validate.
func invalidOption(format string, args ...any) error {
	return failure(ErrInvalidOptions, "", format, args...)
}

// timeLimit is the cause of the run's context once opts.MaxDuration has passed.
func timeLimit(d time.Duration) error {
	return failure(ErrTimeLimit, "", "the run reached its %s time limit: %w", d, context.DeadlineExceeded)
}

// messages joins the failures of one target, in order, with "; ": the target's error is one line.
type messages []error

func (m messages) Error() string {
	parts := make([]string, 0, len(m))
	for _, err := range m {
		parts = append(parts, err.Error())
	}
	return strings.Join(parts, "; ")
}

func (m messages) Unwrap() []error { return m }

// joinFailures adds err after the failures already in first, which may be nil.
func joinFailures(first, err error) error {
	if first == nil {
		return err
	}
	return messages{first, err}
}
