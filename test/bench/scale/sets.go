package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// set is one results file's runs of one size with the manager's defaults.
type set struct {
	file          string
	n             int
	bare, manager []float64
	seed          int64
}

// ratios are each run's manager / bare.
func (s set) ratios() []float64 {
	out := make([]float64, len(s.bare))
	for i := range s.bare {
		out[i] = s.manager[i] / s.bare[i]
	}
	return out
}

// readSets reads every set of runs of files, relative to root, in the order given.
func readSets(root string, files []string) ([]set, error) {
	var out []set
	for _, f := range files {
		r, err := readResults(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, l := range r.levelsOf(defaultSettings.Name) {
			out = append(out, set{file: filepath.Base(f), n: l.N, seed: r.bootstrapSeed(),
				bare:    l.each(func(x runResult) float64 { return x.Bare.Seconds }),
				manager: l.each(func(x runResult) float64 { return x.Selector.Seconds })})
		}
	}
	return out, nil
}

// pooled is every run of the sets of one size as one set, and how many sets it holds.
func pooled(sets []set, n int) (set, int) {
	p := set{n: n, seed: method.BootstrapSeed}
	count := 0
	for _, s := range sets {
		if s.n == n {
			p.bare, p.manager = append(p.bare, s.bare...), append(p.manager, s.manager...)
			count++
		}
	}
	return p, count
}

// setsMarkdown tabulates, for several results files, every set of runs with the manager's
// defaults: each run's manager / bare ratio, and the set's ratio of medians with its interval;
// with pool, beside each set, all the runs of every set of its size pooled with their interval,
// and a row of them for each size measured more than once. One set's median is one draw of
// many; the pooled figure says what they give together, which only means something for sets of
// the same code and method.
func setsMarkdown(root string, files []string, pool bool) (string, error) {
	sets, err := readSets(root, files)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if pool {
		b.WriteString("| results | StatefulSets | runs | each run: manager / bare | manager / bare (95% interval) | verdict | all sets of this size pooled: runs, manager / bare (95% interval), verdict |\n|---|---:|---:|---|---:|---|---|\n")
	} else {
		b.WriteString("| results | StatefulSets | runs | each run: manager / bare | manager / bare (95% interval) | verdict |\n|---|---:|---:|---|---:|---|\n")
	}
	var sizes []int
	for _, s := range sets {
		c := method.Compare(s.manager, s.bare, s.seed)
		fmt.Fprintf(&b, "| `%s` | %d | %d | %s | %s | %s |", s.file, s.n, len(s.bare), ratioList(s.ratios()), versusCell(c), versusVerdict(c))
		if pool {
			p, _ := pooled(sets, s.n)
			pc := method.Compare(p.manager, p.bare, p.seed)
			fmt.Fprintf(&b, " %d, %s, %s |", len(p.bare), versusCell(pc), versusVerdict(pc))
		}
		b.WriteString("\n")
		if !slices.Contains(sizes, s.n) {
			sizes = append(sizes, s.n)
		}
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		p, count := pooled(sets, n)
		if !pool || count < 2 {
			continue
		}
		c := method.Compare(p.manager, p.bare, p.seed)
		ratios := p.ratios()
		fmt.Fprintf(&b, "| the %d sets of %d above, pooled | %d | %d | %.2fx–%.2fx, median %.2fx | %s | %s | |\n", count, n, n, len(ratios),
			slices.Min(ratios), slices.Max(ratios), method.Median(ratios), versusCell(c), versusVerdict(c))
	}
	fmt.Fprintf(&b, "\nmanager / bare: the median of the manager's injection times over the median of the bare client's, with a %.0f %% percentile bootstrap interval over the runs (%d resamples; each file's seed, or %d where it recorded none, and for pooled figures); the verdict names a difference only where the interval excludes 1.\n",
		100*method.Level, method.Resamples, method.BootstrapSeed)
	return b.String(), nil
}

// ratioList writes ratios as "1.25x / 1.32x / 1.23x".
func ratioList(ratios []float64) string {
	parts := make([]string, len(ratios))
	for i, r := range ratios {
		parts[i] = fmt.Sprintf("%.2fx", r)
	}
	return strings.Join(parts, " / ")
}
