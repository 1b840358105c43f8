package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
)

// TempDirPattern names the private working directory a run creates in each target (os.MkdirTemp
// pattern). Everything the probe writes lives below it, and it is removed when the target is done.
const TempDirPattern = ".dbtune-probe-*"

// Run probes each target in turn and returns what it measured.
//
// Before writing anything it validates opts, checks every target (an existing writable directory
// with at least twice PeakBytesPerTarget free, a readable block device if one is given) and refuses
// the whole run, with every problem named, if one fails. A workload that fails on a target, for
// example because the filesystem filled up, ends that target with TargetResult.Error and the run
// goes on with the next one; Result.Err collects those. When ctx is canceled or opts.MaxDuration
// passes, Run returns what it has so far together with an error. In every case the files it created
// are gone when Run returns.
func Run(ctx context.Context, targets []Target, opts Options) (*Result, error) {
	if err := opts.Validate(len(targets)); err != nil {
		return nil, fmt.Errorf("invalid probe options: %w", err) // each joined error matches ErrInvalidOptions
	}
	plans, err := preflight(targets, &opts)
	if err != nil {
		return nil, fmt.Errorf("refusing to start the probe run: %w", err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, opts.MaxDuration, timeLimit(opts.MaxDuration))
	defer cancel()
	h := readHost(&opts)
	res := &Result{Kernel: h.kernel, FreePageReporting: FreePageReporting(opts.sysfsRoot()),
		TransparentHugePages: h.transparentHugePages(), StartTime: time.Now()}
	bufs, err := newBuffers(&opts)
	if err != nil {
		return nil, err
	}
	defer bufs.release()
	for i := range plans {
		res.Targets = append(res.Targets, runTarget(ctx, &plans[i], &opts, bufs, h))
	}
	res.FinishTime = time.Now()
	res.DurationMilliseconds = res.FinishTime.Sub(res.StartTime).Milliseconds()
	res.Comparison = ComputeComparison(res.Targets)
	if ctx.Err() != nil {
		return res, fmt.Errorf("the probe run stopped early: %w", context.Cause(ctx))
	}
	return res, nil
}

// Err joins the errors of the targets; it is nil when every target was probed completely. Each
// wraps the target's Err, so errors.Is sees the kinds of failure.
func (r *Result) Err() error {
	var errs []error
	for i := range r.Targets {
		if t := &r.Targets[i]; t.Error != "" {
			errs = append(errs, fmt.Errorf("target %s (%s): %w", t.Name, t.Path, t.asError()))
		}
	}
	return errors.Join(errs...)
}

// asError is Err, or Error as an error of no kind when the result was read back from JSON.
func (t *TargetResult) asError() error {
	if t.Err != nil || t.Error == "" {
		return t.Err
	}
	return errors.New(t.Error)
}

// fail records why the target could not be probed completely, as text and as an error.
func (t *TargetResult) fail(err error) {
	t.Err, t.Error = err, err.Error()
}

// host is what a run knows of the machine, read once before the first target.
type host struct {
	// kernel is the release (uname -r).
	kernel string
	// pages are the kernel's large-page settings for tmpfs, unless pagesErr says why not.
	pages    tmpfspages.Kernel
	pagesErr error
}

func readHost(o *Options) *host {
	h := &host{kernel: kernelRelease()}
	h.pages, h.pagesErr = tmpfspages.ReadKernel(tmpfspages.Paths{
		ShmemEnabled: filepath.Join(o.sysfsRoot(), "kernel", "mm", "transparent_hugepage", "shmem_enabled"),
		Cmdline:      filepath.Join(o.procfsRoot(), "cmdline"),
	})
	return h
}

func (h *host) transparentHugePages() *TransparentHugePages {
	if h.pagesErr != nil {
		return nil
	}
	return &TransparentHugePages{ShmemEnabled: h.pages.ShmemEnabled, TmpfsDefault: h.pages.TmpfsDefault}
}

// runTarget runs every workload on one target inside a private directory that it always removes.
func runTarget(ctx context.Context, p *plan, o *Options, bufs *buffers, h *host) (tr TargetResult) {
	tr = TargetResult{Name: p.Name, Path: p.Path, Kind: p.kind, Provenance: p.prov}
	if ctx.Err() != nil {
		tr.fail(failure(ErrNotProbed, p.Path, "not probed: %w", context.Cause(ctx)))
		return tr
	}
	dir, err := os.MkdirTemp(p.Path, TempDirPattern)
	if err != nil {
		tr.fail(ioFailure(p.Path, err, "failed to create a working directory in %s: %w", p.Path, err))
		return tr
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			tr.fail(joinFailures(tr.Err, ioFailure(dir, err, "failed to remove %s: %w", dir, err)))
		}
	}()
	for _, s := range workloads(ctx, dir, p, o, bufs, h, &tr) {
		if err := s.run(); err != nil {
			tr.fail(fmt.Errorf("%s: %w", s.name, causeOf(ctx, err)))
			break
		}
	}
	return tr
}

