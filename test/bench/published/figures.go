package published

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Dimension is what a figure measures, so that 2.29 GiB is found as 2348 MiB and 15 s as 15000 ms,
// but never as 15 MiB.
type Dimension string

// Dimensions of figures.
const (
	Time  Dimension = "time"
	Bytes Dimension = "bytes"
	Rate  Dimension = "per second"
	// ByteRate is bytes per second, apart from Rate's events per second.
	ByteRate Dimension = "bytes per second"
	Ratio    Dimension = "ratio"
	Percent  Dimension = "percent"
	// Count is a number with no unit: not a measured figure in the prose, and in a generated block
	// what its table's header names.
	Count Dimension = "count"
)

// unit is a unit a measured figure is written in: its dimension and its size in the dimension's
// base unit (seconds, bytes, events or bytes per second, a ratio, a percentage).
type unit struct {
	dim    Dimension
	factor float64
}

// units are the units that make a number a measured figure.
var units = map[string]unit{
	"x": {Ratio, 1}, "%": {Percent, 1},
	"s": {Time, 1}, "ms": {Time, 1e-3}, "µs": {Time, 1e-6}, "us": {Time, 1e-6},
	"second": {Time, 1}, "seconds": {Time, 1}, "min": {Time, 60}, "minute": {Time, 60}, "minutes": {Time, 60},
	"KiB": {Bytes, 1 << 10}, "MiB": {Bytes, 1 << 20}, "GiB": {Bytes, 1 << 30}, "MB": {Bytes, 1e6}, "GB": {Bytes, 1e9},
	"B/s": {ByteRate, 1}, "KiB/s": {ByteRate, 1 << 10}, "MiB/s": {ByteRate, 1 << 20}, "GiB/s": {ByteRate, 1 << 30}, "MB/s": {ByteRate, 1e6}, "GB/s": {ByteRate, 1e9},
	"tps": {Rate, 1}, "transactions/s": {Rate, 1}, "queries/s": {Rate, 1}, "files/s": {Rate, 1}, "requests/s": {Rate, 1},
}

// unitNames are the units' names, longest first, so that "MiB/s" is not read as "MiB".
var unitNames = func() []string {
	names := make([]string, 0, len(units))
	for n := range units {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return len(names[i]) > len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
	})
	return names
}()

// joined is what chains a number to the next one of a range or a list: "2.95–3.03 s", "3.7 / 28.4 s".
var joined = regexp.MustCompile(`^(?:[–-]|[ \x{00a0}\x{202f}]?/[ \x{00a0}\x{202f}]?| to | and )$`)

// Figure is a number of a text, with its unit when it has one.
type Figure struct {
	// Text is the number and its unit as written.
	Text string
	// Value is the number in Unit, and Decimals how many digits it has after the point.
	Value    float64
	Decimals int
	Unit     string
	Dim      Dimension
	// Offset is where the number starts in the text.
	Offset int
}

// base is the figure in its dimension's base unit.
func (f Figure) base() float64 {
	if u, ok := units[f.Unit]; ok {
		return f.Value * u.factor
	}
	return f.Value
}

// Figures finds the numbers of text that stand on their own: not part of a word ("p95", "v1"),
// a version ("6.18.44"), a date or a quantity such as "4Gi". A number without a unit of its own
// takes the unit of the number it is joined to by a dash, a slash, "to" or "and": in
// "2.95–3.03 s" both are seconds.
func Figures(text string) []Figure {
	var out []Figure
	for i := 0; i < len(text); {
		f, next, ok := figureAt(text, i)
		if ok {
			out = append(out, f)
		}
		i = next
	}
	for i := len(out) - 2; i >= 0; i-- {
		gap := text[out[i].Offset+len(out[i].Text) : out[i+1].Offset]
		if out[i].Unit == "" && out[i+1].Unit != "" && joined.MatchString(gap) {
			out[i].Unit, out[i].Dim = out[i+1].Unit, out[i+1].Dim
		}
	}
	return out
}

// figureAt reads the figure that starts at i, if one does, and says where to look next.
func figureAt(text string, i int) (Figure, int, bool) {
	r, size := utf8.DecodeRuneInString(text[i:])
	if !unicode.IsDigit(r) {
		return Figure{}, i + size, false
	}
	if i > 0 {
		prev, _ := utf8.DecodeLastRuneInString(text[:i])
		if unicode.IsLetter(prev) || unicode.IsDigit(prev) || strings.ContainsRune("._-=/:#+", prev) {
			return Figure{}, skipToken(text, i), false
		}
	}
	j := digits(text, i)
	// Thousands grouped by spaces: "20 000", "2 097 152".
	for {
		k := j + groupSeparator(text[j:])
		e := digits(text, k)
		if k == j || e-k != 3 || startsDigit(text[e:]) {
			break
		}
		j = e
	}
	f := Figure{Offset: i, Dim: Count}
	intPart := strings.NewReplacer(" ", "", "\u202f", "", "\u00a0", "").Replace(text[i:j])
	frac := ""
	if strings.HasPrefix(text[j:], ".") && startsDigit(text[j+1:]) {
		e := digits(text, j+1)
		frac, j = text[j:e], e
		f.Decimals = len(frac) - 1
	}
	// A version or a date goes on with a dot and digits, or a dash and digits.
	if (strings.HasPrefix(text[j:], ".") || strings.HasPrefix(text[j:], "-")) && startsDigit(text[j+1:]) {
		return Figure{}, skipToken(text, j), false
	}
	f.Value, _ = strconv.ParseFloat(intPart+frac, 64)
	end, unitName := unitAt(text, j)
	if unitName == "" && startsWordChar(text[j:]) {
		return Figure{}, skipToken(text, j), false
	}
	f.Unit, f.Dim = unitName, Count
	if unitName != "" {
		f.Dim = units[unitName].dim
	}
	f.Text = text[i:end]
	return f, end, true
}

// groupSeparator is the length of the space that groups a number's thousands at the start of s,
// 0 when there is none.
func groupSeparator(s string) int {
	for _, sep := range []string{" ", "\u202f", "\u00a0"} {
		if strings.HasPrefix(s, sep) {
			return len(sep)
		}
	}
	return 0
}

// unitAt reads a unit right after a number ending at j ("1.25x", "47%", "9.71 s"), and returns
// where it ends, or j and "" when none follows.
func unitAt(text string, j int) (int, string) {
	for _, gap := range []string{"", " ", "\u00a0"} {
		if !strings.HasPrefix(text[j:], gap) {
			continue
		}
		k := j + len(gap)
		for _, name := range unitNames {
			if name == "x" && gap != "" {
				continue
			}
			if strings.HasPrefix(text[k:], name) && (name == "%" || !startsWordChar(text[k+len(name):])) {
				return k + len(name), name
			}
		}
	}
	return j, ""
}

func digits(text string, i int) int {
	for i < len(text) && text[i] >= '0' && text[i] <= '9' {
		i++
	}
	return i
}

func startsDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

func startsWordChar(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

// skipToken moves past the rest of a word, version or identifier.
func skipToken(text string, i int) int {
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._-=/:#+", r) {
			break
		}
		i += size
	}
	return i
}

// matches says whether a figure as written could be candidate rounded: within half a unit of
// its last digit, in its own unit.
func (f Figure) matches(candidate float64) bool {
	u := 1.0
	if x, ok := units[f.Unit]; ok {
		u = x.factor
	}
	v := candidate / u
	return math.Abs(v-f.Value) <= 0.5*math.Pow(10, -float64(f.Decimals))+1e-9*math.Abs(f.Value)
}
