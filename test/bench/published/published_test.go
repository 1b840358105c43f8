package published

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/test/testenv"
)

func TestFigures(t *testing.T) {
	type fig struct {
		Text string
		Unit string
		Dim  Dimension
	}
	for _, tc := range []struct {
		text string
		want []fig
	}{
		{"tmpfs 1.18x ahead, spread about ±30%", []fig{{"1.18x", "x", Ratio}, {"30%", "%", Percent}}},
		{"took 2.95–3.03 s against 2.68 to 2.82 s", []fig{{"2.95", "s", Time}, {"3.03 s", "s", Time}, {"2.68", "s", Time}, {"2.82 s", "s", Time}}},
		{"injected in 3.7 / 28.4 / 220.7 s", []fig{{"3.7", "s", Time}, {"28.4", "s", Time}, {"220.7 s", "s", Time}}},
		{"wrote 256 and 366 MiB, read at 125 MiB/s", []fig{{"256", "MiB", Bytes}, {"366 MiB", "MiB", Bytes}, {"125 MiB/s", "MiB/s", ByteRate}}},
		{"20 000 ConfigMaps of 100 KiB", []fig{{"20 000", "", Count}, {"100 KiB", "KiB", Bytes}}},
		{"p99 of 61.08 ms and 1 µs, 788 tps", []fig{{"61.08 ms", "ms", Time}, {"1 µs", "µs", Time}, {"788 tps", "tps", Rate}}},
		// Not figures: versions, dates, quantities, words with digits, flags.
		{"Linux 6.18.44, MariaDB 10.11.19 on 2026-12-01, a 4Gi pod, p95, N=5000, x86, -runs 3", []fig{{"3", "", Count}}},
		// "10-minute" is a count of a compound word, which the check passes over.
		{"a 10-minute steady state, 12 minutes in all", []fig{{"10", "", Count}, {"12 minutes", "minutes", Time}}},
	} {
		var got []fig
		for _, f := range Figures(tc.text) {
			got = append(got, fig{f.Text, f.Unit, f.Dim})
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Figures(%q) (-want +got):\n%s", tc.text, diff)
		}
	}
}

func TestFigureMatchesToItsPrecision(t *testing.T) {
	f := Figures("2.35 GiB and 126 MiB and 1.25x")
	for _, tc := range []struct {
		f         Figure
		candidate float64
		want      bool
	}{
		{f[0], 2348 * (1 << 20), false}, // 2348 MiB is 2.29 GiB
		{f[0], 2.349 * (1 << 30), true},
		{f[1], 125.6 * (1 << 20), true},
		{f[1], 126.6 * (1 << 20), false},
		{f[2], 1.254, true},
		{f[2], 1.256, false},
	} {
		if got := tc.f.matches(tc.candidate); got != tc.want {
			t.Errorf("%q matches %v: %t, want %t", tc.f.Text, tc.candidate, got, tc.want)
		}
	}
}

const doc = `# Title

Intro.

## One

<!-- begin generated kind docs/benchmarks/a.json -->
old
<!-- end generated -->

Prose of 1.50x and 12.0 s, 7 MiB, and 3 s (a setting).

## Two

Names ` + "`b.json`" + ` and says 2.2 s; ` + "`-runs 9 s`" + ` is code.
`

func TestBlocksAndRegenerate(t *testing.T) {
	blocks, err := Blocks(doc)
	if err != nil || len(blocks) != 1 || blocks[0].Kind != "kind" || blocks[0].Body != "old\n" ||
		!cmp.Equal(blocks[0].Files, []string{"docs/benchmarks/a.json"}) {
		t.Fatalf("Blocks = %+v, %v", blocks, err)
	}
	gen := map[string]Generator{"kind": func(root string, files []string) (string, error) { return "| 1.50x | 12.0 s |", nil }}
	fresh, stale, err := Regenerate(doc, "", gen)
	if err != nil || len(stale) != 1 || !strings.Contains(fresh, "-->\n\n| 1.50x | 12.0 s |\n\n<!-- end generated -->") {
		t.Fatalf("Regenerate: %d stale, %v:\n%s", len(stale), err, fresh)
	}
	if _, stale, _ := Regenerate(fresh, "", gen); len(stale) != 0 {
		t.Errorf("a regenerated document is stale again: %+v", stale)
	}
	if _, err := Blocks("<!-- begin generated kind a.json -->\nno end\n"); err == nil {
		t.Error("Blocks accepted a block without its end marker")
	}
}

func TestUnsupported(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "docs", "benchmarks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.json", `{"runs": [{"deviceWriteMiB": 7.2}]}`)
	write("b.json", `{"x": {"bareSeconds": 2.21}}`)
	fresh, _, err := Regenerate(doc, root, map[string]Generator{"kind": func(string, []string) (string, error) { return "| 1.50x | 12.0 s |", nil }})
	if err != nil {
		t.Fatal(err)
	}
	allowed := []Allowed{{"One", "3 s", "an input"}, {"Two", "5 s", "no longer said"}}
	problems, err := Unsupported(fresh, root, allowed)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	// 1.50x and 12.0 s are the block's, 7 MiB a.json's, 3 s allowed, 2.2 s b.json's; the code
	// span's figure is not prose; the second allowed figure is gone from the prose.
	want := []string{`line 0 (Two): allowed figure "5 s" is not in the prose any more`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	problems, _ = Unsupported(strings.Replace(fresh, "7 MiB", "8 MiB", 1), root, allowed[:1])
	if len(problems) != 1 || !strings.Contains(problems[0].Text, `"8 MiB"`) {
		t.Errorf("a figure the data does not hold: %v", problems)
	}
	problems, _ = Unsupported(strings.Replace(fresh, "`b.json`", "`c.json`", 1), root, allowed[:1])
	if len(problems) != 2 || !strings.Contains(problems[0].Text, "does not exist") {
		t.Errorf("a results file that does not exist: %v", problems)
	}
}

