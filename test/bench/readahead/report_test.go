package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

func TestParseValues(t *testing.T) {
	got, err := parseValues("4096, 128,131072,1024")
	if want := []int64{128, 1024, 4096, 131072}; err != nil || !slices.Equal(got, want) {
		t.Errorf("parseValues = %v, %v, want %v", got, err, want)
	}
	for _, bad := range []string{"", "1024,4096", "128,x", "128,2", "128,2097152", "128,128"} {
		if got, err := parseValues(bad); err == nil {
			t.Errorf("parseValues(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseFlags(t *testing.T) {
	var stderr strings.Builder
	c, err := parseFlags([]string{"-seed", "9", "-workloads", "backup,scan-odirect"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.values, []int64{128, 1024, 4096, 131072}) || c.rounds != 5 || c.scanRounds != 5 || c.seed != 9 {
		t.Errorf("defaults: values %v, rounds %d, scan rounds %d, seed %d", c.values, c.rounds, c.scanRounds, c.seed)
	}
	if !c.selected(wBackup) || !c.selected(wScanODirect) || c.selected(wLog) {
		t.Errorf("-workloads backup,scan-odirect selects %v", c.workloads)
	}
	for _, bad := range [][]string{
		{"-rounds", "2"}, {"-scan-rounds", "1"}, {"-workloads", "backup,copy"}, {"-table-mib", "100"},
		{"-values", "1024"}, {"-volume-gib", "2"}, {"extra"},
	} {
		if _, err := parseFlags(bad, &stderr); err == nil {
			t.Errorf("parseFlags(%q) accepted it", bad)
		}
	}
}

func TestRandomOffsets(t *testing.T) {
	const size, block = 64 << 20, randomBlock
	a := randomOffsets(5, size, 1001, 4)
	if diff := cmp.Diff(a, randomOffsets(5, size, 1001, 4)); diff != "" {
		t.Errorf("the same seed drew other offsets (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, randomOffsets(6, size, 1001, 4)) {
		t.Error("another seed drew the same offsets")
	}
	var all []int64
	for i, list := range a {
		if want := 250 + btoi(i == 0); len(list) != want {
			t.Errorf("worker %d got %d offsets, want %d", i, len(list), want)
		}
		all = append(all, list...)
	}
	for _, off := range all {
		if off%block != 0 || off < 0 || off+block > size {
			t.Fatalf("offset %d is not a whole block inside the file", off)
		}
	}
	slices.Sort(all)
	if distinct := len(slices.Compact(all)); distinct < 800 {
		t.Errorf("only %d of 1001 offsets differ, where about 888 would of 4096 blocks drawn at random", distinct)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestKiBText(t *testing.T) {
	for kib, want := range map[int64]string{128: "128 KiB", 1024: "1 MiB", 4096: "4 MiB", 131072: "128 MiB", 1536: "1536 KiB"} {
		if got := kibText(kib); got != want {
			t.Errorf("kibText(%d) = %q, want %q", kib, got, want)
		}
	}
}

// sweep is a report of two workloads at three values: the sequential one twice as fast at 1 MiB
// as at 128 KiB, and no faster at 4 MiB than at 1 MiB; the random one as fast at every value but
// reading 16 times the bytes at 4 MiB.
func sweep() *Report {
	r := &Report{
		Settings:  Settings{ReadAheadKiB: []int64{128, 1024, 4096}, BaselineKiB: 128, Rounds: 5, ScanRounds: 3, Seed: 11},
		Workloads: []Workload{describe(wRandom, randomBlock, 1<<30), describe(wBackup, backupBlock, 1<<30)},
	}
	noise := []float64{1, 1.02, 0.98, 1.01, 0.99}
	for round := range 5 {
		for _, kib := range r.Settings.ReadAheadKiB {
			n := noise[(round+int(kib))%5]
			speed := 60.0
			if kib > 128 {
				speed = 120
			}
			r.Runs = append(r.Runs, fakeRun(wBackup, kib, round, speed*n, 1<<30, 1<<30), fakeRun(wRandom, kib, round, 40*n, 64<<20, randomDeviceBytes(kib)))
		}
	}
	r.summarize()
	return r
}

func randomDeviceBytes(kib int64) int64 {
	if kib == 4096 {
		return 1 << 30
	}
	return 64 << 20
}

func fakeRun(workload string, kib int64, round int, mibPerSecond float64, requested, device int64) Run {
	return Run{
		Workload: workload, ReadAheadKiB: kib, Round: round + 1, Position: 1,
		Seconds: float64(requested) / (mibPerSecond * (1 << 20)), RequestedBytes: requested, ReadBytesPerSecond: mibPerSecond * (1 << 20),
		DeviceReadBytes: device, DeviceReads: device / (512 << 10), CachedAfterBytes: device,
		Conditions: method.Conditions{Kernel: "6.18.44", CPUModel: "AMD EPYC", Cgroup: "v2", LoadAverage1m: 0.5},
	}
}

func TestSummarizeComparesEachValueWithTheBaseline(t *testing.T) {
	r := sweep()
	if s := r.summary(wBackup, 1024); s == nil || s.Runs != 5 || s.ReadBytesPerSecond != 120*(1<<20) || s.AmplificationRatio != 1 {
		t.Errorf("backup at 1 MiB: %+v", s)
	}
	if s := r.summary(wRandom, 4096); s == nil || s.AmplificationRatio != 16 {
		t.Errorf("random at 4 MiB: %+v, want an amplification of 16", s)
	}
	for _, tc := range []struct {
		workload string
		kib      int64
		figure   string
		verdict  method.Verdict
		ratio    float64
	}{
		{wBackup, 1024, figureThroughput, method.Higher, 2},
		{wBackup, 4096, figureThroughput, method.Higher, 2},
		{wBackup, 4096, figureDeviceBytes, method.NoDifference, 1},
		{wRandom, 1024, figureThroughput, method.NoDifference, 1},
		{wRandom, 4096, figureDeviceBytes, method.Higher, 16},
	} {
		c := r.comparison(tc.workload, tc.kib, tc.figure)
		if c == nil || c.Interval == nil {
			t.Errorf("%s at %d KiB, %s: no interval (%+v)", tc.workload, tc.kib, tc.figure, c)
			continue
		}
		if c.Verdict != tc.verdict || c.Interval.Ratio != tc.ratio {
			t.Errorf("%s at %d KiB, %s: %s %s, want %.2fx %s", tc.workload, tc.kib, tc.figure, c.String(), c.Verdict, tc.ratio, tc.verdict)
		}
	}
	if c := r.comparison(wBackup, 128, figureThroughput); c != nil {
		t.Errorf("the baseline is compared with itself: %+v", c)
	}
}

func TestMarkdown(t *testing.T) {
	md := sweep().markdown()
	for _, want := range []string{
		"| backup: sequential 1 MiB reads | 128 KiB | 5 | 17.07 s | 60.0 MiB/s | – | baseline | 1024.0 MiB | – | baseline |",
		"| backup: sequential 1 MiB reads | 1 MiB | 5 | 8.53 s | 120.0 MiB/s | 2.00x (",
		") | faster | 1024.0 MiB | 1.00x (1.00–1.00) | no difference |",
		"| random: 16 KiB preads | 4 MiB | 5 |",
		"| 16.00x (16.00–16.00) | reads more |",
		"seed 11", "AMD EPYC; Linux 6.18.44; cgroup v2",
		"<details><summary>Every run</summary>",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	// The backup's rows come before the random reads', whatever order the workloads ran in.
	if strings.Index(md, "| backup: sequential") > strings.Index(md, "| random: 16 KiB preads |") {
		t.Error("the table does not list the workloads in their order")
	}
	details := strings.Index(md, "<details>")
	if details < 0 {
		t.Fatal("the Markdown has no table of every run")
	}
	runs := strings.Count(md[details:], "\n| ") - 1
	if runs != 30 {
		t.Errorf("the runs table has %d rows, want every one of the 30 runs", runs)
	}
}

func TestChartDrawsEveryRun(t *testing.T) {
	r := sweep()
	ch := sweepChart(r)
	if len(ch.Series) != 3 || !strings.Contains(ch.Series[0], "kernel default") {
		t.Errorf("series %q", ch.Series)
	}
	points := 0
	for _, g := range ch.Panels[0].Groups {
		for _, b := range g.Bars {
			points += len(b.Points)
		}
	}
	if points != len(r.Runs) {
		t.Errorf("the throughput panel draws %d runs, want all %d", points, len(r.Runs))
	}
	var png strings.Builder
	if err := ch.WritePNG(&png); err != nil {
		t.Fatal(err)
	}
}
