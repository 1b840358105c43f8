package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// execTool runs a reference tool under the C locale (dd prints its decimal point by locale) and
// returns its standard output and error.
func execTool(ctx context.Context, args []string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("%s failed: %w: %s", args[0], err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), nil
}

// fioRunner runs one fio job on file, which it removes before and after unless it is a device.
func fioRunner(file string, job, provides []string, extract func(FioResult) (Figures, error)) Runner {
	args := append([]string{"fio", "--name=bench", "--filename=" + file, "--ioengine=sync"}, job...)
	args = append(args, "--output-format=json")
	isDevice := strings.HasPrefix(file, "/dev/")
	return Runner{
		Tool:     "fio",
		Command:  quoteArgs(args),
		Provides: provides,
		Run: func(ctx context.Context) (Figures, error) {
			if !isDevice {
				if err := removeIfExists(file); err != nil {
					return nil, err
				}
				defer func() { _ = os.Remove(file) }()
			}
			out, _, err := execTool(ctx, args)
			if err != nil {
				return nil, err
			}
			res, err := ParseFio([]byte(out))
			if err != nil {
				return nil, err
			}
			return extract(res)
		},
	}
}

func fioWrite(id string) func(FioResult) (Figures, error) {
	return func(r FioResult) (Figures, error) {
		if r.WriteBytesPerSecond <= 0 {
			return nil, errors.New("fio reported no write bandwidth")
		}
		return Figures{id: r.WriteBytesPerSecond}, nil
	}
}

func fioRead(id string) func(FioResult) (Figures, error) {
	return func(r FioResult) (Figures, error) {
		if r.ReadBytesPerSecond <= 0 {
			return nil, errors.New("fio reported no read bandwidth")
		}
		return Figures{id: r.ReadBytesPerSecond}, nil
	}
}

// fioSync reports fio's fdatasync percentiles in microseconds, the probe's unit, without rounding:
// the rounding is the probe's and is what the comparison has to show.
func fioSync(r FioResult) (Figures, error) {
	if r.SyncSamples == 0 {
		return nil, errors.New("fio reported no fdatasync latencies")
	}
	return Figures{mFsyncP50: r.SyncP50Nanoseconds / 1000, mFsyncP99: r.SyncP99Nanoseconds / 1000}, nil
}

// ddRunner runs dd from /dev/zero into file, the way the classic hand measurements did, and
// reports its rate net of dd's own input. dd's clock runs while it faults in its buffer and fills
// it from /dev/zero before every write, work the probe and fio do before they start timing, and at
// 128 MiB blocks that is close to half of dd's time on fast storage. So each run first times the
// same dd into /dev/null, which does all of that and no storage I/O, and subtracts its seconds
// from the real run's. The figure dd printed itself is kept too, under rawKey.
func ddRunner(file, id string, operands ...string) Runner {
	args := append([]string{"dd", "if=/dev/zero", "of=" + file}, operands...)
	input := append([]string{"dd", "if=/dev/zero", "of=/dev/null"}, inputOperands(operands)...)
	return Runner{
		Tool:     "dd",
		Command:  quoteArgs(args) + "; rate = bytes / (its seconds - the seconds of " + quoteArgs(input) + ", run just before)",
		Provides: []string{id},
		Run: func(ctx context.Context) (Figures, error) {
			if err := removeIfExists(file); err != nil {
				return nil, err
			}
			defer func() { _ = os.Remove(file) }()
			_, inputSecs, err := runDD(ctx, input)
			if err != nil {
				return nil, err
			}
			n, secs, err := runDD(ctx, args)
			if err != nil {
				return nil, err
			}
			if secs <= inputSecs {
				return nil, fmt.Errorf("dd took %.6f s to write %s and %.6f s to copy the same into /dev/null: no net time left to measure", secs, file, inputSecs)
			}
			return Figures{id: float64(n) / (secs - inputSecs), rawKey(id): float64(n) / secs}, nil
		},
	}
}

// inputOperands keeps the operands that shape dd's reading (block size and count) and drops the
// ones that only concern its output file.
func inputOperands(operands []string) []string {
	var out []string
	for _, o := range operands {
		if strings.HasPrefix(o, "bs=") || strings.HasPrefix(o, "count=") {
			out = append(out, o)
		}
	}
	return out
}

func runDD(ctx context.Context, args []string) (bytesCopied int64, seconds float64, err error) {
	_, stderr, err := execTool(ctx, args)
	if err != nil {
		return 0, 0, err
	}
	n, rate, err := ParseDD(stderr)
	if err != nil {
		return 0, 0, err
	}
	return n, float64(n) / rate, nil
}

// rawKey keys the figure a tool printed itself when the comparison uses a corrected one.
func rawKey(id string) string { return id + "/as-printed" }

func hdparmRunner(device string) Runner {
	args := []string{"hdparm", "-t", device}
	return Runner{
		Tool:     "hdparm",
		Command:  quoteArgs(args),
		Provides: []string{mDevice},
		Run: func(ctx context.Context) (Figures, error) {
			out, _, err := execTool(ctx, args)
			if err != nil {
				return nil, err
			}
			_, rate, err := ParseHdparm(out)
			if err != nil {
				return nil, err
			}
			return Figures{mDevice: rate}, nil
		},
	}
}

