package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReferenceIsCurrent fails when docs/api.md no longer matches the API types, so that a
// change to a field's comment or markers cannot ship with a stale reference.
func TestReferenceIsCurrent(t *testing.T) {
	got, err := generate(filepath.Join("..", "..", "api", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/api.md is stale: run `make docs-api` and commit it")
	}
}

func TestEveryFieldIsDocumented(t *testing.T) {
	a, err := parsePackage(filepath.Join("..", "..", "api", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range a.types {
		for _, f := range typ.fields {
			if f.inline || f.json == "metadata" || f.json == "items" {
				continue
			}
			if f.comment.text == "" {
				t.Errorf("%s.%s has no comment: the reference would show an empty description", typ.name, f.goName)
			}
		}
	}
}
