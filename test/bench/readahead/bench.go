package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/cloudvolume"
)

// Workload names.
const (
	wBackup      = "backup"
	wLog         = "log"
	wRandom      = "random"
	wRandomMmap  = "random-mmap"
	wScanFsync   = "scan-fsync"
	wScanODirect = "scan-odirect"
)

// The files the file workloads read, in a directory of the volume beside the data directory's
// own.
const (
	filesDir = "readahead-files"
	dataFile = "datafile"
	logFile  = "relaylog"
)

// bench is what the runs share.
type bench struct {
	cfg      *config
	vol      *cloudvolume.Volume
	dev      *device
	srv      *server
	versions map[string]string
	order    *method.Order
	report   *Report
	logf     func(string, ...any)
}

// measured is one run's figures.
type measured struct {
	seconds                   float64
	requested                 int64
	device                    cloudvolume.Stats
	cachedBefore, cachedAfter int64
	innodbRead                int64
}

// spec is a workload: its description and how one run goes.
type spec struct {
	Workload
	// sequential workloads read their whole file: the device must have read at least that much,
	// or the page cache was not empty.
	sequential bool
	run        func(ctx context.Context, round int) (measured, error)
}

// filePath is a file of the file workloads, as a path on this machine.
func (b *bench) filePath(name string) string {
	return filepath.Join(b.srv.claimDir(), filesDir, name)
}

// fileSpecs are the file workloads.
func (b *bench) fileSpecs() []spec {
	data, log := b.filePath(dataFile), b.filePath(logFile)
	sequential := func(path string, block int) func(context.Context, int) (measured, error) {
		return func(context.Context, int) (measured, error) {
			return b.fileRun(path, func() (int64, float64, error) {
				return timed(func() (int64, error) { return sequentialRead(path, block) })
			})
		}
	}
	random := func(read func([][]int64) (int64, float64, error)) func(context.Context, int) (measured, error) {
		return func(_ context.Context, round int) (measured, error) {
			// Every value reads the same offsets in a round.
			offsets := randomOffsets(b.cfg.seed+int64(round), b.cfg.fileMiB<<20, b.cfg.randomReads, b.cfg.randomWorkers)
			return b.fileRun(data, func() (int64, float64, error) { return read(offsets) })
		}
	}
	return []spec{
		{Workload: describe(wBackup, backupBlock, b.cfg.fileMiB<<20), sequential: true, run: sequential(data, backupBlock)},
		{Workload: describe(wLog, logBlock, b.cfg.logMiB<<20), sequential: true, run: sequential(log, logBlock)},
		{Workload: describe(wRandom, randomBlock, b.cfg.fileMiB<<20), run: random(func(offsets [][]int64) (int64, float64, error) {
			return timed(func() (int64, error) { return randomRead(data, randomBlock, offsets) })
		})},
		{Workload: describe(wRandomMmap, randomBlock, b.cfg.fileMiB<<20), run: random(func(offsets [][]int64) (int64, float64, error) {
			return mmapRandomRead(data, randomBlock, offsets)
		})},
	}
}

// timed runs read and returns what it returns with the seconds it took.
func timed(read func() (int64, error)) (int64, float64, error) {
	start := time.Now()
	n, err := read()
	return n, time.Since(start).Seconds(), err
}

// scanSpecs are the server's scans, with each flush method.
func (b *bench) scanSpecs() []spec {
	scan := func(flushMethod string) func(context.Context, int) (measured, error) {
		return func(ctx context.Context, _ int) (measured, error) {
			r, err := b.srv.scan(ctx, flushMethod, b.settledStats)
			if err == nil && r.innodbReadBytes <= 0 {
				err = errors.New("InnoDB read nothing from its files during the scan: the buffer pool was not cold")
			}
			// What the scan asked for is what InnoDB read: the table's file holds free space too.
			return measured{seconds: r.seconds, requested: r.innodbReadBytes, device: r.device,
				cachedBefore: r.cachedBefore, cachedAfter: r.cachedAfter, innodbRead: r.innodbReadBytes}, err
		}
	}
	return []spec{
		{Workload: describe(wScanFsync, 0, b.srv.info.TableFileBytes), sequential: true, run: scan(flushFsync)},
		{Workload: describe(wScanODirect, 0, b.srv.info.TableFileBytes), sequential: true, run: scan(flushODirect)},
	}
}

// fileRun drops the file's page cache, then runs read, which opens the file itself (after the
// read-ahead was set) and times its reads, and reads the device's counters around it.
func (b *bench) fileRun(path string, read func() (int64, float64, error)) (measured, error) {
	var m measured
	if err := dropCache(path); err != nil {
		return m, err
	}
	before := b.settledStats()
	n, seconds, err := read()
	m.seconds, m.requested = seconds, n
	if err != nil {
		return m, err
	}
	m.device = delta(b.settledStats(), before)
	m.cachedAfter, err = cachedBytes(path)
	return m, err
}

// settledStats waits until no request is reaching the device (read-ahead a run started may still
// be on its way when its last read returns, and it is that run's cost) and returns its counters.
func (b *bench) settledStats() cloudvolume.Stats {
	last := b.vol.Stats()
	for range 500 {
		time.Sleep(20 * time.Millisecond)
		now := b.vol.Stats()
		if now == last {
			return now
		}
		last = now
	}
	return last
}

