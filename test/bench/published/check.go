package published

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Section is one "## " section of the document.
type Section struct {
	Title string
	// Line is the line of its title, from 1.
	Line int
	Text string
}

// Sections splits doc at its "## " titles; the text before the first is a section titled "".
func Sections(doc string) []Section {
	var out []Section
	cur := Section{Line: 1}
	var b strings.Builder
	for n, line := range strings.SplitAfter(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			cur.Text = b.String()
			out = append(out, cur)
			cur, b = Section{Title: strings.TrimSpace(strings.TrimPrefix(line, "## ")), Line: n + 1}, strings.Builder{}
		}
		b.WriteString(line)
	}
	cur.Text = b.String()
	return append(out, cur)
}

// resultsFile is a results file's name as the prose writes it, with or without its directory.
var resultsFile = regexp.MustCompile(`[\w./-]*[\w-]\.json\b`)

// Files are the results files a section names, as paths relative to the repository root: every
// name of the form docs/benchmarks/NAME.json, benchmarks/NAME.json or NAME.json. A name in any
// other directory, such as bin/bench/probe/results.json where a run writes its results, is not a
// published results file.
func (s Section) Files() []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range resultsFile.FindAllString(s.Text, -1) {
		if dir := filepath.Dir(m); dir != "." && dir != "benchmarks" && !strings.HasSuffix(dir, "docs/benchmarks") {
			continue
		}
		p := filepath.Join("docs", "benchmarks", filepath.Base(m))
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Allowed is a figure of the prose that no results file holds, with the reason it may stand: a
// setting of the machine, say, that the results files before the conditions were recorded lack.
type Allowed struct {
	// Section is the start of the section's title ("" is the text before the first section, only
	// it), Figure the figure as written.
	Section, Figure, Reason string
}

// Problem is a figure of the prose the data does not hold, or a file the prose names that does
// not exist.
type Problem struct {
	Section string
	Line    int
	Text    string
}

func (p Problem) String() string { return fmt.Sprintf("line %d (%s): %s", p.Line, p.Section, p.Text) }

// Unsupported lists the measured figures (numbers with a unit) of the prose of doc that neither
// the generated blocks of their section nor the results files it names hold, to the precision
// written; allowed figures are left out, and an allowed figure the prose no longer has is a
// problem too. root is the repository root.
func Unsupported(doc, root string, allowed []Allowed) ([]Problem, error) {
	var out []Problem
	used := make([]bool, len(allowed))
	for _, s := range Sections(doc) {
		known, missing, err := sectionFigures(s, root)
		if err != nil {
			return nil, err
		}
		for _, f := range missing {
			out = append(out, Problem{s.Title, s.Line, "names " + f + ", which does not exist"})
		}
		prose, lines := proseOf(s.Text)
		for _, f := range Figures(prose) {
			if f.Dim == Count || known.holds(f) {
				continue
			}
			if i := allowedIndex(allowed, s.Title, f.Text); i >= 0 {
				used[i] = true
				continue
			}
			out = append(out, Problem{s.Title, s.Line + lines(f.Offset), fmt.Sprintf("%q: %s", f.Text, context(prose, f))})
		}
	}
	for i, a := range allowed {
		if !used[i] {
			out = append(out, Problem{a.Section, 0, fmt.Sprintf("allowed figure %q is not in the prose any more", a.Figure)})
		}
	}
	return out, nil
}

func allowedIndex(allowed []Allowed, section, figure string) int {
	for i, a := range allowed {
		if (section == a.Section || a.Section != "" && strings.HasPrefix(section, a.Section)) && a.Figure == figure {
			return i
		}
	}
	return -1
}

// context is the figure with a few words around it, for a message.
func context(text string, f Figure) string {
	from, to := max(0, f.Offset-50), min(len(text), f.Offset+len(f.Text)+30)
	return "…" + strings.Join(strings.Fields(text[from:to]), " ") + "…"
}

// figureSet is what a section's figures are checked against: the figures of its generated
// blocks, and every number of its results files with the dimension its key or unit gives it.
type figureSet struct {
	byDim map[Dimension][]float64
	// counts are the blocks' numbers without a unit: a ratio's interval, or a table cell under a
	// header that names its unit.
	counts []float64
}

func (k *figureSet) add(d Dimension, v float64) {
	if k.byDim == nil {
		k.byDim = map[Dimension][]float64{}
	}
	if d == Count {
		k.counts = append(k.counts, v)
		return
	}
	k.byDim[d] = append(k.byDim[d], v)
}

// holds says whether the figure, as written, is one of the set's: in its dimension, or, for a
// ratio or a rate, among the blocks' numbers without a unit (the tables print those bare, under a
// header that names them).
func (k *figureSet) holds(f Figure) bool {
	for _, v := range k.byDim[f.Dim] {
		if f.matches(v) {
			return true
		}
	}
	if f.Dim != Ratio && f.Dim != Rate {
		return false
	}
	for _, v := range k.counts {
		if math.Abs(v-f.Value) <= halfDigit(f) {
			return true
		}
	}
	return false
}

// sectionFigures gathers the figures of a section's generated blocks and results files, and the
// files it names that do not exist.
func sectionFigures(s Section, root string) (*figureSet, []string, error) {
	k := &figureSet{}
	blocks, err := Blocks(s.Text)
	if err != nil {
		return nil, nil, fmt.Errorf("section %q: %w", s.Title, err)
	}
	files := s.Files()
	for _, b := range blocks {
		for _, f := range Figures(b.Body) {
			if f.Dim == Count {
				k.add(Count, f.Value)
				continue
			}
			k.add(f.Dim, f.base())
		}
		for _, f := range b.Files {
			files = appendNew(files, f)
		}
	}
	var missing []string
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			missing = append(missing, f)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		flatten("", v, k, unit{})
	}
	return k, missing, nil
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// flatten adds every number of a results file to k, in the dimension its key gives it, and the
// figures of its strings ("gp3 (125 MiB/s, 3000 IOPS, 1ms per request)") in theirs. An object
// whose "unit" field names a unit ({"unit": "us", "oursSamples": [110, 257]}) gives that unit to
// its numbers, and its arrays' numbers, whose keys name none; named is that unit, or the zero unit.
func flatten(key string, v any, k *figureSet, named unit) {
	switch x := v.(type) {
	case map[string]any:
		own := unit{}
		if name, ok := x["unit"].(string); ok {
			own = units[name]
		}
		for kk, vv := range x {
			flatten(kk, vv, k, own)
		}
	case []any:
		for _, vv := range x {
			flatten(key, vv, k, named)
		}
	case float64:
		d, factor := keyDimension(key)
		if d == Count && named.dim != "" {
			d, factor = named.dim, named.factor
		}
		if d != Count {
			k.add(d, x*factor)
		}
	case string:
		for _, f := range Figures(x) {
			if f.Dim != Count {
				k.add(f.Dim, f.base())
			}
		}
		for _, m := range quantity.FindAllStringSubmatch(x, -1) {
			n, _ := strconv.ParseFloat(m[1], 64)
			k.add(Bytes, n*quantityUnits[m[2]])
		}
	}
}

// quantity is a size in a results file's settings, as Kubernetes or mysqld writes it: "16Mi",
// "4Gi", "--innodb-buffer-pool-size=2560M".
var quantity = regexp.MustCompile(`(?:^|[=\s(])(\d+)(Ki|Mi|Gi|K|M|G)(?:$|[\s,)])`)

var quantityUnits = map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

// keyDimension reads the unit of a results file's number from its key: deviceWriteMiB,
// p99LatencyMillis, transactionsPerSecond, vmDirtyExpireCentisecs, cpuShareOfOneCoreAtInterval.
// A key with no unit in its name is a count, which the prose is not checked against.
func keyDimension(key string) (Dimension, float64) {
	k := strings.ToLower(key)
	switch {
	case strings.Contains(k, "bytespersecond"):
		return ByteRate, 1
	case strings.Contains(k, "persecond") || k == "tps":
		return Rate, 1
	case strings.Contains(k, "gib"):
		return Bytes, 1 << 30
	case strings.Contains(k, "mib"):
		return Bytes, 1 << 20
	case strings.Contains(k, "kib"):
		return Bytes, 1 << 10
	case strings.Contains(k, "bytes"):
		return Bytes, 1
	case strings.Contains(k, "centisecs"):
		return Time, 0.01
	case strings.Contains(k, "millis"):
		return Time, 1e-3
	case strings.Contains(k, "micros"):
		return Time, 1e-6
	case strings.Contains(k, "seconds") || strings.HasSuffix(k, "secs"):
		return Time, 1
	case strings.Contains(k, "percent") || strings.HasSuffix(k, "pct"):
		return Percent, 1
	case strings.Contains(k, "share"):
		return Percent, 100
	case strings.Contains(k, "ratio") || k == "low" || k == "high":
		return Ratio, 1
	}
	return Count, 1
}

// proseOf blanks what is not prose in a section — generated blocks, code spans and blocks, HTML
// comments, link targets and titles — keeping every offset and line in place, and
// returns a function from an offset to its line within the section.
func proseOf(text string) (string, func(int) int) {
	b := []byte(text)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	if blocks, err := Blocks(text); err == nil {
		for _, bl := range blocks {
			blank(bl.start, bl.end)
		}
	}
	for _, re := range notProse {
		for _, m := range re.FindAllIndex(b, -1) {
			blank(m[0], m[1])
		}
	}
	return string(b), func(off int) int { return strings.Count(text[:off], "\n") }
}

// notProse are the parts of Markdown whose numbers are not the document's claims: code (commands
// and flags), comments, link targets and titles. Tables written by hand are prose.
var notProse = []*regexp.Regexp{
	regexp.MustCompile("(?s)```.*?```"),
	regexp.MustCompile("`[^`\n]*`"),
	regexp.MustCompile(`(?s)<!--.*?-->`),
	regexp.MustCompile(`\]\([^)\n]*\)`),
	regexp.MustCompile(`(?m)^#.*$`),
}

func halfDigit(f Figure) float64 {
	return 0.5*math.Pow(10, -float64(f.Decimals)) + 1e-9*math.Abs(f.Value)
}
