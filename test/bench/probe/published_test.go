package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dbtune/scratch-operator/test/bench/published"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/probes.md from their results files")

// probesDoc publishes the probe benchmark.
const probesDoc = "docs/probes.md"

// The tables docs/probes.md publishes of the accuracy benchmark are what its results file gives,
// judged again from its rounds: go test ./test/bench/probe -run TestPublishedBlocks -update
// rewrites them.
func TestPublishedBlocks(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, probesDoc))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := published.Blocks(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(blocks, func(b published.Block) bool { return b.Kind == "probe-accuracy" }) {
		t.Fatalf("%s has no probe-accuracy block: its tables would not be checked", probesDoc)
	}
	published.CheckDocBlocks(t, root, probesDoc, *update, map[string]published.Generator{"probe-accuracy": published.OneFile("probe-accuracy", func(path string) (string, error) {
		r, err := readResults(path)
		if err != nil {
			return "", err
		}
		return r.markdown(), nil
	})})
}
