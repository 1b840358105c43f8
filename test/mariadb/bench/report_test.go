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
		"| alter: time of the ADD INDEX | 32.00 s | 16.00 s | 2.00x worse |",
		// The failed run is left out of the median of the other two, and said.
		"| alter-ram: ADD INDEX, innodb_tmpdir in RAM | 11.50 s (1 of 3 failed) | – | n/a |",
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
