package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

// cacheDrop says how each run starts with an empty page cache.
const cacheDrop = "before each run the file read (the table's .ibd for a scan, with the server stopped) is fsynced and dropped " +
	"with posix_fadvise(POSIX_FADV_DONTNEED), and mincore confirms that none of it is cached; the machine's other caches are left alone"

// methodText says how the figures were taken.
const methodText = "Each workload runs in rounds; in each round every read-ahead value runs once, in an order drawn anew for the round " +
	"from the recorded seed (the two scans share their rounds, so their runs interleave too). Before each run the device's read-ahead " +
	"is set with the node agent's readahead package (mode Set, read back) and then the file is opened, since a file takes its device's " +
	"read-ahead when it is opened. Time is the reads' own (the query's, for a scan); throughput is the bytes the workload asked for (for a scan, " +
	"what InnoDB read from its files, Innodb_data_read) over that " +
	"time; device bytes and requests are the volume's own counters over the reads, read once the device has gone quiet, so that " +
	"read-ahead still in flight when the last read returned counts. Each value is compared with 128 KiB by the ratio of the medians " +
	"over the runs, with a 95 % percentile bootstrap interval (10000 resamples, seeded with the recorded seed); a verdict names a " +
	"difference only where the interval excludes 1."

// measureOnHost makes the volume, the server and the files, runs the workloads and undoes it all
// however the run ends: the server stops, the device gets its read-ahead back, the volume closes.
func measureOnHost(ctx context.Context, cfg *config, logf func(string, ...any)) (r *Report, err error) {
	start := time.Now()
	// Before the host: a killed run's volume is mounted in its host directory, which the host's
	// own sweep leaves alone while anything is mounted there.
	if err := cloudvolume.Recover(logf); err != nil {
		return nil, err
	}
	if err := restoreLeftovers(StateDir, logf); err != nil {
		return nil, err
	}
	h, err := mariadb.NewHost("")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.Close()) }()
	srv, err := newServer(h, cfg.bufferPool, cfg.memoryLimit)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(srv.claimDir(), 0o755); err != nil {
		return nil, err
	}
	vol, err := cloudvolume.Open(cloudvolume.Options{Profile: cloudvolume.GP3, SizeBytes: cfg.volumeGiB << 30, MountPoint: srv.claimDir(), Logf: logf})
	if err != nil {
		return nil, err
	}
	// The server's sandbox holds the volume's mount until it ends: it stops first (deferred last).
	defer func() { err = errors.Join(err, vol.Close()) }()
	defer func() { err = errors.Join(err, srv.stop()) }()
	dev, err := openDevice(vol.Device(), StateDir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, dev.restore()) }()
	logf("volume %s on %s (read-ahead %d KiB, max_sectors_kb %d)", vol.Profile(), vol.Device(), dev.OriginalKiB, dev.MaxSectorsKiB)
	b := &bench{cfg: cfg, vol: vol, dev: dev, srv: srv, order: method.NewOrder(cfg.seed), logf: logf,
		versions: map[string]string{"go": runtime.Version(), "reads": "this command's Go reads (os.File Read and ReadAt, unix.Mmap)"}}
	b.report = newReport(cfg, start, vol, dev)
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	if srv.info.Version != "" {
		b.versions["server"] = "MariaDB " + srv.info.Version
		b.report.Server = &srv.info
	}
	if err := b.measure(ctx); err != nil {
		return nil, err
	}
	b.report.summarize()
	b.report.DurationSeconds = time.Since(start).Seconds()
	return b.report, nil
}

func newReport(cfg *config, start time.Time, vol *cloudvolume.Volume, dev *device) *Report {
	return &Report{
		GeneratedAt: start.UTC().Truncate(time.Second),
		Command:     "go run ./test/bench/readahead " + strings.Join(os.Args[1:], " "),
		Settings: Settings{
			ReadAheadKiB: cfg.values, BaselineKiB: baselineKiB, Rounds: cfg.rounds, ScanRounds: cfg.scanRounds,
			Seed: cfg.seed, CacheDrop: cacheDrop,
		},
		Device: Device{
			Profile: vol.Profile().String(), Name: dev.id.Name, Filesystem: "ext4", SizeBytes: cfg.volumeGiB << 30,
			OriginalReadAheadKiB: dev.OriginalKiB, MaxSectorsKiB: dev.MaxSectorsKiB, DirectIO: vol.DirectIO(),
		},
		Method: methodText,
	}
}

// kibText writes a read-ahead value as the tables do: 128 KiB, 4 MiB.
func kibText(kib int64) string {
	if kib >= 1024 && kib%1024 == 0 {
		return fmt.Sprintf("%d MiB", kib/1024)
	}
	return fmt.Sprintf("%d KiB", kib)
}
