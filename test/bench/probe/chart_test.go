package main

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBarHeight(t *testing.T) {
	tests := []struct {
		v, largest float64
		full, want int
	}{
		{50, 100, 200, 100},
		{100, 100, 200, 200},
		{150, 100, 200, 200}, // never taller than the panel
		{0, 100, 200, 0},
		{10, 0, 200, 0},
	}
	for _, tt := range tests {
		if got := barHeight(tt.v, tt.largest, tt.full); got != tt.want {
			t.Errorf("barHeight(%v, %v, %d) = %d, want %d", tt.v, tt.largest, tt.full, got, tt.want)
		}
	}
}

func TestWrap(t *testing.T) {
	got := wrap("sequential write 256M bs 128M + fdatasync", 20)
	want := []string{"sequential write", "256M bs 128M +", "fdatasync"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wrap (-want +got):\n%s", diff)
	}
}

func TestPanelsGroupTargetsOfOneMetric(t *testing.T) {
	cs := []Comparison{
		{Target: "tmpfs", Series: "seq-write/fio", Metric: mSeqBuffered, ReferenceTool: "fio"},
		{Target: "tmpfs", Series: "seq-write/fio", Metric: mSeqFdatasync, ReferenceTool: "fio"},
		{Target: "disk", Series: "seq-write/fio", Metric: mSeqBuffered, ReferenceTool: "fio"},
		{Target: "disk", Series: "seq-write/fio", Metric: mSeqFdatasync, ReferenceTool: "fio"},
		{Target: "disk", Series: "device-read/hdparm", Metric: mDevice, ReferenceTool: "hdparm"},
	}
	var got [][]string
	for _, p := range panels(cs) {
		var targets []string
		for _, c := range p.Pairs {
			targets = append(targets, c.Metric+"@"+c.Target)
		}
		got = append(got, targets)
	}
	want := [][]string{
		{mSeqBuffered + "@tmpfs", mSeqBuffered + "@disk"},
		{mSeqFdatasync + "@tmpfs", mSeqFdatasync + "@disk"},
		{mDevice + "@disk"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("panels (-want +got):\n%s", diff)
	}
}

func TestWriteChartIsAPNG(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	cs := []Comparison{
		{Target: "tmpfs", Series: "s", Metric: "m", MetricLabel: "metric", Unit: unitBytes, ReferenceTool: "fio",
			OursMedian: v(2 << 30), ReferenceMedian: v(1 << 30), Ratio: v(2), Tolerance: 0.1, Verdict: Fail},
		{Target: "disk", Series: "s", Metric: "m", MetricLabel: "metric", Unit: unitBytes, ReferenceTool: "fio",
			Tolerance: 0.1, Verdict: NotMeasured},
	}
	var buf bytes.Buffer
	if err := writeChart(&buf, "title", "subtitle", cs); err != nil {
		t.Fatalf("writeChart: %v", err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("the chart is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 2*chartMargin+chartColumns*panelWidth || b.Dy() != headerHeight+panelHeight+chartMargin {
		t.Errorf("chart is %v, want one row of %d panels", b, chartColumns)
	}
}

func TestGlyphsFitFiveColumns(t *testing.T) {
	for i, g := range glyphs {
		for row, bits := range g {
			if bits > 0x1F {
				t.Errorf("glyph %q row %d is %#x, wider than 5 pixels", rune(' '+i), row, bits)
			}
		}
	}
}
