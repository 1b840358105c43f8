package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// Report is the results file.
type Report struct {
	GeneratedAt     time.Time `json:"generatedAt"`
	Command         string    `json:"command"`
	DurationSeconds float64   `json:"durationSeconds"`
	Settings        Settings  `json:"settings"`
	Device          Device    `json:"device"`
	Server          *Server   `json:"server,omitempty"`
	// Method says how the figures were taken, so that the file stands on its own.
	Method    string     `json:"method"`
	Workloads []Workload `json:"workloads"`
	// Runs are every run, in the order measured.
	Runs []Run `json:"runs"`
	// Summaries are the medians of each workload at each read-ahead, and Comparisons their
	// ratios to the baseline's, drawn from Runs.
	Summaries   []Summary    `json:"summaries"`
	Comparisons []Comparison `json:"comparisons"`
}

// Settings are the parameters of the run.
type Settings struct {
	// ReadAheadKiB are the values compared; BaselineKiB is the one the others are compared with.
	ReadAheadKiB []int64 `json:"readAheadKiB"`
	BaselineKiB  int64   `json:"baselineKiB"`
	// Rounds are the rounds of each file workload, ScanRounds those of the server's scans.
	Rounds     int   `json:"rounds"`
	ScanRounds int   `json:"scanRounds"`
	Seed       int64 `json:"seed"`
	// CacheDrop says how the page cache was emptied before each run.
	CacheDrop string `json:"cacheDrop"`
}

// Device describes the volume the runs read from.
type Device struct {
	// Profile is the cloud volume's profile, as it describes itself.
	Profile    string `json:"profile"`
	Name       string `json:"name"`
	Filesystem string `json:"filesystem"`
	SizeBytes  int64  `json:"sizeBytes"`
	// OriginalReadAheadKiB is the read-ahead the device had before the benchmark set it, and
	// restored after.
	OriginalReadAheadKiB int64 `json:"originalReadAheadKiB"`
	// MaxSectorsKiB is the largest request the device takes (queue/max_sectors_kb).
	MaxSectorsKiB int64 `json:"maxSectorsKiB"`
	// DirectIO says the loop device reads its file with direct I/O, so data is cached once.
	DirectIO bool `json:"directIO"`
}

// Server describes the database server the scans ran on.
type Server struct {
	// Version is what the server reports.
	Version string `json:"version"`
	// Args are its settings besides the flush method, which each scan sets.
	Args []string `json:"args"`
	// MemoryLimit is the limit of its container's memory cgroup.
	MemoryLimit string `json:"memoryLimit"`
	// TableFileBytes is the size of the scanned table's file, and Rows its rows.
	TableFileBytes int64 `json:"tableFileBytes"`
	Rows           int64 `json:"rows"`
}

// Workload is one kind of read, as the results describe it.
type Workload struct {
	Name string `json:"name"`
	// Title is the workload's name in the tables, and StandsFor what on a database host it is.
	Title     string `json:"title"`
	StandsFor string `json:"standsFor"`
	// How is what a run does, the tool included.
	How string `json:"how"`
	// BlockBytes is the size of each read the workload asks for (0 for the server's scan).
	BlockBytes int64 `json:"blockBytes,omitempty"`
	// FileBytes is the size of the file read.
	FileBytes int64 `json:"fileBytes"`
}

// Run is one run of one workload at one read-ahead.
type Run struct {
	Workload     string `json:"workload"`
	ReadAheadKiB int64  `json:"readAheadKiB"`
	// Round counts from 1; Position is the run's place in its round's order, from 1.
	Round    int `json:"round"`
	Position int `json:"position"`
	// Seconds is the time of the reads (of the query, for a scan).
	Seconds float64 `json:"seconds"`
	// RequestedBytes is what the workload read: its reads' bytes, or for a scan what InnoDB read
	// from its files (Innodb_data_read).
	RequestedBytes int64 `json:"requestedBytes"`
	// ReadBytesPerSecond is RequestedBytes over Seconds.
	ReadBytesPerSecond float64 `json:"readBytesPerSecond"`
	// DeviceReadBytes and DeviceReads are what reached the volume's device during the reads, from
	// its own counters.
	DeviceReadBytes int64 `json:"deviceReadBytes"`
	DeviceReads     int64 `json:"deviceReads"`
	// CachedBeforeBytes and CachedAfterBytes are how much of the file the page cache held when the
	// reads started and ended (mincore).
	CachedBeforeBytes int64 `json:"cachedBeforeBytes"`
	CachedAfterBytes  int64 `json:"cachedAfterBytes"`
	// InnoDBReadBytes is Innodb_data_read over a scan's query.
	InnoDBReadBytes int64             `json:"innodbReadBytes,omitempty"`
	Conditions      method.Conditions `json:"conditions"`
}

