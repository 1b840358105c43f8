package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// The manager runs only between its start and its stop, and the bare client is timed only outside
// them: the baseline runs with no manager process at all. The variants take their turns in the
// order drawn for the run.
func TestRunStepsKeepTheManagerIdleForTheBareClient(t *testing.T) {
	for _, order := range [][]string{{variantBare, variantManager}, {variantManager, variantBare}} {
		for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			steps := runSteps(order, flags[0], flags[1])
			if got := orderOf(steps); !slices.Equal(got, order) {
				t.Errorf("order %v, steady %v, many %v: the turns come in the order %v", order, flags[0], flags[1], got)
			}
			running, starts := false, 0
			for i, st := range steps {
				switch {
				case st == stepStartManager:
					if running {
						t.Fatalf("%v: a second manager starts at step %d", steps, i)
					}
					running = true
					starts++
				case st == stepStopManager:
					if !running {
						t.Fatalf("%v: a manager stops at step %d that was not started", steps, i)
					}
					running = false
				case st == stepBareInject || st == stepBareRevert:
					if running {
						t.Errorf("%v: %q runs at step %d beside a running manager", steps, st, i)
					}
				case strings.HasPrefix(string(st), "manager:"):
					if !running {
						t.Errorf("%v: %q runs at step %d with no manager", steps, st, i)
					}
				}
			}
			if running || starts != 1 {
				t.Errorf("%v: %d manager starts, running at the end: %v", steps, starts, running)
			}
			if has := slices.Contains(steps, stepSteady) && slices.Contains(steps, stepGitOps); has != flags[0] {
				t.Errorf("steady %v: steps %v", flags[0], steps)
			}
			if has := slices.Contains(steps, stepMany) && slices.Contains(steps, stepManyRevert); has != flags[1] {
				t.Errorf("many %v: steps %v", flags[1], steps)
			}
			if steps[len(steps)-1] != stepSettle && steps[len(steps)-1] != stepStopManager {
				t.Errorf("%v: the run does not end with its fleet settled", steps)
			}
		}
	}
}

// A size's runs draw their orders from the recorded seed, so the same seed runs them again in the
// same order, and over a few runs both variants go first.
func TestRunOrdersFollowTheSeed(t *testing.T) {
	draw := func(seed int64) [][]string {
		o := method.NewOrder(seed)
		var out [][]string
		for range 8 {
			out = append(out, orderOf(runSteps(method.Shuffled(o, []string{variantBare, variantManager}), true, true)))
		}
		return out
	}
	first, again := draw(20261202), draw(20261202)
	firsts := map[string]int{}
	for i := range first {
		if !slices.Equal(first[i], again[i]) {
			t.Fatalf("run %d: the same seed gave %v and %v", i, first[i], again[i])
		}
		firsts[first[i][0]]++
	}
	if firsts[variantBare] == 0 || firsts[variantManager] == 0 {
		t.Errorf("8 runs from one seed always put the same variant first: %v", firsts)
	}
}

func TestWorkersStarted(t *testing.T) {
	log := []byte(`{"level":"info","ts":"2026-12-02T10:00:00Z","logger":"setup","msg":"Starting manager"}
{"level":"info","ts":"2026-12-02T10:00:01Z","msg":"Starting EventSource","controller":"scratchvolume","source":"kind source: *v1.StatefulSet"}
{"level":"info","ts":"2026-12-02T10:00:01Z","msg":"Starting Controller","controller":"scratchvolume"}
not a JSON line
`)
	if workersStarted(log, "scratchvolume") {
		t.Error("workers reported started before the log says so")
	}
	log = append(log, `{"level":"info","ts":"2026-12-02T10:00:02Z","msg":"Starting workers","controller":"other","worker count":1}`+"\n"...)
	if workersStarted(log, "scratchvolume") {
		t.Error("another controller's workers taken for the ScratchVolume controller's")
	}
	log = append(log, `{"level":"info","ts":"2026-12-02T10:00:02Z","msg":"Starting workers","controller":"scratchvolume","controllerGroup":"dbtune.io","worker count":4}`+"\n"...)
	if !workersStarted(log, "scratchvolume") {
		t.Error("the ScratchVolume controller's workers not seen started")
	}
}

