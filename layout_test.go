package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// layoutDoc is the contributors' page whose Layout section lists the code's directories.
const layoutDoc = "docs/development.md"

// TestLayoutSection keeps the Layout section of docs/development.md true: every package of the
// module is listed there by its directory, and every directory or file listed there exists.
func TestLayoutSection(t *testing.T) {
	listed := layoutSection(t)
	if len(listed) < 10 {
		t.Fatalf("found %d entries in the Layout section of %s; the check would see nothing", len(listed), layoutDoc)
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(dir, root), "/")
		if rel != "" && !listed[rel+"/"] {
			t.Errorf("package directory %s/ is missing from the Layout section of %s", rel, layoutDoc)
		}
	}
	for entry := range listed {
		if _, err := os.Stat(strings.TrimSuffix(entry, "/")); err != nil {
			t.Errorf("the Layout section of %s lists %s, which is gone: %v", layoutDoc, entry, err)
		}
	}
}

// layoutSection returns the paths the code block of the Layout section starts its lines with: a
// directory ends with a slash, a file does not.
func layoutSection(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(layoutDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		t.Fatalf("%s has no Layout section", layoutDoc)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```\n")
	if !ok {
		t.Fatalf("the Layout section of %s has no code block", layoutDoc)
	}
	block, _, _ = strings.Cut(block, "```")
	listed := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		if line == "" || line[0] == ' ' {
			continue // a description that goes on
		}
		listed[strings.Fields(line)[0]] = true
	}
	return listed
}
