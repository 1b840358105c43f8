package main

import (
	"flag"
	"testing"

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