// The churn references. fio cannot express this workload: it creates its files in an untimed
// layout phase, its filecreate engine opens with O_CREAT and writes nothing, and its filedelete
// engine unlinks without reading, so no fio job times create+write+close followed by
// open+read+close+unlink. A shell loop can, but it forks a process or two per file, which costs
// far more than the filesystem work on tmpfs. So there are two loops written apart from the probe:
//
//   - go-syscall-loop makes exactly the system calls of the classic C loop (openat relative to the
//     directory, write, close; openat, read to EOF, close, unlinkat) and nothing else. It is the
//     reference the verdict rests on: it checks the probe's timing and bookkeeping, not its choice
//     of system calls.
//   - go-os-loop is the same loop as an ordinary Go program writes it, with the os package: paths
//     resolved from the root, an fstat per open, a finalizer per file. It is there to show how much
//     a program's own per-file overhead moves the figure where a file costs microseconds.

// churnLoop is one implementation of the two passes.
type churnLoop interface {
	create(name string, data []byte) error
	readAndRemove(name string, buf []byte) error
	close() error
}

func churnRunner(tool, how, dir string, c probe.ChurnSize, maxDuration time.Duration, readBuf int64,
	open func(dir string) (churnLoop, error),
) Runner {
	return Runner{
		Tool: tool,
		Command: fmt.Sprintf("%s in a new directory under %s: %d files of %d bytes, create pass then read pass (%s read buffer), each pass capped at %s",
			how, dir, c.Files, c.FileBytes, size(readBuf), maxDuration),
		Provides: []string{churnMetric(c, "create"), churnMetric(c, "read-unlink")},
		Run: func(ctx context.Context) (Figures, error) {
			return churnPasses(ctx, dir, c, maxDuration, readBuf, open)
		},
	}
}

func syscallLoopRunner(dir string, c probe.ChurnSize, maxDuration time.Duration, readBuf int64) Runner {
	return churnRunner("go-syscall-loop",
		"openat(dirfd, O_WRONLY|O_CREAT|O_EXCL)+write+close per file, then openat+read to EOF+close+unlinkat per file",
		dir, c, maxDuration, readBuf, openSyscallLoop)
}

func osLoopRunner(dir string, c probe.ChurnSize, maxDuration time.Duration, readBuf int64) Runner {
	r := churnRunner("go-os-loop",
		"os.OpenFile(O_CREATE|O_EXCL)+Write+Close per file, then os.Open+Read to EOF+Close+os.Remove per file, absolute paths",
		dir, c, maxDuration, readBuf, openOSLoop)
	r.ForContext = "shown for context, not held to the tolerance: the os package resolves absolute paths and adds an fstat and a finalizer per file"
	return r
}

func churnPasses(ctx context.Context, dir string, c probe.ChurnSize, maxDuration time.Duration, readBuf int64,
	open func(dir string) (churnLoop, error),
) (Figures, error) {
	work, err := os.MkdirTemp(dir, "churn-*")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	loop, err := open(work)
	if err != nil {
		return nil, err
	}
	defer func() { _ = loop.close() }()
	data := randomBytes(c.FileBytes + 64*probe.KiB)
	names := make([]string, c.Files)
	for i := range names {
		names[i] = "f" + strconv.Itoa(i)
	}
	start := time.Now()
	created := 0
	for ; created < c.Files && time.Since(start) < maxDuration && ctx.Err() == nil; created++ {
		off := int64(created*4096) % (int64(len(data)) - c.FileBytes + 1)
		if err := loop.create(names[created], data[off:off+c.FileBytes]); err != nil {
			return nil, err
		}
	}
	createTime := time.Since(start)
	buf := make([]byte, readBuf)
	start = time.Now()
	read := 0
	for ; read < created && time.Since(start) < maxDuration && ctx.Err() == nil; read++ {
		if err := loop.readAndRemove(names[read], buf); err != nil {
			return nil, err
		}
	}
	readTime := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return Figures{
		churnMetric(c, "create"):      float64(created) / createTime.Seconds(),
		churnMetric(c, "read-unlink"): float64(read) / readTime.Seconds(),
	}, nil
}

type syscallLoop struct{ dirfd int }

func openSyscallLoop(dir string) (churnLoop, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", dir, err)
	}
	return &syscallLoop{dirfd: fd}, nil
}

func (l *syscallLoop) create(name string, data []byte) error {
	fd, err := unix.Openat(l.dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	for len(data) > 0 && err == nil {
		var n int
		if n, err = unix.Write(fd, data); n == 0 && err == nil {
			err = io.ErrShortWrite
		}
		data = data[max(n, 0):]
	}
	return errors.Join(err, unix.Close(fd))
}

func (l *syscallLoop) readAndRemove(name string, buf []byte) error {
	fd, err := unix.Openat(l.dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	for n := 1; n > 0 && err == nil; {
		n, err = unix.Read(fd, buf)
	}
	if err := errors.Join(err, unix.Close(fd)); err != nil {
		return err
	}
	return unix.Unlinkat(l.dirfd, name, 0)
}

func (l *syscallLoop) close() error { return unix.Close(l.dirfd) }

type osLoop struct{ dir string }

func openOSLoop(dir string) (churnLoop, error) { return osLoop{dir: dir}, nil }

func (l osLoop) create(name string, data []byte) error {
	f, err := os.OpenFile(filepath.Join(l.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

func (l osLoop) readAndRemove(name string, buf []byte) error {
	path := filepath.Join(l.dir, name)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	for err == nil {
		_, err = f.Read(buf)
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	return os.Remove(path)
}

func (osLoop) close() error { return nil }

// randomBytes returns incompressible data, as the probe writes, so that neither side benefits
// from storage that compresses or deduplicates.
func randomBytes(n int64) []byte {
	var seed [32]byte
	_, _ = rand.Read(seed[:])
	b := make([]byte, n)
	_, _ = mrand.NewChaCha8(seed).Read(b)
	return b
}
