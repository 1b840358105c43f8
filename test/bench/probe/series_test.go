package main

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// One run of ours feeds every reference of its series; each reference is compared only on the
// metrics it reports.
func TestComparisonsMatchEachReferenceToItsMetrics(t *testing.T) {
	s := &Series{
		ID: "seq-write/fio", Target: &Target{Name: "disk"},
		Metrics: []Metric{
			{ID: mSeqBuffered, Unit: unitBytes, Class: Throughput},
			{ID: mSeqFdatasync, Unit: unitBytes, Class: Throughput},
		},
		References: []Runner{
			{Tool: "fio", Command: "fio buffered", Provides: []string{mSeqBuffered}},
			{Tool: "fio", Command: "fio end_fsync", Provides: []string{mSeqFdatasync}},
		},
	}
	r := SeriesResult{
		Series: s,
		Ours: []Figures{
			{mSeqBuffered: 100, mSeqFdatasync: 50},
			{mSeqBuffered: 104, mSeqFdatasync: 52},
			{mSeqBuffered: 96, mSeqFdatasync: 48},
		},
		Refs: [][]Figures{
			{{mSeqBuffered: 100}, {mSeqBuffered: 100}, {mSeqBuffered: 100}},
			{{mSeqFdatasync: 80}, {mSeqFdatasync: 80}, {mSeqFdatasync: 80}},
		},
	}
	type row struct {
		Metric, Command, Verdict string
		Ratio                    float64
		Ours, Ref                []float64
	}
	var got []row
	for _, c := range comparisons(r) {
		got = append(got, row{c.Metric, c.ReferenceCommand, c.Verdict, value(c.Ratio), c.OursSamples, c.ReferenceSamples})
	}
	want := []row{
		{mSeqBuffered, "fio buffered", Pass, 1, []float64{100, 104, 96}, []float64{100, 100, 100}},
		{mSeqFdatasync, "fio end_fsync", Fail, 0.625, []float64{50, 52, 48}, []float64{80, 80, 80}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("comparisons (-want +got):\n%s", diff)
	}
}

func TestComparisonsOfAnAbortedSeriesCarryTheError(t *testing.T) {
	s := &Series{
		ID: "fdatasync/fio", Target: &Target{Name: "tmpfs"},
		Metrics:    []Metric{{ID: mFsyncP99, Unit: unitMicros, Class: Latency, Resolution: 1}},
		References: []Runner{{Tool: "fio", Provides: []string{mFsyncP99}}},
	}
	cs := comparisons(SeriesResult{Series: s, Ours: []Figures{{mFsyncP99: 1}}, Refs: [][]Figures{nil}, Err: errors.New("fio failed")})
	if len(cs) != 1 || cs[0].Verdict != NotMeasured || cs[0].Error != "fio failed" || cs[0].Ratio != nil {
		t.Errorf("comparisons = %+v, want one unmeasured comparison carrying the error", cs)
	}
}
