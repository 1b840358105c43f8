package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// setsMarkdown tabulates, for several results files, every set of runs with the manager's
// defaults: each run's manager / bare ratio, and the set's ratio of medians with its interval;
// with pool, also all the sets of each size measured more than once, pooled. One set's median is
// one draw of many; the pooled row says what they give together, which only means something for
// sets of the same code.
func setsMarkdown(root string, files []string, pool bool) (string, error) {
	var b strings.Builder
	b.WriteString("| results | StatefulSets | runs | each run: manager / bare | manager / bare (95% interval) | verdict |\n|---|---:|---:|---|---:|---|\n")
	type pooled struct{ sets, bare, manager, ratios []float64 }
	pools := map[int]*pooled{}
	for _, f := range files {
		r, err := readResults(filepath.Join(root, f))
		if err != nil {
			return "", err
		}
		for _, l := range r.levelsOf(defaultSettings.Name) {
			bare, manager := l.each(func(x runResult) float64 { return x.Bare.Seconds }), l.each(func(x runResult) float64 { return x.Selector.Seconds })
			ratios := make([]float64, len(bare))
			for i := range bare {
				ratios[i] = manager[i] / bare[i]
			}
			c := method.Compare(manager, bare, r.bootstrapSeed())
			fmt.Fprintf(&b, "| `%s` | %d | %d | %s | %s | %s |\n", filepath.Base(f), l.N, len(l.Runs), ratioList(ratios), versusCell(c), versusVerdict(c))
			p := pools[l.N]
			if p == nil {
				p = &pooled{}
				pools[l.N] = p
			}
			p.sets = append(p.sets, 1)
			p.bare, p.manager, p.ratios = append(p.bare, bare...), append(p.manager, manager...), append(p.ratios, ratios...)
		}
	}
	sizes := make([]int, 0, len(pools))
	for n, p := range pools {
		if pool && len(p.sets) > 1 {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		p := pools[n]
		c := method.Compare(p.manager, p.bare, method.BootstrapSeed)
		fmt.Fprintf(&b, "| the %d sets of %d above, pooled | %d | %d | %.2fx–%.2fx, median %.2fx | %s | %s |\n", len(p.sets), n, n, len(p.ratios),
			slices.Min(p.ratios), slices.Max(p.ratios), method.Median(p.ratios), versusCell(c), versusVerdict(c))
	}
	fmt.Fprintf(&b, "\nmanager / bare: the median of the manager's injection times over the median of the bare client's, with a %.0f %% percentile bootstrap interval over the runs (%d resamples; each file's seed, or %d where it recorded none, and for pooled rows); the verdict names a difference only where the interval excludes 1.\n",
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