// allowed are the figures of docs/benchmarks.md that are settings, not measurements, and that no
// results file it cites holds. Each says why it may stand; keep the list short.
var allowed = []Allowed{
	{"", "95 %", confidenceLevel},
}

// confidenceLevel is why the documents may state "95 %": a setting, not a measurement.
const confidenceLevel = "the confidence level of every interval: a setting of test/bench/method (method.Level)"

// Every measured figure of docs/benchmarks.md's prose is in a generated block or a results file
// of its section, to the precision written.
func TestPublishedProse(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, Doc))
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Unsupported(string(raw), root, allowed)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", Doc, p)
	}
}

// probesDoc publishes the probe benchmark: its results sections are held to their results file
// as docs/benchmarks.md is. The sections before them describe the probes and their parameters,
// settings rather than results, and are not checked.
const probesDoc = "docs/probes.md"

// probesChecked are the sections of docs/probes.md whose figures are results.
var probesChecked = []string{"How the probes compare with the tools", "What the agent costs"}

// probesAllowed are the figures of those sections that are settings or inputs of the benchmark,
// not measurements, and that its results file does not hold.
var probesAllowed = []Allowed{
	{"How the probes compare", "4 MiB", "a free block of buddy order 10 on x86 (1024 pages of 4 KiB), what page_reporting_order 10 hands back: a property of the kernel"},
	{"How the probes compare", "10%", "the accuracy target for throughput: a setting (tolerances.throughput, 0.1)"},
	{"How the probes compare", "20%", "the accuracy target for fdatasync latency: a setting (tolerances.latency, 0.2)"},
	{"How the probes compare", "1 µs", "the probe's resolution: it rounds latencies up to whole microseconds"},
	{"What the agent costs", "860 MiB", "what the default workloads write on the two targets, about 430 MiB each: a setting of the probe"},
}

// Every measured figure of docs/probes.md's results sections is in its generated block or its
// results file, to the precision written.
func TestPublishedProbesProse(t *testing.T) {
	checkSections(t, probesDoc, probesChecked, probesAllowed)
}

// readme is the front page; its summary of where a RAM tmpdir pays quotes the benchmarks, and is
// held to the results files it names as docs/benchmarks.md is.
const readme = "README.md"

// readmeChecked are the README's sections that quote measured figures.
var readmeChecked = []string{"When it pays"}

// readmeAllowed are the figures of those sections that are settings, not measurements.
var readmeAllowed = []Allowed{
	{"When it pays", "95 %", confidenceLevel},
}

// Every measured figure of the README's summary is in a results file it names, to the precision
// written.
func TestPublishedReadmeProse(t *testing.T) {
	checkSections(t, readme, readmeChecked, readmeAllowed)
}

// checkSections holds the sections of doc titled checked to the results files each names, as
// TestPublishedProse holds the whole of docs/benchmarks.md; the other sections are not checked.
func checkSections(t *testing.T, doc string, checked []string, allowed []Allowed) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	var kept strings.Builder
	found := 0
	for _, s := range Sections(string(raw)) {
		if slices.Contains(checked, s.Title) {
			kept.WriteString(s.Text)
			found++
			continue
		}
		// Another section keeps its lines, so that a problem's line is the document's, and
		// loses its figures.
		title, _, _ := strings.Cut(s.Text, "\n")
		kept.WriteString(title + strings.Repeat("\n", strings.Count(s.Text, "\n")))
	}
	if found != len(checked) {
		t.Fatalf("%s has %d of the sections %q", doc, found, checked)
	}
	problems, err := Unsupported(kept.String(), root, allowed)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", doc, p)
	}
}

// A results object that names its unit gives it to its numbers whose keys name none; a JSON name
// outside docs/benchmarks is not a results file of the document.
func TestUnsupportedReadsAnObjectsUnit(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "docs", "benchmarks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	results := `{"comparisons": [{"unit": "us", "oursSamples": [203, 637]}, {"unit": "B/s", "oursSamples": [588289069]}], "rounds": 5}`
	if err := os.WriteFile(filepath.Join(dir, "p.json"), []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "# T\n\n## Results\n\nFrom `p.json`, written to `bin/bench/p/results.json`: runs of 203 to 637 µs and 561.0 MiB/s; 5 s; 2.5 GB/s.\n"
	problems, err := Unsupported(doc, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		figure, _, _ := strings.Cut(p.Text, ":")
		got = append(got, figure)
	}
	// The rounds count (5) has no unit, and neither 5 s nor 2.5 GB/s is in the file.
	want := []string{`"5 s"`, `"2.5 GB/s"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
