package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// withAlter adds alter runs to the sample: the injected variant's RAM runs fill the volume once.
func withAlter() *results {
	r := sample()
	r.Settings.AlterMiB = 256
	r.order = []string{"tmpfs", "disk"}
	for i, s := range []float64{30, 34, 32} {
		r.Runs["tmpfs"] = append(r.Runs["tmpfs"], runResult{Workload: "alter", Seconds: s})
		r.Runs["disk"] = append(r.Runs["disk"], runResult{Workload: "alter", Seconds: s / 2})
		ram := runResult{Workload: alterRAM, Seconds: 10 + float64(i)}
		if i == 0 {
			ram = runResult{Workload: alterRAM, Failed: "Error 1021: Disk full"}
		}
		r.Runs["tmpfs"] = append(r.Runs["tmpfs"], ram)
	}
	r.summarize()
	return r
}

func TestAlterRows(t *testing.T) {
	r := withAlter()
	var b strings.Builder
	r.writeTable(&b)
	for _, want := range []string{
		"| alter: time of the ADD INDEX | 32.00 s | 16.00 s | 2.00x (",
		") | tmpfs worse |",
		// The failed run is left out of the median of the other two, and said.
		"| alter-ram: ADD INDEX, innodb_tmpdir in RAM | 11.50 s (1 of 3 failed) | – | – | – |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "bigsort") {
		t.Errorf("table has rows of a workload that did not run:\n%s", b.String())
	}
}

func TestAllRunsFailed(t *testing.T) {
	r := withAlter()
	for i := range r.Runs["tmpfs"] {
		if r.Runs["tmpfs"][i].Workload == alterRAM {
			r.Runs["tmpfs"][i].Failed = "Error 1021: Disk full"
		}
	}
	r.summarize()
	row := tableRows[rowIndex(t, "alter-ram: ADD INDEX, innodb_tmpdir in RAM")]
	if got := r.cell("tmpfs", row); got != "failed (full)" {
		t.Errorf("cell of a workload whose every run failed = %q", got)
	}
	if b := spread(r.Runs["tmpfs"], measure{workload: alterRAM, value: func(x runResult) float64 { return x.Seconds }}); b.Label != "failed: full" {
		t.Errorf("bar of failed runs = %+v, want no bar, marked as failed", b)
	}
}

// The verdict follows the interval, not the size of the ratio: no fixed threshold decides it.
func TestVerdictFollowsTheInterval(t *testing.T) {
	r := sample()
	r.Runs = map[string][]runResult{}
	// Transactions per second 6 % apart in runs that spread by ±25 %, and p95 latencies 2 % apart
	// in runs that agree to a tenth of a percent.
	for i, tps := range [][2]float64{{1027, 1029}, {788, 923}, {1341, 1418}, {1100, 960}, {950, 1200}} {
		p95 := 30 + 0.01*float64(i)
		r.Runs["tmpfs"] = append(r.Runs["tmpfs"], runResult{Workload: "mixed", TPS: tps[0], P95Millis: p95 * 1.02, P99Millis: 60, DeviceWriteMiB: float64(i)})
		r.Runs["disk"] = append(r.Runs["disk"], runResult{Workload: "mixed", TPS: tps[1], P95Millis: p95, P99Millis: 60, DeviceWriteMiB: 100})
	}
	r.summarize()
	var b strings.Builder
	r.writeTable(&b)
	for _, want := range []string{
		"| mixed: sysbench transactions/s | 1027.00 | 1029.00 | 1.00x (",
		") | no difference |\n| mixed: sysbench p95 latency |",
		") | tmpfs worse |\n| mixed: sysbench p99 latency |",
		"| mixed: sysbench p99 latency | 60.00 ms | 60.00 ms | 1.00x (1.00–1.00) | no difference |",
		// A run that wrote nothing has no ratio: said, not hidden behind a threshold.
		"| mixed: data volume writes | 2.00 MiB | 100.00 MiB | – | no ratio: a run is 0 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if len(r.Comparisons) != 5 {
		t.Errorf("%d comparisons recorded for the JSON, want one per row", len(r.Comparisons))
	}
}

// Every run is published, in the order run, with its place in its round.
func TestEveryRunIsListed(t *testing.T) {
	r := sample()
	r.Settings.Seed = 5
	for i := range r.Runs["disk"] {
		r.Runs["disk"][i].Round, r.Runs["disk"][i].Position = i/2+1, 1
		r.Runs["tmpfs"][i].Round, r.Runs["tmpfs"][i].Position = i/2+1, 2
	}
	var b strings.Builder
	r.writeRuns(&b)
	for _, want := range []string{
		"<summary>Every run of temp (6)</summary>",
		"| 1 | disk | 1st | 18.00 s | 0.00 | 0.00 MiB | not recorded |\n| 1 | tmpfs | 2nd | 9.00 s |",
		"| 3 | tmpfs | 2nd | 10.00 s |",
		"| 2 | disk | 1st | 2000.00 | 31.00 ms | 61.00 ms |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("runs lack %q:\n%s", want, b.String())
		}
	}
}

func rowIndex(t *testing.T, name string) int {
	t.Helper()
	for i, row := range tableRows {
		if row.name == name {
			return i
		}
	}
	t.Fatalf("no table row %q", name)
	return -1
}

func TestFilledUp(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&mysql.MySQLError{Number: 1021, Message: "Disk full (/var/lib/mysql-tmp/#sql-temptable); waiting for someone to free some space"}, true},
		{fmt.Errorf("the large sort: %w", &mysql.MySQLError{Number: 1114, Message: "The table '#sql-1_2' is full"}), true},
		{&mysql.MySQLError{Number: 1064, Message: "You have an error in your SQL syntax"}, false},
		{errors.New("invalid connection"), false},
	} {
		if got := filledUp(tc.err); got != tc.want {
			t.Errorf("filledUp(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestWorkloads(t *testing.T) {
	var names []string
	for _, w := range workloads(config{bigSortMiB: 0, alterMiB: 64}) {
		names = append(names, w.name+"/"+w.only)
	}
	if got := strings.Join(names, " "); got != "temp/ alter/ alter-ram/tmpfs mixed/" {
		t.Errorf("workloads = %s", got)
	}
}

func TestMysqldSize(t *testing.T) {
	for bytes, want := range map[int64]string{2560 << 20: "2560M", 4 << 30: "4G", 1536: "1536", 3 << 10: "3K", 0: "0"} {
		if got := mysqldSize(bytes); got != want {
			t.Errorf("mysqldSize(%d) = %s, want %s", bytes, got, want)
		}
	}
}

// Results on a cloud volume get their own file names, and a replot keeps the name it was given, so
// that neither overwrites the chart of the other.
func TestCloudVolumeFileNames(t *testing.T) {
	r := withAlter()
	r.Variants["tmpfs"].DataVolume = "gp3 (125 MiB/s, 3000 IOPS, 1ms per request)"
	dir := t.TempDir()
	if err := r.write(dir, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := replot(config{replot: filepath.Join(dir, "mariadb-cloudvolume.json"), out: out}, &strings.Builder{}); err != nil {
		t.Fatalf("replot: %v", err)
	}
	for _, p := range []string{filepath.Join(dir, "mariadb-cloudvolume.png"), filepath.Join(out, "mariadb-cloudvolume.png")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("no chart: %v", err)
		}
	}
}
