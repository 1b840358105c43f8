package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fio samples in testdata were captured from fio 3.33 with the benchmark's own job options.
func TestParseFio(t *testing.T) {
	tests := []struct {
		file   string
		prefix string
		want   FioResult
	}{
		{file: "fio-fdatasync.json", want: FioResult{
			WriteBytesPerSecond: 766666666, WriteBytes: 4600000,
			SyncSamples: 1999, SyncP50Nanoseconds: 278, SyncP99Nanoseconds: 532,
		}},
		{file: "fio-write.json", want: FioResult{WriteBytesPerSecond: 1789569706, WriteBytes: 268435456}},
		{file: "fio-write.json", prefix: "fio: this platform does not support process shared mutexes, forcing use of threads.\n",
			want: FioResult{WriteBytesPerSecond: 1789569706, WriteBytes: 268435456}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseFio(append([]byte(tt.prefix), b...))
			if err != nil {
				t.Fatalf("ParseFio: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFio (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFioErrors(t *testing.T) {
	tests := map[string]string{
		"no JSON":            "fio: failed to open file\n",
		"no job":             `{"jobs": []}`,
		"a failed job":       `{"jobs": [{"jobname": "bench", "error": 5}]}`,
		"missing percentile": `{"jobs": [{"jobname": "bench", "sync": {"lat_ns": {"N": 10, "percentile": {"50.000000": 100}}}}]}`,
		"truncated":          `{"jobs": [{"jobname": `,
	}
	for name, out := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseFio([]byte(out)); err == nil {
				t.Errorf("ParseFio(%q) succeeded, want an error", out)
			}
		})
	}
}

func TestParseDD(t *testing.T) {
	stderr := "2+0 records in\n2+0 records out\n268435456 bytes (268 MB, 256 MiB) copied, 0.373641 s, 718 MB/s\n"
	n, rate, err := ParseDD(stderr)
	if err != nil {
		t.Fatalf("ParseDD: %v", err)
	}
	if n != 268435456 || !near(rate, 268435456/0.373641) {
		t.Errorf("ParseDD = %d bytes, %v B/s; want 268435456 bytes, %v B/s", n, rate, 268435456/0.373641)
	}
	if _, _, err := ParseDD("dd: failed to open 'x': No such file or directory\n"); err == nil {
		t.Error("ParseDD accepted output without a summary")
	}
	// dd switches to scientific notation for very short copies.
	if _, rate, err := ParseDD("4096 bytes (4.1 kB, 4.0 KiB) copied, 2.5e-05 s, 164 MB/s\n"); err != nil || !near(rate, 4096/2.5e-05) {
		t.Errorf("ParseDD with an exponent = %v, %v", rate, err)
	}
}

func TestParseHdparm(t *testing.T) {
	tests := []struct {
		out   string
		bytes int64
		rate  float64
	}{
		{"\n/dev/loop1:\n Timing buffered disk reads: 1024 MB in  1.35 seconds = 756.76 MB/sec\n", 1 << 30, 756.76 * (1 << 20)},
		{"\n/dev/sdb:\n Timing buffered disk reads:   2 MB in  3.05 seconds = 671.48 kB/sec\n", 2 << 20, 671.48 * (1 << 10)},
		{" Timing O_DIRECT disk reads: 3000 MB in  3.00 seconds = 999.90 MB/sec\n", 3000 << 20, 999.90 * (1 << 20)},
	}
	for _, tt := range tests {
		n, rate, err := ParseHdparm(tt.out)
		if err != nil || n != tt.bytes || !near(rate, tt.rate) {
			t.Errorf("ParseHdparm(%q) = %d, %v, %v; want %d, %v", strings.TrimSpace(tt.out), n, rate, err, tt.bytes, tt.rate)
		}
	}
	if _, _, err := ParseHdparm("/dev/loop1: No such file or directory\n"); err == nil {
		t.Error("ParseHdparm accepted output without a timing line")
	}
}

func near(a, b float64) bool { return a > b*(1-1e-9) && a < b*(1+1e-9) }
