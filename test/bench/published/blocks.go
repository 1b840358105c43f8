// Package published keeps docs/benchmarks.md, and docs/probes.md where the probe benchmark is
// published, to what their results files hold. A document's tables are generated blocks between
// markers that name the results files they come from; each benchmark's tests draw its blocks again
// from those files and fail when the document differs (CheckBlocks, CheckDocBlocks). Every
// measured figure of the prose around them must be found in the generated blocks or the results
// files of its section (Unsupported).
package published

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Doc is the published document, relative to the repository root.
const Doc = "docs/benchmarks.md"

// Markers of a generated block: `<!-- begin generated KIND FILE... -->` on a line of its own,
// then the block, then `<!-- end generated -->`.
const (
	beginMarker = "<!-- begin generated "
	endMarker   = "<!-- end generated -->"
)

// Block is one generated block of the document.
type Block struct {
	// Kind names the generator: the benchmark and what it draws.
	Kind string
	// Files are the results files the block is drawn from, relative to the repository root.
	Files []string
	// Body is the text between the markers' lines.
	Body string
	// start and end are the offsets of Body in the document.
	start, end int
}

// Generator draws a block of its kind from results files, given relative to root.
type Generator func(root string, files []string) (string, error)

// Blocks finds every generated block of doc.
func Blocks(doc string) ([]Block, error) {
	var out []Block
	for at := 0; ; {
		i := strings.Index(doc[at:], beginMarker)
		if i < 0 {
			return out, nil
		}
		i += at
		lineEnd := strings.Index(doc[i:], "-->\n")
		if lineEnd < 0 {
			return nil, fmt.Errorf("the marker at offset %d does not end its line with -->", i)
		}
		fields := strings.Fields(doc[i+len(beginMarker) : i+lineEnd])
		if len(fields) < 2 {
			return nil, fmt.Errorf("the marker at offset %d names no generator and file", i)
		}
		start := i + lineEnd + len("-->\n")
		j := strings.Index(doc[start:], endMarker)
		if j < 0 {
			return nil, fmt.Errorf("the %s block of %s has no end marker", fields[0], strings.Join(fields[1:], " "))
		}
		if k := strings.Index(doc[start:start+j], beginMarker); k >= 0 {
			return nil, fmt.Errorf("the %s block of %s has no end marker before the next block", fields[0], strings.Join(fields[1:], " "))
		}
		out = append(out, Block{Kind: fields[0], Files: fields[1:], Body: doc[start : start+j], start: start, end: start + j})
		at = start + j + len(endMarker)
	}
}

// Regenerate draws every block of doc whose kind has a generator again, and returns the document
// with the new blocks and the blocks that differed.
func Regenerate(doc, root string, generators map[string]Generator) (string, []Block, error) {
	blocks, err := Blocks(doc)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	var stale []Block
	last := 0
	for _, bl := range blocks {
		gen, ok := generators[bl.Kind]
		if !ok {
			continue
		}
		body, err := gen(root, bl.Files)
		if err != nil {
			return "", nil, fmt.Errorf("the %s block of %s: %w", bl.Kind, strings.Join(bl.Files, " "), err)
		}
		body = "\n" + strings.TrimSpace(body) + "\n\n"
		if body != bl.Body {
			stale = append(stale, Block{Kind: bl.Kind, Files: bl.Files, Body: body, start: bl.start, end: bl.end})
		}
		b.WriteString(doc[last:bl.start])
		b.WriteString(body)
		last = bl.end
	}
	b.WriteString(doc[last:])
	return b.String(), stale, nil
}

// CheckBlocks fails t for every block of docs/benchmarks.md, of a kind generators draw, that
// differs from what its results files give now; with update it writes the new blocks into the
// document instead. root is the repository root.
func CheckBlocks(t *testing.T, root string, update bool, generators map[string]Generator) {
	t.Helper()
	CheckDocBlocks(t, root, Doc, update, generators)
}

// CheckDocBlocks is CheckBlocks for another document, doc, relative to root: a benchmark
// published on a page of its own.
func CheckDocBlocks(t *testing.T, root, doc string, update bool, generators map[string]Generator) {
	t.Helper()
	path := filepath.Join(root, doc)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	fresh, stale, err := Regenerate(text, root, generators)
	if err != nil {
		t.Fatal(err)
	}
	if update {
		if err := os.WriteFile(path, []byte(fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %d blocks of %s", len(stale), doc)
		return
	}
	old, _ := Blocks(text)
	for _, s := range stale {
		for _, o := range old {
			if o.start == s.start {
				t.Errorf("%s: the %s block of %s differs from what its results give (-document +results):\n%s\nrun the test again with -update to rewrite it",
					doc, s.Kind, strings.Join(s.Files, " "), cmp.Diff(o.Body, s.Body))
			}
		}
	}
}

// OneFile is the generator of a kind of block drawn from one results file: draw reads the file at
// its path and returns the block.
func OneFile(kind string, draw func(path string) (string, error)) Generator {
	return func(root string, files []string) (string, error) {
		if len(files) != 1 {
			return "", fmt.Errorf("a %s block is drawn from one results file, not %d", kind, len(files))
		}
		return draw(filepath.Join(root, files[0]))
	}
}
