package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProcStatCPU(t *testing.T) {
	// A command name with spaces and a closing parenthesis must not shift the fields.
	stat := "4242 (node-agent (x) y) S 1 4242 4242 0 -1 4194560 2715 0 0 0 123 45 0 0 20 0 9 0 1000 1300000000 9000 18446744073709551615\n"
	got, err := ParseProcStatCPU(stat)
	if err != nil {
		t.Fatalf("ParseProcStatCPU: %v", err)
	}
	if want := 1.68; !near(got, want) {
		t.Errorf("ParseProcStatCPU = %v, want %v (utime 123 + stime 45 ticks)", got, want)
	}
	for _, bad := range []string{"", "4242 node-agent S 1", "4242 (a) S 1 2 3"} {
		if _, err := ParseProcStatCPU(bad); err == nil {
			t.Errorf("ParseProcStatCPU(%q) succeeded, want an error", bad)
		}
	}
}

func TestParseProcStatusMemory(t *testing.T) {
	status := "Name:\tnode-agent\nVmPeak:\t 1300000 kB\nVmHWM:\t  180000 kB\nVmRSS:\t   36000 kB\nThreads:\t9\n"
	rss, hwm, err := ParseProcStatusMemory(strings.NewReader(status))
	if err != nil {
		t.Fatalf("ParseProcStatusMemory: %v", err)
	}
	if diff := cmp.Diff([2]int64{36000 * 1024, 180000 * 1024}, [2]int64{rss, hwm}); diff != "" {
		t.Errorf("ParseProcStatusMemory [rss, hwm] (-want +got):\n%s", diff)
	}
	if _, _, err := ParseProcStatusMemory(strings.NewReader("Name:\tkthreadd\nThreads:\t1\n")); err == nil {
		t.Error("ParseProcStatusMemory accepted a status without memory lines")
	}
}

func TestSummarizeIdle(t *testing.T) {
	mib := int64(1 << 20)
	samples := []Sample{
		{AtSeconds: 0.1, CPUSeconds: 0.05, RSSBytes: 20 * mib, HWMBytes: 20 * mib},
		{AtSeconds: 8.0, CPUSeconds: 3.00, RSSBytes: 160 * mib, HWMBytes: 165 * mib},
		{AtSeconds: 8.1, CPUSeconds: 3.00, RSSBytes: 36 * mib, HWMBytes: 165 * mib},
		{AtSeconds: 18.0, CPUSeconds: 3.01, RSSBytes: 35 * mib, HWMBytes: 165 * mib},
		{AtSeconds: 28.0, CPUSeconds: 3.02, RSSBytes: 37 * mib, HWMBytes: 165 * mib},
	}
	got, err := SummarizeIdle(samples, 8.05)
	if err != nil {
		t.Fatalf("SummarizeIdle: %v", err)
	}
	if got.FirstRunCPUSeconds != 3.0 || got.FirstRunPeakRSSBytes != 165*mib {
		t.Errorf("first run = %v CPU s, %d bytes peak; want 3 CPU s, %d bytes", got.FirstRunCPUSeconds, got.FirstRunPeakRSSBytes, 165*mib)
	}
	if !near(got.IdleSeconds, 20) || !near(got.IdleCPUSeconds, 0.02) || !near(got.IdleCPUPercent, 0.1) {
		t.Errorf("idle = %v s, %v CPU s, %v%%; want 20 s, 0.02 CPU s, 0.1%%", got.IdleSeconds, got.IdleCPUSeconds, got.IdleCPUPercent)
	}
	if got.IdleMedianRSSBytes != 36*mib || got.IdleMaxRSSBytes != 37*mib {
		t.Errorf("idle RSS = median %d, max %d; want %d, %d", got.IdleMedianRSSBytes, got.IdleMaxRSSBytes, 36*mib, 37*mib)
	}
	if _, err := SummarizeIdle(samples[:2], 8.05); err == nil {
		t.Error("SummarizeIdle accepted no samples after the first run")
	}
}
