package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
	"github.com/dbtune/scratch-operator/test/bench/method"
)

// Report is results.json.
type Report struct {
	GeneratedAt     time.Time `json:"generatedAt"`
	Command         string    `json:"command"`
	DurationSeconds float64   `json:"durationSeconds"`
	Machine         Machine   `json:"machine"`
	Settings        Settings  `json:"settings"`
	// Method says how the figures were taken, so that the JSON stands on its own.
	Method    string            `json:"method"`
	Workloads map[string]string `json:"workloads"`
	Costs     []CostSeries      `json:"costs"`
	Heap      []HeapSeries      `json:"heap"`
	// Rounds are the volume counts of each run in the order measured, each with the machine's
	// conditions at its start; results from before they were recorded have none.
	Rounds []Round `json:"rounds,omitempty"`
	// Comparisons are the intervals of the CPU ratios the report quotes, drawn from every run.
	Comparisons []Comparison `json:"comparisons,omitempty"`
}

// Round is one volume count measured in one run.
type Round struct {
	Run        int               `json:"run"`
	Position   int               `json:"position"`
	Volumes    int               `json:"volumes"`
	Conditions method.Conditions `json:"conditions"`
}

// Comparison is the ratio of one workload's median CPU per round to another's at one volume
// count, with its interval and verdict.
type Comparison struct {
	Volumes   int    `json:"volumes"`
	Workload  string `json:"workload"`
	Reference string `json:"reference"`
	method.Comparison
}

// Settings are the parameters of the run.
type Settings struct {
	VolumeCounts []int `json:"volumeCounts"`
	Runs         int   `json:"runs"`
	// Seed drew each run's order of the volume counts; results from before it was recorded
	// started each run one count further along.
	Seed            int64   `json:"seed,omitempty"`
	VolumeSize      string  `json:"volumeSize"`
	MeasureSeconds  float64 `json:"measureSecondsPerFigure"`
	IntervalSeconds float64 `json:"samplingIntervalSeconds"`
	WindowSeconds   float64 `json:"peakWindowSeconds"`
	WarmUpRounds    int     `json:"warmUpRounds"`
	KubeletRoot     string  `json:"kubeletRoot"`
	Pods            string  `json:"pods"`
	Fill            string  `json:"fill"`
	GOMAXPROCS      int     `json:"gomaxprocs"`
}

// CostSeries is one workload at one volume count: every run and their medians.
type CostSeries struct {
	Workload    string  `json:"workload"`
	Volumes     int     `json:"volumes"`
	Runs        []Cost  `json:"runs"`
	CPUSeconds  Summary `json:"cpuSecondsPerRound"`
	WallSeconds Summary `json:"wallSecondsPerRound"`
	// CPUSecondsPerVolume is the median CPU per round divided by the volumes.
	CPUSecondsPerVolume float64 `json:"cpuSecondsPerVolume"`
	Allocs              float64 `json:"allocsPerRoundMedian"`
	AllocBytes          float64 `json:"allocBytesPerRoundMedian"`
	// CPUShare is the median CPU per round over the sampling interval: the share of one core the
	// workload takes when run every interval. Set only for the workloads that are.
	CPUShare *float64 `json:"cpuShareOfOneCoreAtInterval,omitempty"`
}

// HeapSeries is the live heap after warm-up at one volume count, with one pod reader.
type HeapSeries struct {
	Reader  string `json:"reader"`
	Volumes int    `json:"volumes"`
	// SamplerBytes is the live heap the sampler added after its warm-up; PodStoreBytes what the
	// reader holds for the pods. One entry per run.
	SamplerBytes     []float64 `json:"samplerBytes"`
	PodStoreBytes    []float64 `json:"podStoreBytes"`
	Sampler          Summary   `json:"samplerBytesSummary"`
	SamplerPerVolume float64   `json:"samplerBytesPerVolume"`
	PodStore         Summary   `json:"podStoreBytesSummary"`
}

const methodText = "All volume counts are measured in every run, one after the other, in an order drawn anew for each run " +
	"from the recorded seed; each figure is the median over the runs, and each quoted ratio has a 95 % percentile bootstrap interval " +
	"over the runs (10000 resamples) and is called a difference only when the interval excludes 1. For a cost, the workload is first run " +
	"for a tenth of the measuring time to calibrate (and warm up), then a fixed number of rounds lasting about the " +
	"measuring time is timed with no clock read inside (the sampler's clock moves 1 s, the default interval, per round): CPU is the process's user + system time (getrusage, " +
	"garbage collection included) divided by the rounds, wall time likewise, allocations from runtime.MemStats. " +
	"For the heap, runtime.GC and HeapAlloc are read before the pod reader is built, after it is built, and after " +
	"the sampler is built and has run its warm-up (the clock moved one window slice, 1 min, per round for just over " +
	"a window, so every volume holds a full window); samplerBytes is the last difference. The sampler runs with its defaults " +
	"(1 s interval, 1 h window) and publishes nothing to the API (its NodeIOProfile writer is not set up). The " +
	"sampler's figures are checked against what was written into each volume before anything is measured. One " +
	"unrecorded pass at the smallest count comes first, to fill the process's one-time caches."

