package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// A results file is judged again from its rounds: the verdicts, medians and intervals it holds
// are not read, and a file written before the verdict followed the interval gets the interval's.
func TestReadResultsJudgesTheRoundsAgain(t *testing.T) {
	tight := []float64{100, 101, 99, 100, 102, 98}
	wide := []float64{100, 160, 60, 100, 150, 70}
	ahead := []float64{130, 131, 129, 130, 132, 128}
	row := func(metric, tool string, class Class, ours, ref []float64, recorded string) Comparison {
		return Comparison{Target: "disk", Metric: metric, MetricLabel: metric, Unit: unitBytes, Class: class, Tolerance: 0.5,
			ReferenceTool: tool, OursSamples: ours, ReferenceSamples: ref, Ratio: ptr(1), Verdict: recorded, Reason: "as recorded"}
	}
	path := filepath.Join(t.TempDir(), "old.json")
	r := &Report{Rounds: 6, Comparisons: []Comparison{
		row(mSeqBuffered, "fio", Throughput, tight, tight, Fail),
		row(mSeqBuffered, "dd", Throughput, wide, tight, Pass),
		row(mDirect, "fio", Throughput, ahead, tight, Pass),
		row(mColdRead, "fio", Throughput, tight[:2], tight[:2], Pass),
		row(churnMetric(probe.DefaultOptions().Churn[0], "create"), "go-os-loop", Throughput, ahead, tight, Fail),
		row(mFsyncP50, "fio", Latency, []float64{1, 1, 1, 1}, []float64{0.3, 0.28, 0.31, 0.3}, Fail),
	}}
	if err := writeJSON(path, r); err != nil {
		t.Fatal(err)
	}
	got, err := readResults(path)
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []string
	for _, c := range got.Comparisons {
		verdicts = append(verdicts, c.Verdict)
		if c.Reason == "as recorded" || c.Tolerance != c.Class.Tolerance() {
			t.Errorf("%s against %s: reason %q, tolerance %v: read from the file", c.Metric, c.ReferenceTool, c.Reason, c.Tolerance)
		}
	}
	want := []string{Pass, Inconclusive, Fail, Inconclusive, ForContext, WithinUnitOf}
	if diff := cmp.Diff(want, verdicts); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if c := got.Comparisons[2]; c.Interval == nil || value(c.Ratio) != 1.3 {
		t.Errorf("the ratio and interval were not drawn from the rounds: %v, %+v", value(c.Ratio), c.Interval)
	}
	if c := got.Comparisons[3]; c.Interval != nil || !strings.Contains(c.Reason, "too few runs") {
		t.Errorf("two rounds: interval %+v, reason %q, want none and why", c.Interval, c.Reason)
	}
}

// --replot prints the verdicts it judged again, and --strict exits with 1 on an inconclusive
// comparison as on a failed one.
func TestReplotPrintsTheNewVerdicts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.json")
	tight, wide := []float64{100, 101, 99, 100, 102, 98}, []float64{100, 160, 60, 100, 150, 70}
	c := Comparison{Target: "disk", Metric: mSeqBuffered, MetricLabel: "buffered write", Unit: unitBytes, Class: Throughput,
		ReferenceTool: "fio", OursSamples: wide, ReferenceSamples: tight, Verdict: Pass}
	if err := writeJSON(path, &Report{Rounds: 6, Comparisons: []Comparison{c}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{{nil, 0}, {[]string{"--strict"}, 1}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--replot", path, "--out", dir}, tc.args...), &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: status %d, want %d; stderr:\n%s", tc.args, code, tc.code, stderr.String())
		}
		for _, s := range []string{"inconclusive", "0.90–1.10", "against fio:             0 of 1 pass, 1 inconclusive, 0 fail"} {
			if !strings.Contains(stdout.String(), s) {
				t.Errorf("%v: the table does not say %q:\n%s", tc.args, s, stdout.String())
			}
		}
	}
}
