package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestReadmeLayout keeps the README's Layout section true: every package of the module is listed
// there by its directory, and every directory or file listed there exists.
func TestReadmeLayout(t *testing.T) {
	listed := readmeLayout(t)
	if len(listed) < 10 {
		t.Fatalf("found %d entries in the README's Layout section; the check would see nothing", len(listed))
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
			t.Errorf("package directory %s/ is missing from the README's Layout section", rel)
		}
	}
	for entry := range listed {
		if _, err := os.Stat(strings.TrimSuffix(entry, "/")); err != nil {
			t.Errorf("the README's Layout section lists %s, which is gone: %v", entry, err)
		}
	}
}

// readmeLayout returns the paths the code block of the README's Layout section starts its lines
// with: a directory ends with a slash, a file does not.
func readmeLayout(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		t.Fatal("the README has no Layout section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```\n")
	if !ok {
		t.Fatal("the README's Layout section has no code block")
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
