package main

import (
	"flag"
	"testing"

	"github.com/dbtune/scratch-operator/test/bench/published"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/benchmarks.md from their results files")

// The tables docs/benchmarks.md publishes of the fleet, rollout and failover results are what the
// results files give: go test ./test/bench/scale -run TestPublishedBlocks -update rewrites them.
func TestPublishedBlocks(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	published.CheckBlocks(t, root, *update, map[string]published.Generator{
		"scale": published.OneFile("scale", func(path string) (string, error) {
			r, err := readResults(path)
			if err != nil {
				return "", err
			}
			return r.markdown(), nil
		}),
		"scale-sets": func(root string, files []string) (string, error) { return setsMarkdown(root, files, true) },
		// A history of sets of different code: each set alone, none pooled.
		"scale-history": func(root string, files []string) (string, error) { return setsMarkdown(root, files, false) },
	})
}
