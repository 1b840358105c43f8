package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/node-agent/probe"
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

// A reference shown for context gets no verdict and is not counted, however far off it is; the
// same figures against a real reference fail.
func TestContextReferencesAreNotJudged(t *testing.T) {
	m := Metric{ID: "churn-5000-create", Unit: unitFiles, Class: Throughput}
	for _, tc := range []struct {
		context, want string
	}{{"", Fail}, {"does more work", ForContext}} {
		s := &Series{
			ID: "churn-5000/go-os-loop", Target: &Target{Name: "tmpfs"}, Metrics: []Metric{m},
			References: []Runner{{Tool: "go-os-loop", Provides: []string{m.ID}, ForContext: tc.context}},
		}
		cs := comparisons(SeriesResult{Series: s, Ours: []Figures{{m.ID: 140}}, Refs: [][]Figures{{{m.ID: 100}}}})
		if len(cs) != 1 || cs[0].Verdict != tc.want {
			t.Fatalf("context %q: comparisons = %+v, want one with verdict %q", tc.context, cs, tc.want)
		}
		tl := tally(cs)
		if wantTotal := map[bool]int{true: 0, false: 1}[tc.context != ""]; len(tl) != 1 || tl[0].total != wantTotal {
			t.Errorf("context %q: tally = %+v, want %d judged", tc.context, tl, wantTotal)
		}
	}
	if !strings.Contains(osLoopRunner("/d", probe.ChurnSize{FileBytes: 5000, Files: 2}, time.Second, 4096).ForContext, "os package") {
		t.Error("the os loop is not marked as shown for context")
	}
}