// delta is what reached the device between two readings of its counters.
func delta(after, before cloudvolume.Stats) cloudvolume.Stats {
	return cloudvolume.Stats{
		ReadBytes: after.ReadBytes - before.ReadBytes, WriteBytes: after.WriteBytes - before.WriteBytes,
		Reads: after.Reads - before.Reads, Writes: after.Writes - before.Writes,
	}
}

// runRounds runs every spec at every read-ahead once per round, the pairs in an order drawn anew
// for each round.
func (b *bench) runRounds(ctx context.Context, specs []spec, rounds int) error {
	type variant struct {
		spec *spec
		kib  int64
	}
	variants := make([]variant, 0, len(b.cfg.values)*len(specs))
	for i := range specs {
		b.report.Workloads = append(b.report.Workloads, specs[i].Workload)
		for _, kib := range b.cfg.values {
			variants = append(variants, variant{&specs[i], kib})
		}
	}
	for round := 1; round <= rounds; round++ {
		for position, v := range method.Shuffled(b.order, variants) {
			if err := ctx.Err(); err != nil {
				return err
			}
			run, err := b.runOne(ctx, v.spec, v.kib, round)
			if err != nil {
				return fmt.Errorf("%s at %d KiB, round %d: %w", v.spec.Name, v.kib, round, err)
			}
			run.Position = position + 1
			b.report.Runs = append(b.report.Runs, run)
			b.logf("%s round %d, read-ahead %s: %.2f s, %.1f MiB/s, device read %.1f MiB in %d requests",
				run.Workload, round, kibText(run.ReadAheadKiB), run.Seconds, run.ReadBytesPerSecond/(1<<20),
				float64(run.DeviceReadBytes)/(1<<20), run.DeviceReads)
		}
	}
	return nil
}

// runOne sets the read-ahead and runs the workload once.
func (b *bench) runOne(ctx context.Context, s *spec, kib int64, round int) (Run, error) {
	if err := b.dev.set(kib); err != nil {
		return Run{}, err
	}
	conditions := method.Record(b.versions)
	m, err := s.run(ctx, round)
	if err != nil {
		return Run{}, err
	}
	if m.device.ReadBytes < m.requested*9/10 && s.sequential {
		return Run{}, fmt.Errorf("the device read %d MiB for %d MiB read: the page cache was not empty", m.device.ReadBytes>>20, m.requested>>20)
	}
	return Run{
		Workload: s.Name, ReadAheadKiB: kib, Round: round, Seconds: m.seconds,
		RequestedBytes: m.requested, ReadBytesPerSecond: float64(m.requested) / m.seconds,
		DeviceReadBytes: m.device.ReadBytes, DeviceReads: m.device.Reads,
		CachedBeforeBytes: m.cachedBefore, CachedAfterBytes: m.cachedAfter, InnoDBReadBytes: m.innodbRead,
		Conditions: conditions,
	}, nil
}

// prepare loads the server's table and writes the files, with the server stopped afterwards so
// that it does no I/O of its own while the files are read.
func (b *bench) prepare(ctx context.Context) error {
	if b.cfg.selected(wScanFsync) || b.cfg.selected(wScanODirect) {
		b.logf("loading %d MiB of rows into %s", b.cfg.tableMiB, scanTable)
		if err := b.srv.load(ctx, b.cfg.tableMiB<<20); err != nil {
			return err
		}
		if b.srv.info.TableFileBytes < minTableBytes {
			return fmt.Errorf("the table's file is %d MiB, less than the %d MiB a scan should read", b.srv.info.TableFileBytes>>20, minTableBytes>>20)
		}
	}
	if err := os.Mkdir(filepath.Join(b.srv.claimDir(), filesDir), 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		mib  int64
	}{{dataFile, b.cfg.fileMiB}, {logFile, b.cfg.logMiB}} {
		b.logf("writing %d MiB to %s", f.mib, f.name)
		if err := writeFile(b.filePath(f.name), f.mib<<20); err != nil {
			return err
		}
	}
	return nil
}

// measure runs every workload the configuration selects: the file workloads one after the other,
// then the two scans together, their runs interleaved.
func (b *bench) measure(ctx context.Context) error {
	for _, s := range b.fileSpecs() {
		if !b.cfg.selected(s.Name) {
			continue
		}
		if err := b.runRounds(ctx, []spec{s}, b.cfg.rounds); err != nil {
			return err
		}
	}
	var scans []spec
	for _, s := range b.scanSpecs() {
		if b.cfg.selected(s.Name) {
			scans = append(scans, s)
		}
	}
	if len(scans) == 0 {
		return nil
	}
	return b.runRounds(ctx, scans, b.cfg.scanRounds)
}

// minTableBytes is the least the scanned table's file may hold.
const minTableBytes = 512 << 20

// errNotRoot says the benchmark needs root.
var errNotRoot = errors.New("needs root: it makes a loop device, mounts and a FUSE file system, sets a block device's read-ahead and runs MariaDB in its own namespaces")