// step is one workload of a target; it stores its figures in the TargetResult as it goes, so that
// a later failure keeps the figures already measured.
type step struct {
	name string
	run  func() error
}

func workloads(ctx context.Context, dir string, p *plan, o *Options, bufs *buffers, h *host, tr *TargetResult) []step {
	seqPath := filepath.Join(dir, "sequential")
	directPath := filepath.Join(dir, "direct")
	fsyncPath := filepath.Join(dir, "fdatasync")
	steps := []step{
		{"sequential write", func() (err error) {
			tr.SequentialWrite, err = sequentialWrite(ctx, seqPath, bufs.write, o.SeqWriteBytes, o.seqBlockBytes())
			return err
		}},
		{"cold read", func() (err error) {
			tr.ColdRead, err = coldRead(ctx, seqPath, p.kind, bufs.read[:o.ColdReadBlockBytes], o.ColdReadMaxDuration)
			return removeAfter(seqPath, err)
		}},
		{"O_DIRECT write", func() (err error) {
			tr.DirectWrite, err = directWrite(ctx, directPath, p.kind, h.kernel, bufs.write,
				o.DirectWriteBytes, o.directBlockBytes(), o.DirectWriteMaxDuration)
			return removeAfter(directPath, err)
		}},
	}
	for _, c := range o.Churn {
		steps = append(steps, step{fmt.Sprintf("%d-byte file churn", c.FileBytes), func() error {
			r, err := churn(ctx, dir, c, bufs, o.ChurnMaxDuration)
			if r != nil {
				tr.FileChurn = append(tr.FileChurn, *r)
			}
			return err
		}})
	}
	if len(o.TempFiles) > 0 {
		steps = append(steps, step{"temporary files", func() (err error) {
			tr.TempFiles, err = targetTempFiles(ctx, dir, p, o, bufs)
			return err
		}})
	}
	if len(o.TempFiles) > 0 && p.kind == KindTmpfs {
		steps = append(steps, step{"temporary files with large pages", func() (err error) {
			tr.LargePageTempFiles, err = largePageTempFiles(ctx, p, o, bufs, h)
			return err
		}})
	}
	steps = append(steps, step{"fdatasync latency", func() (err error) {
		tr.Fdatasync, err = fdatasyncLatency(ctx, fsyncPath, bufs.write, o)
		return removeAfter(fsyncPath, err)
	}})
	if p.Device != "" {
		steps = append(steps, step{"device read", func() (err error) {
			tr.DeviceRead, err = deviceRead(ctx, p.Device, bufs.read, o)
			return err
		}})
	}
	return steps
}

// removeAfter removes a workload's file as soon as the workload is over, so that the next one
// starts with the space PeakBytesPerTarget promised.
func removeAfter(path string, err error) error {
	if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) && err == nil {
		return ioFailure(path, rmErr, "failed to remove %s: %w", path, rmErr)
	}
	return err
}

// causeOf replaces a bare context error by its cause, so that a target says "the run reached its
// 1m0s time limit" rather than "context deadline exceeded".
func causeOf(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return context.Cause(ctx)
	}
	return err
}
