package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// readResults reads a results file and judges every comparison again from its rounds (see
// Comparison.summarize), by the rules of this code rather than those of the run that wrote it:
// the medians, intervals and verdicts the file holds are not read, so a file written before the
// verdict followed the interval gets the verdict the interval gives.
func readResults(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the results file: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", path, err)
	}
	resolution, context := judgingRules()
	for i := range r.Comparisons {
		c := &r.Comparisons[i]
		c.summarize(r.Seed, resolution[c.Metric], context[c.ReferenceTool])
	}
	r.Tolerances = map[string]float64{string(Throughput): Throughput.Tolerance(), string(Latency): Latency.Tolerance()}
	return &r, nil
}

// judgingRules are what a verdict needs beyond a comparison's rounds and class, as the series the
// benchmark runs define them: each metric's resolution, by metric ID, and why a reference is
// shown for context, by tool. A disk target with a device has every series.
func judgingRules() (resolution map[string]float64, context map[string]string) {
	resolution, context = map[string]float64{}, map[string]string{}
	for _, s := range buildSeries(&Target{Name: "disk", Kind: probe.KindDisk}, "/dev/loop") {
		for _, m := range s.Metrics {
			resolution[m.ID] = m.Resolution
		}
		for _, ref := range s.References {
			if ref.ForContext != "" {
				context[ref.Tool] = ref.ForContext
			}
		}
	}
	return resolution, context
}