// Summary is the medians of one workload's runs at one read-ahead.
type Summary struct {
	Workload           string  `json:"workload"`
	ReadAheadKiB       int64   `json:"readAheadKiB"`
	Runs               int     `json:"runs"`
	Seconds            float64 `json:"medianSeconds"`
	ReadBytesPerSecond float64 `json:"medianReadBytesPerSecond"`
	DeviceReadBytes    float64 `json:"medianDeviceReadBytes"`
	DeviceReads        float64 `json:"medianDeviceReads"`
	CachedAfterBytes   float64 `json:"medianCachedAfterBytes"`
	// AmplificationRatio is the median device bytes over the bytes the workload asked for.
	AmplificationRatio float64 `json:"medianAmplificationRatio"`
}

// Figures the comparisons are drawn on.
const (
	figureThroughput  = "throughput"
	figureDeviceBytes = "device bytes"
)

// Comparison is the ratio of a figure's median at one read-ahead to its median at the baseline.
type Comparison struct {
	Workload     string `json:"workload"`
	ReadAheadKiB int64  `json:"readAheadKiB"`
	Figure       string `json:"figure"`
	method.Comparison
}

// runsOf are the runs of a workload at a read-ahead, in the order measured.
func (r *Report) runsOf(workload string, kib int64) []Run {
	var out []Run
	for _, run := range r.Runs {
		if run.Workload == workload && run.ReadAheadKiB == kib {
			out = append(out, run)
		}
	}
	return out
}

// figure reads one figure of a run.
func figure(run Run, name string) float64 {
	if name == figureThroughput {
		return run.ReadBytesPerSecond
	}
	return float64(run.DeviceReadBytes)
}

func figures(runs []Run, f func(Run) float64) []float64 {
	out := make([]float64, len(runs))
	for i, run := range runs {
		out[i] = f(run)
	}
	return out
}

// summarize draws the summaries and comparisons from the runs.
func (r *Report) summarize() {
	r.Summaries, r.Comparisons = nil, nil
	for _, w := range r.Workloads {
		for _, kib := range r.Settings.ReadAheadKiB {
			runs := r.runsOf(w.Name, kib)
			if len(runs) == 0 {
				continue
			}
			r.Summaries = append(r.Summaries, summarizeRuns(w.Name, kib, runs))
			if kib == r.Settings.BaselineKiB {
				continue
			}
			base := r.runsOf(w.Name, r.Settings.BaselineKiB)
			for _, f := range []string{figureThroughput, figureDeviceBytes} {
				get := func(run Run) float64 { return figure(run, f) }
				r.Comparisons = append(r.Comparisons, Comparison{Workload: w.Name, ReadAheadKiB: kib, Figure: f,
					Comparison: method.Compare(figures(runs, get), figures(base, get), r.Settings.Seed)})
			}
		}
	}
}

func summarizeRuns(workload string, kib int64, runs []Run) Summary {
	return Summary{
		Workload: workload, ReadAheadKiB: kib, Runs: len(runs),
		Seconds:            method.Median(figures(runs, func(x Run) float64 { return x.Seconds })),
		ReadBytesPerSecond: method.Median(figures(runs, func(x Run) float64 { return x.ReadBytesPerSecond })),
		DeviceReadBytes:    method.Median(figures(runs, func(x Run) float64 { return float64(x.DeviceReadBytes) })),
		DeviceReads:        method.Median(figures(runs, func(x Run) float64 { return float64(x.DeviceReads) })),
		CachedAfterBytes:   method.Median(figures(runs, func(x Run) float64 { return float64(x.CachedAfterBytes) })),
		AmplificationRatio: method.Median(figures(runs, func(x Run) float64 {
			return float64(x.DeviceReadBytes) / float64(x.RequestedBytes)
		})),
	}
}

// summary is the summary of a workload at a read-ahead, nil when it has no runs.
func (r *Report) summary(workload string, kib int64) *Summary {
	i := slices.IndexFunc(r.Summaries, func(s Summary) bool { return s.Workload == workload && s.ReadAheadKiB == kib })
	if i < 0 {
		return nil
	}
	return &r.Summaries[i]
}

// comparison is a figure's comparison of a workload at a read-ahead with the baseline.
func (r *Report) comparison(workload string, kib int64, fig string) *Comparison {
	i := slices.IndexFunc(r.Comparisons, func(c Comparison) bool {
		return c.Workload == workload && c.ReadAheadKiB == kib && c.Figure == fig
	})
	if i < 0 {
		return nil
	}
	return &r.Comparisons[i]
}

// conditions are the conditions every run recorded.
func (r *Report) conditions() []method.Conditions {
	out := make([]method.Conditions, len(r.Runs))
	for i, run := range r.Runs {
		out[i] = run.Conditions
	}
	return out
}

// readReport reads a results file of this benchmark and draws its summaries again.
func readReport(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", path, err)
	}
	if len(r.Runs) == 0 || len(r.Settings.ReadAheadKiB) == 0 {
		return nil, fmt.Errorf("%s has no runs of a read-ahead sweep: not this benchmark's results", path)
	}
	r.summarize()
	return &r, nil
}

// writeJSON writes the report, indented, to path.
func writeJSON(path string, r *Report) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}
