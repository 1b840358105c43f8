package main

import (
	"flag"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/bench/published"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/benchmarks.md from their results files")

// The tables docs/benchmarks.md publishes of the database benchmark's results are what the results
// files give: go test ./test/mariadb/bench -run TestPublishedBlocks -update rewrites them.
func TestPublishedBlocks(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	published.CheckBlocks(t, root, *update, map[string]published.Generator{"mariadb": published.OneFile("mariadb", func(path string) (string, error) {
		r, err := readResults(path)
		if err != nil {
			return "", err
		}
		return r.block(), nil
	}), "mariadb-pays": paysBlock})
}

// The published runs drawn in balanced blocks ran in the orders their seeds give: replaying the
// seed through method.Shuffled, workload by workload and round by round as the benchmark draws
// them, gives every run's recorded turn.
func TestPublishedOrdersReplayFromTheirSeeds(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mariadb-tmpdir.json", "mysql-9.7-tmpdir.json", "mariadb-cloudvolume.json",
		"mysql-9.7-large-pages-temp.json", "mysql-9.7-large-pages.json", "mariadb-11.8-large-pages.json", "mariadb-cloudvolume-large-pages.json"} {
		r, err := readResults(filepath.Join(root, "docs", "benchmarks", name))
		if err != nil {
			t.Fatal(err)
		}
		if r.Settings.Seed == 0 {
			t.Fatalf("%s records no seed", name)
		}
		order := method.NewOrder(r.Settings.Seed)
		checked, recorded := 0, 0
		for _, w := range workloadOrder {
			runs := r.runsOf(w)
			if len(runs) == 0 {
				continue
			}
			recorded += len(runs)
			for round := 1; round <= r.Settings.RunsPerMeasurement; round++ {
				for turn, v := range method.Shuffled(order, r.order) {
					i := slices.IndexFunc(runs, func(run variantRun) bool { return run.variant == v && run.Round == round })
					if i < 0 {
						continue // a workload that runs on one variant only
					}
					if got := runs[i].Position; got != turn+1 {
						t.Errorf("%s: %s round %d, %s ran %s; its seed gives %s", name, w, round, v, method.Ordinal(got), method.Ordinal(turn+1))
					}
					checked++
				}
			}
		}
		if checked == 0 || checked != recorded {
			t.Errorf("%s: %d of its %d runs found in the rounds its seed draws", name, checked, recorded)
		}
	}
}
