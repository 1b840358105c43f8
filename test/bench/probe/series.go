package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// Figures are the measurements of one run, keyed by metric ID.
type Figures map[string]float64

// Metric is one figure that ours and the reference both produce.
type Metric struct {
	// ID keys the figure in Figures ("seq-buffered", "fdatasync-p99").
	ID string
	// Label names the figure for people ("sequential write 256M bs 128M, buffered").
	Label string
	// Unit is the unit of the raw figure: "B/s", "files/s" or "us".
	Unit  string
	Class Class
	// Resolution is the smallest step the probe reports in Unit; 0 when it reports exact values.
	Resolution float64
}

// Runner is one side of a comparison.
type Runner struct {
	// Tool names the side: "probe" for ours, else fio, dd, hdparm, go-syscall-loop or go-os-loop.
	Tool string
	// Command is what runs, exactly: a command line for a tool, the options for the library.
	Command string
	// Provides lists the metric IDs a reference reports.
	Provides []string
	Run      func(ctx context.Context) (Figures, error)
	// ForContext, when set, says why this reference is not held to the tolerance: it does more
	// work than the probe on purpose. Its comparisons get the verdict ForContext.
	ForContext string
}

// Series is one workload on one target, measured by ours and by reference runs in alternation:
// ours, then each reference, round after round (ABAB…), so that every reference run sits next to
// one of ours and whatever else the shared machine does drifts over both sides alike. A series has
// several references only when one run of ours yields the figures of all of them (a sequential
// write gives the buffered and the fdatasync rate, which fio needs two jobs for).
type Series struct {
	ID         string
	Workload   string
	Target     *Target
	Metrics    []Metric
	Ours       Runner
	References []Runner
	// Note explains what the figures mean on this target when that is not obvious.
	Note string
	// Warm says the timed work fills the page cache of a disk by the hundred megabytes, so every
	// run is preceded by warmMemory. The other series skip it, tmpfs among them: it costs seconds.
	Warm bool
	// Short says a run times a tenth of a second or less, where one preempted millisecond moves a
	// figure by percents: such a series gets shortRoundsFactor times as many rounds.
	Short bool
}

// shortRoundsFactor multiplies the rounds of a Short series.
const shortRoundsFactor = 3

// Rounds is how many rounds the series runs when a long one runs rounds.
func (s *Series) Rounds(rounds int) int {
	if s.Short {
		return rounds * shortRoundsFactor
	}
	return rounds
}

// SeriesResult holds every sample of a series: Refs[i] are the samples of References[i].
type SeriesResult struct {
	Series *Series
	Ours   []Figures
	Refs   [][]Figures
	// Orders are the tools of each round in the order they ran, and Conditions the machine's at
	// the start of each round.
	Orders     [][]string
	Conditions []method.Conditions
	// Seed drew the rounds' orders; the intervals are drawn from it too.
	Seed int64
	Err  error
}

// runSeries runs s.Rounds(rounds) rounds, ours and the references in an order drawn anew from
// order for each round. Before every run of a Warm series it warms warm bytes of memory (see
// warmMemory), and after every run it flushes the target's filesystem, both outside any timing,
// so that no run pays for memory the hypervisor took back while the previous one ran or for the
// write-back another one left behind.
func runSeries(ctx context.Context, s *Series, rounds int, order *method.Order, warm int64, versions map[string]string, log func(string, ...any)) SeriesResult {
	res := SeriesResult{Series: s, Refs: make([][]Figures, len(s.References)), Seed: order.Seed()}
	runners := append([]*Runner{&s.Ours}, pointers(s.References)...)
	if !s.Warm {
		warm = 0
	}
	rounds = s.Rounds(rounds)
	for i := range rounds {
		res.Conditions = append(res.Conditions, method.Record(versions))
		var tools []string
		for _, r := range method.Shuffled(order, runners) {
			f, err := runOnce(ctx, s, r, warm)
			if err != nil {
				res.Err = fmt.Errorf("round %d, %s: %w", i+1, r.Tool, err)
				return res
			}
			tools = append(tools, r.Tool)
			if r == &s.Ours {
				res.Ours = append(res.Ours, f)
			} else {
				j := slices.Index(runners, r) - 1
				res.Refs[j] = append(res.Refs[j], f)
			}
			log("  %-30s round %d/%d %-15s%s", s.ID, i+1, rounds, r.Tool, describeFigures(s.Metrics, f))
		}
		res.Orders = append(res.Orders, tools)
	}
	return res
}

