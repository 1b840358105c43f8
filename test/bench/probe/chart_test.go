package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/test/bench/chart"
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
		{Title: "Throughput (tolerance ±10%)", Band: &chart.Band{Low: 0.9, High: 1.1, Label: "within tolerance"}, Groups: []chart.Group{
			{Label: "buffered write · fio", Bars: []chart.Bar{
				{Value: 2, Label: "2.000 FAIL: 2048.0 MiB/s vs 1024.0 MiB/s", Highlight: true},
				{Value: nan, Label: "not measured"},
			}},
			{Label: "device read · hdparm", Bars: []chart.Bar{{Value: nan}, {Value: 0.993, Label: "0.993 pass: 744.0 MiB/s vs 749.0 MiB/s"}}},
		}},
		{Title: "fdatasync latency (tolerance ±20%)", Band: &chart.Band{Low: 0.8, High: 1.2, Label: "within tolerance"}, Groups: []chart.Group{
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