// workloadDescriptions says what one round of each workload does.
func workloadDescriptions() map[string]string {
	d := map[string]string{
		wStatfs: "statfs(2) on each volume directory: the floor of a sampling round",
		wGather: "prometheus Registry.Gather of the sampler's collector (5 series per volume)",
		wScrape: "Gather, then the text exposition format written to io.Discard (no HTTP, no gzip)",
	}
	for _, r := range readers {
		d[wList+r] = "List of the node's pods through the " + readerDescription(r)
		d[wSample+r] = "Sampler.SampleOnce (list the pods, find the volumes, statfs each, update the figures) over the " + readerDescription(r)
	}
	return d
}

func readerDescription(r string) string {
	if r == fakeReader {
		return "controller-runtime fake client holding whole pods (each List is a JSON round trip)"
	}
	return "cache-like reader holding pods trimmed by the agent's cache transform, deep-copied on each List as the informer cache does"
}

func (r *Report) addCost(workload string, n int, c Cost) {
	i := slices.IndexFunc(r.Costs, func(s CostSeries) bool { return s.Workload == workload && s.Volumes == n })
	if i < 0 {
		r.Costs = append(r.Costs, CostSeries{Workload: workload, Volumes: n})
		i = len(r.Costs) - 1
	}
	r.Costs[i].Runs = append(r.Costs[i].Runs, c)
}

func (r *Report) addHeap(reader string, n int, sampler, store int64) {
	i := slices.IndexFunc(r.Heap, func(h HeapSeries) bool { return h.Reader == reader && h.Volumes == n })
	if i < 0 {
		r.Heap = append(r.Heap, HeapSeries{Reader: reader, Volumes: n})
		i = len(r.Heap) - 1
	}
	r.Heap[i].SamplerBytes = append(r.Heap[i].SamplerBytes, float64(sampler))
	r.Heap[i].PodStoreBytes = append(r.Heap[i].PodStoreBytes, float64(store))
}

// summarize fills in the medians once every run is in, and orders the series by volume count.
func (r *Report) summarize() {
	for i := range r.Costs {
		s := &r.Costs[i]
		s.CPUSeconds = summarize(field(s.Runs, func(c Cost) float64 { return c.CPUSeconds }))
		s.WallSeconds = summarize(field(s.Runs, func(c Cost) float64 { return c.WallSeconds }))
		s.Allocs = summarize(field(s.Runs, func(c Cost) float64 { return c.Allocs })).Median
		s.AllocBytes = summarize(field(s.Runs, func(c Cost) float64 { return c.AllocBytes })).Median
		s.CPUSecondsPerVolume = s.CPUSeconds.Median / float64(s.Volumes)
		if s.Workload == wStatfs || strings.HasPrefix(s.Workload, wSample) {
			share := s.CPUSeconds.Median / scratchusage.DefaultInterval.Seconds()
			s.CPUShare = &share
		}
	}
	for i := range r.Heap {
		h := &r.Heap[i]
		h.Sampler, h.PodStore = summarize(h.SamplerBytes), summarize(h.PodStoreBytes)
		h.SamplerPerVolume = h.Sampler.Median / float64(h.Volumes)
	}
	slices.SortStableFunc(r.Costs, func(a, b CostSeries) int { return cmp.Compare(a.Volumes, b.Volumes) })
	slices.SortStableFunc(r.Heap, func(a, b HeapSeries) int { return cmp.Compare(a.Volumes, b.Volumes) })
	r.Comparisons = r.comparisons()
}

// comparedWorkloads are the ratios of CPU per round the report quotes: a sampling round against
// statfs alone, its floor, and the fake client's round against the agent's.
var comparedWorkloads = [][2]string{{wSample + cachedReader, wStatfs}, {wSample + fakeReader, wSample + cachedReader}}

// comparisons draws the interval of every compared ratio at every volume count.
func (r *Report) comparisons() []Comparison {
	seed := r.Settings.Seed
	if seed == 0 {
		seed = method.BootstrapSeed
	}
	var out []Comparison
	for _, n := range r.Settings.VolumeCounts {
		for _, pair := range comparedWorkloads {
			a, b := r.cost(pair[0], n), r.cost(pair[1], n)
			if a == nil || b == nil {
				continue
			}
			cpu := func(c Cost) float64 { return c.CPUSeconds }
			out = append(out, Comparison{Volumes: n, Workload: pair[0], Reference: pair[1],
				Comparison: method.Compare(field(a.Runs, cpu), field(b.Runs, cpu), seed)})
		}
	}
	return out
}

