package main

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/test/bench/chart"
	"github.com/dbtune/scratch-operator/test/bench/method"
)

func ptr(x float64) *float64 { return &x }

// chartComparisons has what the chart must lay out: two classes, two targets, a series measured
// on the disk only, a failure and one side without a figure.
func chartComparisons() []Comparison {
	return []Comparison{
		{Target: "tmpfs", Series: "seq-write/fio", Metric: mSeqBuffered, MetricLabel: "buffered write", Unit: unitBytes, Class: Throughput, Tolerance: 0.1,
			ReferenceTool: "fio", OursMedian: ptr(2 << 30), ReferenceMedian: ptr(1 << 30), Ratio: ptr(2), Verdict: Fail},
		{Target: "tmpfs", Series: "fdatasync/fio", Metric: "fdatasync-p50", MetricLabel: "fdatasync p50", Unit: unitMicros, Class: Latency, Tolerance: 0.2,
			ReferenceTool: "fio", OursMedian: ptr(1), ReferenceMedian: ptr(0.278), Ratio: ptr(3.597), Verdict: WithinUnitOf},
		{Target: "disk", Series: "seq-write/fio", Metric: mSeqBuffered, MetricLabel: "buffered write", Unit: unitBytes, Class: Throughput, Tolerance: 0.1,
			ReferenceTool: "fio", Verdict: NotMeasured},
		{Target: "disk", Series: "device-read/hdparm", Metric: mDevice, MetricLabel: "device read", Unit: unitBytes, Class: Throughput, Tolerance: 0.1,
			ReferenceTool: "hdparm", OursMedian: ptr(744 << 20), ReferenceMedian: ptr(749 << 20), Ratio: ptr(0.993), Verdict: Pass},
		{Target: "disk", Series: "cold-read/fio", Metric: mColdRead, MetricLabel: "cold read", Unit: unitBytes, Class: Throughput, Tolerance: 0.1,
			ReferenceTool: "fio", OursMedian: ptr(1111 << 20), ReferenceMedian: ptr(1180 << 20), Ratio: ptr(0.942), Verdict: Inconclusive},
	}
}

// Every round is drawn as its own ratio beside the ratio of the medians, with the interval.
func TestAccuracyChartDrawsEveryRound(t *testing.T) {
	ours, ref := []float64{100, 104, 96}, []float64{100, 100, 120}
	c := Comparison{Target: "disk", Series: "s", Metric: mSeqBuffered, MetricLabel: "buffered write", Unit: unitBytes, Class: Throughput,
		Tolerance: 0.1, ReferenceTool: "fio", OursSamples: ours, ReferenceSamples: ref, OursMedian: ptr(100), ReferenceMedian: ptr(100),
		Ratio: ptr(1), Verdict: Pass, Interval: &method.Interval{Ratio: 1, Low: 0.8, High: 1.04}}
	b := accuracyChart(&Report{Rounds: 3, Comparisons: []Comparison{c}}).Panels[0].Groups[0].Bars[0]
	if diff := cmp.Diff([]float64{1, 1.04, 0.8}, b.Points, cmp.Comparer(sameFloat)); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	if b.Low != 0.8 || b.High != 1.04 {
		t.Errorf("whisker %v–%v, want the interval 0.8–1.04", b.Low, b.High)
	}
}

