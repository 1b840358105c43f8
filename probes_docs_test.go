package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// upgradeNote starts the one passage of the docs that may name the former "speedups": the upgrade
// note that says they are gone. It runs to the next heading.
const upgradeNote = "**Changed in this release: the NodeIOProfile's tmpfs/disk figures.**"

// TestNoSpeedupAgainstANoOp keeps the probes' figures presented as what they are. fdatasync on
// tmpfs is a no-op that the probe rounds up to 1 µs, so a tmpfs "speedup" for fsync is the disk's
// latency in microseconds under another name, and a write "speedup" over fdatasync'd rates is not
// what temporary files see. Neither the README nor docs/ may offer a speedup, but in the upgrade
// note that retires them and in the API reference where each mention says it is deprecated.
func TestNoSpeedupAgainstANoOp(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	noted := false
	for _, doc := range append(docs, "README.md") {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		inNote, inDeprecatedType := false, false
		for i, line := range strings.Split(string(raw), "\n") {
			switch {
			case strings.HasPrefix(line, upgradeNote):
				inNote, noted = true, doc == "docs/install.md"
			case strings.HasPrefix(line, "#"):
				inNote = false
				inDeprecatedType = doc == "docs/api.md" && line == "### Speedup"
			}
			lower := strings.ToLower(line)
			if !strings.Contains(lower, "speedup") || inNote {
				continue
			}
			if doc == "docs/api.md" && (strings.Contains(lower, "deprecated") || inDeprecatedType) {
				continue
			}
			t.Errorf("%s:%d offers a speedup: %s", doc, i+1, line)
		}
	}
	if !noted {
		t.Errorf("docs/install.md has no upgrade note starting %q for the renamed columns and metrics", upgradeNote)
	}
	assertDeprecatedSpeedupType(t)
}

// assertDeprecatedSpeedupType: the API reference's section on the former type says it is
// deprecated, so that its rows may name it.
func assertDeprecatedSpeedupType(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n### Speedup\n")
	if !ok {
		return
	}
	intro, _, _ := strings.Cut(strings.TrimSpace(section), "\n\n")
	if !strings.Contains(intro, "deprecated") {
		t.Errorf("docs/api.md's Speedup section does not open by saying it is deprecated: %q", intro)
	}
}

// TestNodeIOProfileColumns: kubectl get nodeioprofiles shows the buffered write ratio, the
// temporary-file ratios and the disk's own fdatasync latency, and no column reads the deprecated
// speedup or calls anything one.
func TestNodeIOProfileColumns(t *testing.T) {
	raw, err := os.ReadFile("config/crd/bases/dbtune.io_nodeioprofiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Write-Tmpfs/Disk":            ".status.comparison.bufferedWriteRatio",
		"Small-Files-Tmpfs/Disk":      ".status.comparison.smallFileCreateRatio",
		"Disk-Fdatasync-P50-us":       `.status.targets[?(@.kind=="Disk")].fdatasync.p50Microseconds`,
		"Disk-Fdatasync-P99-us":       `.status.targets[?(@.kind=="Disk")].fdatasync.p99Microseconds`,
		"Temp-Files-Large-Pages/Disk": ".status.comparison.largePageTempFileRatio",
		"Temp-Files-Tmpfs/Disk":       ".status.comparison.tempFileRatio",
	}
	for _, v := range crd.Spec.Versions {
		got := map[string]string{}
		for _, c := range v.AdditionalPrinterColumns {
			got[c.Name] = c.JSONPath
			text := strings.ToLower(c.Name + " " + c.Description + " " + c.JSONPath)
			if strings.Contains(text, "speedup") {
				t.Errorf("%s: column %s (%s, %s) reads or names a speedup", v.Name, c.Name, c.JSONPath, c.Description)
			}
			if strings.Contains(c.JSONPath, "comparison") && strings.Contains(strings.ToLower(c.JSONPath), "sync") {
				t.Errorf("%s: column %s compares fdatasync, a no-op on tmpfs", v.Name, c.Name)
			}
		}
		for name, path := range want {
			if got[name] != path {
				t.Errorf("%s: column %s reads %q, want %q", v.Name, name, got[name], path)
			}
		}
	}
}
