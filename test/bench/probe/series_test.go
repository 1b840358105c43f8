package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/test/bench/method"
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
		ours, refs := []Figures{{m.ID: 140}, {m.ID: 141}, {m.ID: 139}}, []Figures{{m.ID: 100}, {m.ID: 101}, {m.ID: 99}}
		cs := comparisons(SeriesResult{Series: s, Ours: ours, Refs: [][]Figures{refs}})
		if len(cs) != 1 || cs[0].Verdict != tc.want {
			t.Fatalf("context %q: comparisons = %+v, want one with verdict %q", tc.context, cs, tc.want)
		}
		tl := tally(&Report{Comparisons: cs})
		if wantTotal := map[bool]int{true: 0, false: 1}[tc.context != ""]; len(tl) != 1 || tl[0].judged() != wantTotal {
			t.Errorf("context %q: tally = %+v, want %d judged", tc.context, tl, wantTotal)
		}
	}
	if !strings.Contains(osLoopRunner("/d", probe.ChurnSize{FileBytes: 5000, Files: 2}, time.Second, 4096).ForContext, "os package") {
		t.Error("the os loop is not marked as shown for context")
	}
}

// The probe and the references run in an order drawn anew for each round from the seed, each
// run's figures land with the runner that made them, and every round records its order and the
// machine's conditions.
func TestRunSeriesOrdersRoundsFromTheSeed(t *testing.T) {
	runner := func(tool string, v float64) Runner {
		return Runner{Tool: tool, Provides: []string{"m"}, Run: func(context.Context) (Figures, error) { return Figures{"m": v}, nil }}
	}
	s := &Series{
		ID: "x", Target: &Target{Name: "disk", Path: t.TempDir()}, Metrics: []Metric{{ID: "m", Class: Throughput}},
		Ours: runner("probe", 1), References: []Runner{runner("fio", 2), runner("dd", 3)},
	}
	run := func() SeriesResult {
		return runSeries(context.Background(), s, 8, method.NewOrder(11), 0, map[string]string{"fio": "fio-3.33"}, func(string, ...any) {})
	}
	r := run()
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := pick(r.Ours, "m"); !slices.Equal(got, []float64{1, 1, 1, 1, 1, 1, 1, 1}) {
		t.Errorf("the probe's figures are %v", got)
	}
	if got := pick(r.Refs[1], "m"); len(got) != 8 || got[0] != 3 {
		t.Errorf("dd's figures are %v", got)
	}
	firsts := map[string]int{}
	for _, o := range r.Orders {
		firsts[o[0]]++
	}
	if len(r.Orders) != 8 || len(firsts) < 2 {
		t.Errorf("orders %v: want 8 rounds, not always the same tool first", r.Orders)
	}
	if len(r.Conditions) != 8 || r.Conditions[0].Versions["fio"] != "fio-3.33" || r.Seed != 11 {
		t.Errorf("conditions %d, seed %d: want one per round, with the tools' versions", len(r.Conditions), r.Seed)
	}
	if again := run(); !cmp.Equal(again.Orders, r.Orders) {
		t.Errorf("the same seed ran another order: %v, then %v", r.Orders, again.Orders)
	}
	cs := comparisons(r)
	if len(cs) != 2 || cs[0].Interval == nil || cs[0].Difference != method.Lower || len(cs[0].RoundOrders) != 8 {
		t.Errorf("comparisons %+v: want an interval and a verdict for each reference, with the rounds' orders", cs)
	}
}
