package probecmd

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func fixtureResult() *probe.Result {
	tmpfs := probe.TargetResult{
		Name: "tmpfs", Path: "/dev/shm", Kind: probe.KindTmpfs,
		Provenance:      probe.Provenance{FilesystemType: "tmpfs", MountOptions: "rw,relatime,size=24731708k"},
		SequentialWrite: &probe.SequentialWriteResult{Bytes: 256 << 20, BlockSizeBytes: 128 << 20, BufferedBytesPerSecond: 2_295_800_000, FdatasyncBytesPerSecond: 2_295_700_000},
		DirectWrite:     &probe.ThroughputResult{Bytes: 64 << 20, BlockSizeBytes: 512 << 10, BytesPerSecond: 2_757_100_000},
		ColdRead: &probe.ThroughputResult{Bytes: 256 << 20, BlockSizeBytes: 1 << 20, BytesPerSecond: 3_841_300_000,
			Note: "not cold: tmpfs cannot evict its pages (100% of the file stayed in memory), so this is a memory read"},
		FileChurn: []probe.FileChurnResult{
			{FileSizeBytes: 5000, Files: 2000, CreateFilesPerSecond: 115255, ReadUnlinkFilesPerSecond: 124969},
			{FileSizeBytes: 5_000_000, Files: 20, CreateFilesPerSecond: 419, ReadUnlinkFilesPerSecond: 559},
		},
		Fdatasync: &probe.FdatasyncResult{WriteSizeBytes: 2300, Samples: 2000, P50Microseconds: 1, P99Microseconds: 2},
		TempFiles: []probe.TempFileResult{
			tempFile(4<<20, 32, 130_000, "rw,relatime,size=24731708k"),
			tempFile(20<<20, 8, 170_000, "rw,relatime,size=24731708k"),
		},
		LargePageTempFiles: []probe.TempFileResult{
			tempFile(4<<20, 32, 28_000, "size=24731708k,huge=within_size"),
			tempFile(20<<20, 8, 36_000, "size=24731708k,huge=within_size"),
		},
	}
	disk := probe.TargetResult{
		Name: "disk", Path: "/var/lib/mysql", Kind: probe.KindDisk,
		Provenance:      probe.Provenance{FilesystemType: "ext4", Device: "vda", Rotational: new(true), Scheduler: "mq-deadline", ReadAheadKiB: new(int64(8192))},
		SequentialWrite: &probe.SequentialWriteResult{Bytes: 256 << 20, BlockSizeBytes: 128 << 20, BufferedBytesPerSecond: 719_600_000, FdatasyncBytesPerSecond: 494_500_000},
		DirectWrite:     &probe.ThroughputResult{BlockSizeBytes: 512 << 10, Unsupported: "the filesystem refuses O_DIRECT (open returned EINVAL)"},
		ColdRead:        &probe.ThroughputResult{Bytes: 190 << 20, BlockSizeBytes: 1 << 20, BytesPerSecond: 39_900_000},
		FileChurn: []probe.FileChurnResult{
			{FileSizeBytes: 5000, Files: 2000, CreateFilesPerSecond: 6846, ReadUnlinkFilesPerSecond: 92183},
		},
		Fdatasync: &probe.FdatasyncResult{WriteSizeBytes: 2300, Samples: 1885, P50Microseconds: 180, P99Microseconds: 7990},
		TempFiles: []probe.TempFileResult{
			tempFile(4<<20, 32, 70_000, "rw,relatime"),
			tempFile(20<<20, 8, 90_000, "rw,relatime"),
		},
		DeviceRead: &probe.ThroughputResult{Bytes: 3 << 30, BlockSizeBytes: 2 << 20, BytesPerSecond: 1_073_741_824, Note: "buffered read of /dev/vda"},
		Error:      "device read: the run reached its 1m0s time limit: context deadline exceeded",
	}
	targets := []probe.TargetResult{tmpfs, disk}
	return &probe.Result{Kernel: "6.18.44-fc-v657", DurationMilliseconds: 12345, Targets: targets, Comparison: probe.ComputeComparison(targets),
		TransparentHugePages: &probe.TransparentHugePages{ShmemEnabled: "never", TmpfsDefault: "never"}}
}

// tempFile is files temporary files of size bytes in 64 KiB calls that took micros microseconds.
func tempFile(size int64, files int32, micros int64, mountOptions string) probe.TempFileResult {
	return probe.TempFileResult{FileSizeBytes: size, BlockSizeBytes: 64 << 10, Files: files, ElapsedMicroseconds: micros,
		BytesPerSecond: size * int64(files) * 1e6 / micros, MountOptions: mountOptions}
}

func TestRenderTableGolden(t *testing.T) {
	for name, res := range map[string]*probe.Result{
		"table-tmpfs-disk.golden": fixtureResult(),
		"table-single.golden": {Kernel: "6.1.0", DurationMilliseconds: 900, Targets: singleTarget(),
			TransparentHugePages: &probe.TransparentHugePages{TmpfsDefault: "never"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := renderTable(res)
			path := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("table differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}

// singleTarget is the tmpfs of the fixture on a kernel without transparent huge pages, with one
// temporary-file size.
func singleTarget() []probe.TargetResult {
	tmpfs := fixtureResult().Targets[0]
	tmpfs.TempFiles = tmpfs.TempFiles[:1]
	tmpfs.LargePageTempFiles = []probe.TempFileResult{{FileSizeBytes: 4 << 20, BlockSizeBytes: 64 << 10,
		Unsupported: "the node's kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage/shmem_enabled)"}}
	return []probe.TargetResult{tmpfs}
}

// The temporary-file rows compare the disk with both tmpfs variants, per size and over every size,
// with the ratios the NodeIOProfile's comparison holds.
func TestRenderTableComparesTempFiles(t *testing.T) {
	res := fixtureResult()
	table := renderTable(res)
	c := res.Comparison
	if c.TempFileRatio == "" || c.LargePageTempFileRatio == "" {
		t.Fatalf("the fixture has no temporary-file ratios: %+v", c)
	}
	for _, want := range []string{
		"temp files, all sizes ", " " + c.TempFileRatio + "\n",
		"temp files, all sizes, huge=within_size ", " " + c.LargePageTempFileRatio + "\n",
		"Large pages on tmpfs: shmem_enabled never, a tmpfs without huge= gets huge=never",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		5000: "5000 B", 5_000_000: "5 MB", 512 << 10: "512 KiB", 128 << 20: "128 MiB", 2 << 30: "2 GiB", 1500 << 20: "1500 MiB", 2300: "2300 B",
	} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestAlignColumnsCountsRunes(t *testing.T) {
	got := alignColumns([][]string{{"", "a"}, {"latency", "5 µs"}, {"x", "10 µs"}})
	want := "              a\n" + "latency    5 µs\n" + "x         10 µs\n"
	if got != want {
		t.Errorf("alignColumns =\n%s, want\n%s", got, want)
	}
}

// On a virtual machine that hands free memory back to its host, the table says why its buffered
// figures should not be read from one run alone; elsewhere it says nothing about it.
func TestRenderTableWarnsOfFreePageReporting(t *testing.T) {
	res := fixtureResult()
	if strings.Contains(renderTable(res), "free page reporting") {
		t.Error("the table warns of free page reporting on a machine without it")
	}
	res.FreePageReporting = true
	if !strings.Contains(renderTable(res), "free page reporting: buffered figures vary from run to run") {
		t.Errorf("the table does not warn of free page reporting:\n%s", renderTable(res))
	}
}