// A replot draws the chart of a published results file beside it, under its name, and writes
// nothing else.
func TestReplotNamesTheChartAfterItsInput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "probe-accuracy.json")
	if err := writeJSON(path, &Report{Rounds: 3, Comparisons: chartComparisons()}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if _, err := replot(&config{replot: path}, t.Logf); err != nil {
		t.Fatalf("replot: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"probe-accuracy.json", "probe-accuracy.png"}, names); diff != "" {
		t.Errorf("files after the replot (-want +got):\n%s", diff)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Error("the replot rewrote its input")
	}
}

func TestAccuracyChartLayout(t *testing.T) {
	r := &Report{GeneratedAt: time.Date(2026, 11, 30, 0, 52, 58, 0, time.UTC), Rounds: 5, Comparisons: chartComparisons(),
		Machine: Machine{CPUModel: "Xeon", Cores: 2, MemoryBytes: 24 << 30, Kernel: "6.18", Virtualized: "virtual machine"}}
	ch := accuracyChart(r)
	if diff := cmp.Diff([]string{"tmpfs", "disk"}, ch.Series); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	if want := "Xeon, 2 cores, 24.00 GiB RAM, Linux 6.18, virtual machine"; ch.Machine != want || !ch.Measured.Equal(r.GeneratedAt) {
		t.Errorf("caption: %q, %v; want %q, %v", ch.Machine, ch.Measured, want, r.GeneratedAt)
	}
	nan := math.NaN()
	want := []chart.Panel{
		{Title: "Throughput (tolerance ±10%)", Band: &chart.Band{Low: 0.9, High: 1.1, Label: "tolerance band: a pass needs the whole interval inside"}, Groups: []chart.Group{
			{Label: "buffered write · fio", Bars: []chart.Bar{
				{Value: 2, Label: "2.000 FAIL: 2048.0 MiB/s vs 1024.0 MiB/s", Highlight: true},
				{Value: nan, Label: "not measured"},
			}},
			{Label: "device read · hdparm", Bars: []chart.Bar{{Value: nan}, {Value: 0.993, Label: "0.993 pass: 744.0 MiB/s vs 749.0 MiB/s"}}},
			{Label: "cold read · fio", Bars: []chart.Bar{{Value: nan}, {Value: 0.942, Label: "0.942 inconclusive: 1111.0 MiB/s vs 1180.0 MiB/s"}}},
		}},
		{Title: "fdatasync latency (tolerance ±20%)", Band: &chart.Band{Low: 0.8, High: 1.2, Label: "tolerance band: a pass needs the whole interval inside"}, Groups: []chart.Group{
			{Label: "fdatasync p50 · fio", Bars: []chart.Bar{{Value: 3.597, Label: "3.597 pass (within resolution): 1.0 µs vs 0.3 µs"}}},
		}},
	}
	for i := range ch.Panels {
		ch.Panels[i].ValueAxis = "" // checked below, once
	}
	if diff := cmp.Diff(want, ch.Panels, cmp.Comparer(sameFloat)); diff != "" {
		t.Errorf("panels (-want +got):\n%s", diff)
	}
}

// Results recorded before the benchmark stopped timing fdatasync on tmpfs still hold it; the chart
// draws no ratio of those two no-ops, and keeps the disk's.
func TestAccuracyChartLeavesOutFdatasyncOnTmpfs(t *testing.T) {
	fsync := func(target string) Comparison {
		return Comparison{Target: target, Series: "fdatasync/fio", Metric: mFsyncP99, MetricLabel: "fdatasync p99", Unit: unitMicros,
			Class: Latency, Tolerance: 0.2, ReferenceTool: "fio", OursMedian: ptr(1), ReferenceMedian: ptr(0.5), Ratio: ptr(2), Verdict: WithinUnitOf}
	}
	r := &Report{Targets: []TargetInfo{{Name: "tmpfs", Kind: probe.KindTmpfs}, {Name: "disk", Kind: probe.KindDisk}},
		Comparisons: []Comparison{fsync("tmpfs"), fsync("disk")}}
	ch := accuracyChart(r)
	if diff := cmp.Diff([]string{"disk"}, ch.Series); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	if len(ch.Panels) != 1 || len(ch.Panels[0].Groups) != 1 || len(ch.Panels[0].Groups[0].Bars) != 1 {
		t.Errorf("panels %+v, want the disk's fdatasync bar alone", ch.Panels)
	}
}

// sameFloat treats NaNs, "no figure", as equal, and rounding as no difference.
func sameFloat(a, b float64) bool {
	return (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) < 1e-9
}

func TestAccuracyChartAxisHasItsUnit(t *testing.T) {
	for _, p := range accuracyChart(&Report{Comparisons: chartComparisons()}).Panels {
		if p.ValueAxis != "probe median / reference median (ratio, 1 = same figure)" {
			t.Errorf("panel %q: value axis %q", p.Title, p.ValueAxis)
		}
	}
}

func TestWriteOutputsDrawsAPNG(t *testing.T) {
	dir := t.TempDir()
	r := &Report{Rounds: 5, Comparisons: chartComparisons()}
	if err := writeOutputs(dir, r, t.Logf); err != nil {
		t.Fatalf("writeOutputs: %v", err)
	}
	f, err := os.Open(filepath.Join(dir, "results.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("results.png is not a PNG: %v", err)
	}
	w, h, err := accuracyChart(r).Size()
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("results.png is %v, want %dx%d", b, w, h)
	}
}

// A run whose --only matched nothing still writes its JSON, and no chart of nothing.
func TestWriteOutputsWithoutComparisons(t *testing.T) {
	dir := t.TempDir()
	if err := writeOutputs(dir, &Report{Rounds: 5}, t.Logf); err != nil {
		t.Fatalf("writeOutputs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err != nil {
		t.Errorf("no results.json: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.png")); !os.IsNotExist(err) {
		t.Errorf("results.png of no comparisons: %v", err)
	}
}
