package helm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The chart's files/ are copies that `make manifests` makes of config/: the chart must install
// exactly the CRDs, generated roles and alerts of config/, never an older version of them.
func TestChartFilesAreCopiesOfConfig(t *testing.T) {
	root := repoRoot(t)
	copies := map[string]string{
		"files/rbac/manager-role.yaml":    "config/rbac/role.yaml",
		"files/rbac/node-agent-role.yaml": "config/rbac/node-agent/role.yaml",
		"files/prometheusrule.yaml":       "config/prometheus/prometheusrule.yaml",
	}
	crds, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	for _, crd := range crds {
		copies["files/crds/"+filepath.Base(crd)] = "config/crd/bases/" + filepath.Base(crd)
	}
	for file, source := range copies {
		want, err := os.ReadFile(filepath.Join(root, source))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir(t), file))
		if err != nil {
			t.Errorf("the chart has no %s, the copy of %s: run make manifests (%v)", file, source, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the chart's %s differs from %s: run make manifests", file, source)
		}
	}
	var extra []string
	err = filepath.WalkDir(filepath.Join(chartDir(t), "files"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(chartDir(t), path)
		if _, ok := copies[rel]; !ok {
			extra = append(extra, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		t.Errorf("the chart's files/ has %v, which config/ has not: run make manifests", extra)
	}
}