func runOnce(ctx context.Context, s *Series, r *Runner, warm int64) (Figures, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := warmMemory(warm); err != nil {
		return nil, err
	}
	f, err := r.Run(ctx)
	if err != nil {
		return nil, err
	}
	return f, settle(s.Target.Path)
}

func pointers(rs []Runner) []*Runner {
	out := make([]*Runner, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out
}

// settle writes back the target's filesystem so the next run starts without dirty pages or an
// uncommitted journal of the previous one.
func settle(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("failed to open %s to flush it: %w", dir, err)
	}
	defer func() { _ = unix.Close(fd) }()
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("failed to flush the filesystem of %s: %w", dir, err)
	}
	return nil
}

func describeFigures(ms []Metric, f Figures) string {
	var b strings.Builder
	for _, m := range ms {
		if v, ok := f[m.ID]; ok {
			fmt.Fprintf(&b, " %s=%s", m.ID, formatValue(v, m.Unit))
		}
	}
	return b.String()
}

// comparisons turns a series' samples into one Comparison per metric and reference that reports it.
func comparisons(r SeriesResult) []Comparison {
	s := r.Series
	var out []Comparison
	for j, ref := range s.References {
		for _, m := range s.Metrics {
			if provides(ref, m.ID) {
				out = append(out, compare(r, m, ref, r.Refs[j]))
			}
		}
	}
	return out
}

func compare(r SeriesResult, m Metric, ref Runner, refRuns []Figures) Comparison {
	s := r.Series
	c := Comparison{
		Target: s.Target.Name, Series: s.ID, Workload: s.Workload,
		Metric: m.ID, MetricLabel: m.Label, Unit: m.Unit, Class: m.Class, Tolerance: m.Class.Tolerance(),
		OursCommand: s.Ours.Command, ReferenceTool: ref.Tool, ReferenceCommand: ref.Command,
		OursSamples: pick(r.Ours, m.ID), ReferenceSamples: pick(refRuns, m.ID),
		ReferencePrintedSamples: pick(refRuns, rawKey(m.ID)), Note: s.Note,
	}
	if r.Err != nil {
		c.Error = r.Err.Error()
	}
	c.RoundOrders, c.RoundConditions = r.Orders, r.Conditions
	c.summarize(r.Seed, m.Resolution, ref.ForContext)
	return c
}

// summarize draws c's medians, ratios, interval and verdict from its rounds and class alone, the
// same way for a fresh run and for a results file read again. seed draws the interval (0:
// method.BootstrapSeed, for results that recorded none); resolution is the metric's (see Judge),
// and context, when set, why the reference is shown for context and not judged.
func (c *Comparison) summarize(seed int64, resolution float64, context string) {
	if seed == 0 {
		seed = method.BootstrapSeed
	}
	ours, reference := Median(c.OursSamples), Median(c.ReferenceSamples)
	c.OursMedian, c.ReferenceMedian, c.Ratio = finite(ours), finite(reference), finite(Ratio(ours, reference))
	c.PairedRatioMedian = finite(Median(PairedRatios(c.OursSamples, c.ReferenceSamples)))
	diff := method.Compare(c.OursSamples, c.ReferenceSamples, seed)
	c.Interval, c.Difference, c.DifferenceReason = diff.Interval, diff.Verdict, diff.Reason
	c.Tolerance = c.Class.Tolerance()
	c.Verdict, c.Reason = Judge(c.Class, diff, ours, reference, resolution)
	if context != "" && c.Verdict != NotMeasured {
		c.Verdict, c.Reason = ForContext, context
	}
}

func provides(r Runner, id string) bool {
	for _, p := range r.Provides {
		if p == id {
			return true
		}
	}
	return false
}

func pick(fs []Figures, id string) []float64 {
	out := make([]float64, 0, len(fs))
	for _, f := range fs {
		if v, ok := f[id]; ok {
			out = append(out, v)
		}
	}
	return out
}

// removeIfExists removes a file a run may or may not have left.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("failed to remove %s: %w", path, err)
	}
	return nil
}