// Beside each set of runs stands the figure of every run of every set of its size pooled, with
// its interval, and a pooled row follows for each size measured more than once.
func TestSetsPoolEveryRunOfASize(t *testing.T) {
	dir := t.TempDir()
	a := fleetResults(7, map[int][][2]float64{1000: {{10, 12}, {11, 12.5}, {10.5, 13}}, 5000: {{50, 60}, {52, 61}, {51, 66}}})
	b := fleetResults(8, map[int][][2]float64{1000: {{10, 11}, {12, 12.2}, {11, 14}}})
	for name, r := range map[string]*results{"a.json": a, "b.json": b} {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md, err := setsMarkdown(dir, []string{"a.json", "b.json"}, true)
	if err != nil {
		t.Fatal(err)
	}
	pooled1000 := method.Compare([]float64{12, 12.5, 13, 11, 12.2, 14}, []float64{10, 11, 10.5, 10, 12, 11}, method.BootstrapSeed)
	alone5000 := method.Compare([]float64{60, 61, 66}, []float64{50, 52, 51}, method.BootstrapSeed)
	rows := strings.Split(md, "\n")
	want := map[string]string{
		"| `a.json` | 1000 |":                             "| 6, " + pooled1000.String() + ", ",
		"| `b.json` | 1000 |":                             "| 6, " + pooled1000.String() + ", ",
		"| `a.json` | 5000 |":                             "| 3, " + alone5000.String() + ", ",
		"| the 2 sets of 1000 above, pooled | 1000 | 6 |": "| " + pooled1000.String() + " |",
	}
	for prefix, cell := range want {
		found := false
		for _, row := range rows {
			if strings.HasPrefix(row, prefix) {
				found = true
				if !strings.Contains(row, cell) {
					t.Errorf("row %q lacks %q", row, cell)
				}
			}
		}
		if !found {
			t.Errorf("no row %q in:\n%s", prefix, md)
		}
	}
	if strings.Contains(md, "sets of 5000 above, pooled") {
		t.Errorf("a size measured once has a pooled row:\n%s", md)
	}
	alone, err := setsMarkdown(dir, []string{"a.json", "b.json"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(alone, "pooled |") || strings.Contains(alone, pooled1000.String()) {
		t.Errorf("sets not to be pooled were:\n%s", alone)
	}
}

// fleetResults are results of the manager's defaults with, for each size, runs of {bare,
// manager} injection seconds.
func fleetResults(seed int64, runs map[int][][2]float64) *results {
	r := &results{Settings: settings{Seed: seed}}
	for _, n := range slices.Sorted(maps.Keys(runs)) {
		l := level{N: n, Settings: defaultSettings}
		for _, x := range runs[n] {
			l.Runs = append(l.Runs, runResult{Bare: phase{Seconds: x[0]}, Selector: phase{Seconds: x[1]}})
		}
		r.Levels = append(r.Levels, l)
	}
	return r
}

// The results say what each timer holds, and the report says it beside the figures; results from
// before it was recorded are reported for what they were.
func TestReportSaysWhatTheTimersHold(t *testing.T) {
	r := fleetResults(1, map[int][][2]float64{1000: {{10, 12}, {11, 12.5}, {10.5, 13}}})
	old := r.markdown()
	if !strings.Contains(old, "its plan made before it started") || !strings.Contains(old, "one manager ran through each size's runs") {
		t.Errorf("results without a recorded baseline are not reported as the old method:\n%s", old)
	}
	r.Settings.Baseline = &timers
	md := r.markdown()
	for _, want := range []string{timers.Bare, timers.Manager, "No manager process ran during the bare client's phases", "medians of each size's 3 runs"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	for _, want := range []string{"GET at resourceVersion 0", "plan by the controller's planning code"} {
		if !strings.Contains(timers.Bare, want) {
			t.Errorf("the bare client's timer is not said to hold %q: %s", want, timers.Bare)
		}
	}
}

// Rollout and failover rounds run their settings in the drawn order, and the tables say which went
// first, from which seed, and under which conditions; results from before say they had neither.
func TestRolloutAndFailoverReportTheirOrder(t *testing.T) {
	c := method.RecordAt(t.TempDir(), time.Date(2026, 12, 3, 4, 0, 0, 0, time.UTC), nil)
	c.LoadAverage1m = 0.42
	r := &results{Settings: settings{Seed: 42}}
	r.Failover = []*failoverResult{{N: 10, LeaseDurationSeconds: 15, Runs: []failoverRun{{Turn: 2, Conditions: &c}}}}
	r.Rollouts = []rolloutResult{{Settings: pacedSettings, StatefulSets: 10, Replicas: 1, Conditions: &c}}
	for name, md := range map[string]string{"failover": r.failoverMarkdown(), "rollout": r.rolloutMarkdown()} {
		for _, want := range []string{"order drawn from seed 42", "load average (1 min) 0.42"} {
			if !strings.Contains(md, want) {
				t.Errorf("the %s table lacks %q:\n%s", name, want, md)
			}
		}
	}
	if md := r.failoverMarkdown(); !strings.Contains(md, "| 1 | 2nd | inject |") {
		t.Errorf("the failover table does not give the run's turn:\n%s", md)
	}
	r.Settings.Seed = 0
	r.Failover[0].Runs[0] = failoverRun{}
	if md := r.failoverMarkdown(); !strings.Contains(md, "fixed order") || !strings.Contains(md, "| 1 | – | inject |") || !strings.Contains(md, "not recorded per run") {
		t.Errorf("results from before the drawn order are not said to be so:\n%s", md)
	}
}

// With -against, every size measures the other commit's manager with the defaults beside this
// tree's, both in full, and the report sets the two side by side with their ratio.
func TestAgainstAnotherCommit(t *testing.T) {
	cfg := config{against: "/elsewhere", againstCommit: "c3f0799", compareAt: 0}
	vs := variants(cfg, 5000)
	if len(vs) != 2 || vs[0] != defaultSettings || vs[1].Commit != "c3f0799" || vs[1].Name != "defaults at c3f0799" {
		t.Fatalf("variants with -against = %+v", vs)
	}
	for _, s := range vs {
		if !s.inFull() {
			t.Errorf("%s is not measured in full", s.Name)
		}
	}
	if (managerSettings{Name: "qps=20 burst=30", QPS: 20, Burst: 30, Workers: 4}).inFull() {
		t.Error("a client-side limit is measured in full")
	}
	if len(variants(config{}, 5000)) != 1 {
		t.Error("without -against, another manager is measured")
	}

	r := fleetResults(1, map[int][][2]float64{5000: {{40, 50}, {41, 52}, {42, 51}}})
	other := level{N: 5000, Settings: vs[1]}
	for i, x := range [][2]float64{{40, 60}, {42, 64}, {41, 62}} {
		rss := []float64{120, 130, 125}[i]
		other.Runs = append(other.Runs, runResult{Bare: phase{Seconds: x[0]}, Selector: phase{Seconds: x[1]}, Memory: &memory{PeakRSSMiB: rss}})
	}
	for i, rss := range []float64{90, 95, 92} {
		r.Levels[0].Runs[i].Memory = &memory{PeakRSSMiB: rss}
	}
	r.Levels = append(r.Levels, other)
	md := r.againstMarkdown()
	for _, want := range []string{
		"against the manager of c3f0799",
		"| 5000 | defaults | 50.0 s, 52.0 s, 51.0 s |",
		"| 5000 | defaults at c3f0799 | 60.0 s, 64.0 s, 62.0 s |",
		"90 MiB, 95 MiB, 92 MiB",
		"| 5000 | this tree / c3f0799 | 0.82x",
		"lower",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, md)
		}
	}
	if md := fleetResults(1, map[int][][2]float64{5000: {{40, 50}}}).againstMarkdown(); md != "" {
		t.Errorf("a comparison without another commit: %s", md)
	}
}
