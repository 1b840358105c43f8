package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sample is a results file as the benchmark writes it, with three runs of each workload.
func sample() *results {
	r := &results{
		Generated: time.Date(2026, 11, 29, 22, 29, 51, 0, time.UTC),
		Machine:   machine{CPUs: 2, Kernel: "6.18.44", MariaDB: "10.11.19"},
		Settings:  settings{RunsPerMeasurement: 3},
		Variants: map[string]*variant{
			"tmpfs": {TmpDir: "/var/lib/mysql-tmp", FS: "tmpfs", DataFS: "ext4"},
			"disk":  {TmpDir: "/tmp", FS: "ext4", DataFS: "ext4"},
		},
		Runs:    map[string][]runResult{},
		Medians: map[string]summary{},
		order:   []string{"tmpfs", "disk"},
	}
	for i, s := range []float64{9, 11, 10} {
		for name, f := range map[string]float64{"tmpfs": 1, "disk": 2} {
			r.Runs[name] = append(r.Runs[name],
				runResult{Workload: "temp", Seconds: s * f},
				runResult{Workload: "mixed", TPS: 1000 * f, P95Millis: 30 + float64(i), P99Millis: 60 + float64(i)})
		}
	}
	r.summarize()
	return r
}

func writeSample(t *testing.T) (string, []byte) {
	t.Helper()
	b, err := json.MarshalIndent(sample(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mariadb-tmpdir.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}

func TestChartFromResults(t *testing.T) {
	path, _ := writeSample(t)
	r, err := readResults(path)
	if err != nil {
		t.Fatalf("readResults: %v", err)
	}
	ch := r.chart()
	if got := strings.Join(ch.Series, ","); got != "tmpfs,disk" {
		t.Errorf("series %s, want the order the variants run in", got)
	}
	if ch.Machine != "2 CPUs, Linux 6.18.44, MariaDB 10.11.19" || !ch.Measured.Equal(r.Generated) {
		t.Errorf("caption: %q, %v", ch.Machine, ch.Measured)
	}
	if len(ch.Panels) != 3 {
		t.Fatalf("%d panels, want time, throughput and latency", len(ch.Panels))
	}
	for _, p := range ch.Panels {
		if !strings.Contains(p.ValueAxis, "(") {
			t.Errorf("panel %q: value axis %q has no unit", p.Title, p.ValueAxis)
		}
	}
	// The disk's temp runs took 18, 22 and 20 s: a bar at the median, a dot for every run.
	if got := ch.Panels[0].Groups[0].Bars[1]; got.Value != 20 || !slices.Equal(got.Points, []float64{18, 22, 20}) {
		t.Errorf("disk temp bar %+v, want 20 with the runs 18, 22 and 20", got)
	}
	if got := ch.Panels[2].Groups[1].Label; got != "p99" {
		t.Errorf("second latency group %q, want p99", got)
	}
}

func TestSpreadWithoutRuns(t *testing.T) {
	if b := spread(nil, panels[0].measures[0]); !math.IsNaN(b.Value) || b.High > b.Low {
		t.Errorf("spread of no runs = %+v, want no bar and no whisker", b)
	}
}

func TestReplotWritesOnlyTheChart(t *testing.T) {
	path, before := writeSample(t)
	out := t.TempDir()
	var md bytes.Buffer
	if err := replot(config{replot: path, out: out}, &md); err != nil {
		t.Fatalf("replot: %v", err)
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("replot changed its input (%v)", err)
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 || entries[0].Name() != "mariadb-tmpdir.png" {
		t.Fatalf("replot wrote %v (%v), want only mariadb-tmpdir.png", entries, err)
	}
	f, err := os.Open(filepath.Join(out, "mariadb-tmpdir.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("mariadb-tmpdir.png is not a PNG: %v", err)
	}
	if !strings.Contains(md.String(), "| mixed: sysbench p99 latency | 61.00 ms | 61.00 ms |") {
		t.Errorf("replot printed no Markdown table:\n%s", md.String())
	}
}

func TestReplotRefusesOtherResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, []byte(`{"generatedAt": "2026-11-30T00:52:58Z", "comparisons": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replot(config{replot: path, out: t.TempDir()}, &bytes.Buffer{}); err == nil {
		t.Error("replot drew a file without MariaDB runs")
	}
}
