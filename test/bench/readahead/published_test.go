package main

import (
	"flag"
	"testing"

	"github.com/dbtune/scratch-operator/test/bench/published"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/benchmarks.md from their results files")

// The tables docs/benchmarks.md publishes of the read-ahead sweep are what its results file gives:
// go test ./test/bench/readahead -run TestPublishedBlocks -update rewrites them.
func TestPublishedBlocks(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	published.CheckBlocks(t, root, *update, map[string]published.Generator{"readahead": published.OneFile("readahead", func(path string) (string, error) {
		r, err := readReport(path)
		if err != nil {
			return "", err
		}
		return r.markdown(), nil
	})})
}