func field(cs []Cost, f func(Cost) float64) []float64 {
	out := make([]float64, len(cs))
	for i, c := range cs {
		out[i] = f(c)
	}
	return out
}

// cost returns the series of a workload at n volumes, or nil.
func (r *Report) cost(workload string, n int) *CostSeries {
	i := slices.IndexFunc(r.Costs, func(s CostSeries) bool { return s.Workload == workload && s.Volumes == n })
	if i < 0 {
		return nil
	}
	return &r.Costs[i]
}

func (r *Report) heap(reader string, n int) *HeapSeries {
	i := slices.IndexFunc(r.Heap, func(h HeapSeries) bool { return h.Reader == reader && h.Volumes == n })
	if i < 0 {
		return nil
	}
	return &r.Heap[i]
}

func writeJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// printTable writes the figures for people: the costs per count, then the heap.
func printTable(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "VOLUMES\tWORKLOAD\tCPU/ROUND\tMIN–MAX\tCPU/VOLUME\tWALL/ROUND\tALLOCS/ROUND\tALLOC/ROUND\tCPU AT 1 s\t")
	for _, s := range r.Costs {
		share := "-"
		if s.CPUShare != nil {
			share = strconv.FormatFloat(*s.CPUShare*100, 'f', 3, 64) + "%"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s–%s\t%s\t%s\t%.0f\t%s\t%s\t\n", s.Volumes, s.Workload,
			formatSeconds(s.CPUSeconds.Median), formatSeconds(s.CPUSeconds.Min), formatSeconds(s.CPUSeconds.Max),
			formatSeconds(s.CPUSecondsPerVolume), formatSeconds(s.WallSeconds.Median), s.Allocs, formatBytes(s.AllocBytes), share)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "VOLUMES\tREADER\tSAMPLER HEAP\tMIN–MAX\tPER VOLUME\tPOD STORE HEAP\t")
	for _, h := range r.Heap {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s–%s\t%s\t%s\t\n", h.Volumes, h.Reader, formatBytes(h.Sampler.Median),
			formatBytes(h.Sampler.Min), formatBytes(h.Sampler.Max), formatBytes(h.SamplerPerVolume), formatBytes(h.PodStore.Median))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nMedians of %d runs on %s.\n", r.Settings.Runs, machineLine(r.Machine))
}

// formatSeconds writes a short duration in µs or ms with three significant digits.
func formatSeconds(s float64) string {
	switch {
	case math.IsNaN(s):
		return "-"
	case s < 1e-3:
		return strconv.FormatFloat(s*1e6, 'f', digits(s*1e6), 64) + " µs"
	}
	return strconv.FormatFloat(s*1e3, 'f', digits(s*1e3), 64) + " ms"
}

func formatBytes(b float64) string {
	switch a := math.Abs(b); {
	case math.IsNaN(b):
		return "-"
	case a >= 1<<20:
		return strconv.FormatFloat(b/(1<<20), 'f', digits(a/(1<<20)), 64) + " MiB"
	case a >= 1<<10:
		return strconv.FormatFloat(b/(1<<10), 'f', digits(a/(1<<10)), 64) + " KiB"
	}
	return strconv.FormatFloat(b, 'f', 0, 64) + " B"
}

// digits gives three significant digits to a value from 1 to 999 (and two decimals below 1).
func digits(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	}
	return 2
}

// Machine describes where the figures were measured.
type Machine struct {
	CPUModel      string `json:"cpuModel"`
	Cores         int    `json:"cores"`
	MemoryBytes   int64  `json:"memoryBytes"`
	Kernel        string `json:"kernel"`
	Virtual       bool   `json:"virtualMachine"`
	GoVersion     string `json:"goVersion"`
	LoadAvgStart  string `json:"loadAverageAtStart"`
	LoadAvgFinish string `json:"loadAverageAtFinish"`
}

func describeMachine() Machine {
	var u unix.Utsname
	_ = unix.Uname(&u)
	var si unix.Sysinfo_t
	_ = unix.Sysinfo(&si)
	return Machine{
		CPUModel: cpuinfo("model name"), Cores: runtime.NumCPU(), MemoryBytes: int64(si.Totalram) * int64(si.Unit),
		Kernel: unix.ByteSliceToString(u.Release[:]), Virtual: strings.Contains(" "+cpuinfo("flags")+" ", " hypervisor "),
		GoVersion: runtime.Version(), LoadAvgStart: loadAverage(),
	}
}

func machineLine(m Machine) string {
	parts := []string{m.CPUModel, fmt.Sprintf("%d cores", m.Cores), fmt.Sprintf("%.0f GiB RAM", float64(m.MemoryBytes)/(1<<30)), "Linux " + m.Kernel}
	if m.Virtual {
		parts = append(parts, "virtual machine")
	}
	return strings.Join(parts, ", ")
}

// cpuinfo returns the first value of key in /proc/cpuinfo.
func cpuinfo(key string) string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return ""
}
