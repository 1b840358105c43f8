package main

import (
	"flag"
	"testing"

	"github.com/dbtune/scratch-operator/test/bench/published"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/benchmarks.md from their results files")

// The tables docs/benchmarks.md publishes of the sampling benchmark's results are what the results
// file gives: go test ./test/bench/scratchusage -run TestPublishedBlocks -update rewrites them.
func TestPublishedBlocks(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	published.CheckBlocks(t, root, *update, map[string]published.Generator{"scratchusage": published.OneFile("scratchusage", func(path string) (string, error) {
		r, err := readReport(path)
		if err != nil {
			return "", err
		}
		return r.markdown(), nil
	})})
}
