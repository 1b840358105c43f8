package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/test/bench/chart"
	"github.com/dbtune/scratch-operator/test/bench/method"
)

// results is everything scale.json holds.
type results struct {
	Generated time.Time    `json:"generated"`
	Machine   machine      `json:"machine"`
	Settings  settings     `json:"settings"`
	Quiet     []quietLevel `json:"withoutBackground"`
	Levels    []level      `json:"levels"`
	// Rollout is the one unpaced rollout run of results written before rollouts were paced;
	// Rollouts are every rollout run since, with each manager setting compared.
	Rollout  *rolloutResult  `json:"rollout,omitempty"`
	Rollouts []rolloutResult `json:"rollouts,omitempty"`
	// Refusals are the runs of the refusal measurement.
	Refusals []refusalRun      `json:"refusals,omitempty"`
	Failover []*failoverResult `json:"failover,omitempty"`
}

type machine struct {
	CPUs       int     `json:"cpus"`
	MemoryGiB  float64 `json:"memoryGiB"`
	Kernel     string  `json:"kernel"`
	LoadBefore string  `json:"loadAverageBefore"`
	LoadAfter  string  `json:"loadAverageAfter"`
}

type settings struct {
	Levels             []int            `json:"statefulSets"`
	Namespaces         int              `json:"namespaces"`
	Runs               int              `json:"runs"`
	Shapes             []string         `json:"shapes"`
	ScratchVolumeSize  string           `json:"scratchVolumeSize"`
	Background         backgroundCounts `json:"background"`
	ControllerManager  string           `json:"controllerManagerTuned"`
	SteadySeconds      float64          `json:"steadySeconds"`
	ResyncSeconds      float64          `json:"managerResyncSeconds"`
	GoMemLimit         string           `json:"managerGOMEMLIMIT,omitempty"`
	GoGC               string           `json:"managerGOGC,omitempty"`
	GitOpsSettle       float64          `json:"gitOpsSettleSeconds"`
	Variants           []string         `json:"variantsComparedAt,omitempty"`
	CompareAt          int              `json:"compareAt"`
	KubernetesVersions string           `json:"kubernetes"`
	// Large is the size above which a size got fewer runs (-large); results from before it was
	// recorded used 1000.
	Large int `json:"largeAbove,omitempty"`
	// Seed drew the order of the bare client and the manager in each run, and the intervals;
	// results from before it was recorded ran the bare client first.
	Seed int64 `json:"seed,omitempty"`
	// Baseline says what the bare client's and the manager's timers hold; results from before it
	// was recorded timed only the bare client's applies, its plan made before its timer, with the
	// manager running.
	Baseline *baseline `json:"baseline,omitempty"`
}

// baseline is what the two timers of a run hold, and whether a manager ran beside the bare
// client.
type baseline struct {
	Bare    string `json:"bareClientTimer"`
	Manager string `json:"managerTimer"`
	// ManagerDuringBare says whether a manager process ran while the bare client was timed.
	ManagerDuringBare bool `json:"managerRunningDuringBareClient"`
}

// timers are what this benchmark's timers hold (runBare, runSelector, measureRun).
var timers = baseline{
	Bare: "from its first request until the benchmark's watch sees every StatefulSet injected: a dry-run create of each namespace's ScratchVolume (its defaults), " +
		"and for each StatefulSet a GET at resourceVersion 0, the plan by the controller's planning code and the ConfigMap and StatefulSet applies; " +
		"the StatefulSets to inject are taken from the benchmark's watch before it starts",
	Manager: "from the benchmark's first ScratchVolume create until its watch sees every StatefulSet injected: the creates, the manager's watch events and queue, " +
		"for each StatefulSet its GET, plan and applies, and its status writes and Events; the manager is started, and its informers synced, before it starts",
	ManagerDuringBare: false,
}

type backgroundCounts struct {
	ConfigMaps    int     `json:"configMaps"`
	BigConfigMaps int     `json:"configMapsOf100KiB"`
	Secrets       int     `json:"secrets"`
	Pods          int     `json:"pods"`
	CreateSeconds float64 `json:"createSeconds"`
}

// kubernetesVersions are the versions of the control plane the benchmark starts.
const kubernetesVersions = "kube-apiserver, kube-controller-manager v1.37.2, etcd v3.7.3, kwok v0.8.0 (hack/k8s-binaries.sh)"

// quietLevel is one size measured before the background objects exist.
type quietLevel struct {
	N                    int     `json:"statefulSets"`
	ControllerManager    string  `json:"controllerManager"`
	Inject               phase   `json:"inject"`
	Revert               phase   `json:"revert"`
	RevertSettledSeconds float64 `json:"revertRecordedSeconds"`
	Memory               memory  `json:"memory"`
	// Conditions are the machine's at the start; results from before they were recorded have
	// none.
	Conditions *method.Conditions `json:"conditions,omitempty"`
}

// level is one size measured with one manager setting, with the background objects present.
type level struct {
	N        int             `json:"statefulSets"`
	Settings managerSettings `json:"manager"`
	Runs     []runResult     `json:"runs"`
	Memory   memory          `json:"memory"`
}

type runResult struct {
	Bare       phase  `json:"bare"`
	BareRevert phase  `json:"bareRevert"`
	Selector   phase  `json:"selector"`
	Steady     *phase `json:"steady,omitempty"`
	GitOps     *phase `json:"gitOps,omitempty"`
	Revert     phase  `json:"revert"`
	Many       *phase `json:"many,omitempty"`
	ManyRevert *phase `json:"manyRevert,omitempty"`
	// Order is the order the bare client and the manager ran in, and Conditions the machine's at
	// the start of the run; results from before they were recorded have neither (the bare client
	// ran first).
	Order      []string           `json:"order,omitempty"`
	Conditions *method.Conditions `json:"conditions,omitempty"`
	// Memory is the run's own manager's, started for its turn and stopped after it; results from
	// before each run had its own manager have none (one manager ran through a size's runs).
	Memory *memory `json:"memory,omitempty"`
}

type rolloutResult struct {
	Settings               managerSettings `json:"manager"`
	StatefulSets           int             `json:"statefulSets"`
	Replicas               int             `json:"replicas"`
	PodsRunningSeconds     float64         `json:"podsRunningSeconds"`
	Inject                 phase           `json:"inject"`
	Revert                 phase           `json:"revert"`
	RevertRolledOutSeconds float64         `json:"revertRolledOutSeconds"`
	Memory                 memory          `json:"memory"`
	// Conditions are the machine's at the start of the run; results from before they were
	// recorded have none.
	Conditions *method.Conditions `json:"conditions,omitempty"`
}

func newResults(cfg config) *results {
	var u unix.Utsname
	_ = unix.Uname(&u)
	var si unix.Sysinfo_t
	_ = unix.Sysinfo(&si)
	r := &results{
		Generated: time.Now().UTC().Truncate(time.Second),
		Machine: machine{
			CPUs: runtime.NumCPU(), Kernel: unix.ByteSliceToString(u.Release[:]),
			MemoryGiB:  math.Round(float64(si.Totalram)*float64(si.Unit)/(1<<30)*10) / 10,
			LoadBefore: loadAverage(),
		},
		Settings: settings{
			Levels: cfg.levels, Namespaces: cfg.namespaces, Runs: cfg.runs, ScratchVolumeSize: scratchSize,
			ControllerManager: kcmName(true, cfg.kcmQPS), SteadySeconds: cfg.steady.Seconds(),
			ResyncSeconds: cfg.resync.Seconds(), GoMemLimit: cfg.goMemLimit, GoGC: cfg.goGC,
			GitOpsSettle: cfg.gitOpsSettle.Seconds(), CompareAt: cfg.compareAt,
			KubernetesVersions: kubernetesVersions, Seed: cfg.seed, Large: cfg.large, Baseline: &timers,
		},
	}
	for _, s := range shapes {
		r.Settings.Shapes = append(r.Settings.Shapes, s.image+" + "+s.sidecar.Image)
	}
	if cfg.compareAt > 0 {
		for _, v := range variants(cfg, cfg.compareAt)[1:] {
			r.Settings.Variants = append(r.Settings.Variants, v.Name)
		}
	}
	return r
}

func readResults(path string) (*results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &results{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// name is the base name of the results' files: scale, or what -only measured.
func (r *results) name() string {
	switch {
	case len(r.Levels) > 0 || len(r.Quiet) > 0:
		return "scale"
	case len(r.Failover) > 0:
		return onlyFailover
	case len(r.Refusals) > 0:
		return onlyRefusal
	default:
		return onlyRollout
	}
}

// write saves <base>.json and <base>.png in dir, base being the results' name unless given, and
// prints the Markdown to md.
func (r *results) write(dir, base string, md io.Writer) error {
	if base == "" {
		base = r.name()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	jsonPath := filepath.Join(dir, base+".json")
	if err := os.WriteFile(jsonPath, buf.Bytes(), 0o644); err != nil {
		return err
	}
	logf("wrote %s", jsonPath)
	if len(r.Levels) > 0 || len(r.Failover) > 0 || len(r.Rollouts) > 0 || len(r.Refusals) > 0 {
		png, err := r.writeChart(dir, base)
		if err != nil {
			return err
		}
		logf("wrote %s", png)
	}
	_, err := io.WriteString(md, r.markdown())
	return err
}

// summary is the medians of one level's runs.
type summary struct {
	n                                                            int
	bare, selector, ratio, ready, many, manyReady                float64
	bareRevert, revert, manyRevert                               float64
	writesPerSTS, requestsPerSTS, serverWritesPerSTS             float64
	revertWritesPerSTS, manyWritesPerSTS                         float64
	steadySTSWrites, steadyWrites, gitOpsSTSWrites, gitOpsWrites float64
	cpu, p50, p99, depth                                         float64
	bareRange, selectorRange, readyRange, ratioRange             [2]float64
	peakRSS, heap                                                float64
	// versus is the manager's injection time against the bare client's, over every run.
	versus method.Comparison
}

// bootstrapSeed seeds the intervals: the run's seed, or the method's fixed one for results that
// recorded none, so that the same file always gives the same intervals.
func (r *results) bootstrapSeed() int64 {
	if r.Settings.Seed != 0 {
		return r.Settings.Seed
	}
	return method.BootstrapSeed
}

func (l *level) summarize(seed int64) summary {
	s := summary{n: l.N, peakRSS: l.Memory.PeakRSSMiB, heap: l.Memory.HeapMiB}
	n := float64(l.N)
	col := func(f func(r runResult) float64) []float64 {
		var xs []float64
		for _, r := range l.Runs {
			if v := f(r); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		return xs
	}
	med := func(f func(r runResult) float64) float64 { return median(col(f)) }
	span := func(f func(r runResult) float64) [2]float64 {
		xs := col(f)
		if len(xs) == 0 {
			return [2]float64{math.NaN(), math.NaN()}
		}
		return [2]float64{slices.Min(xs), slices.Max(xs)}
	}
	opt := func(p func(r runResult) *phase, f func(*phase) float64) func(r runResult) float64 {
		return func(r runResult) float64 {
			if ph := p(r); ph != nil {
				return f(ph)
			}
			return math.NaN()
		}
	}
	bare := func(r runResult) float64 { return r.Bare.Seconds }
	sel := func(r runResult) float64 { return r.Selector.Seconds }
	ready := func(r runResult) float64 { return r.Selector.ReadySeconds }
	ratio := func(r runResult) float64 { return r.Selector.Seconds / r.Bare.Seconds }
	s.bare, s.bareRange = med(bare), span(bare)
	s.selector, s.selectorRange = med(sel), span(sel)
	s.ready, s.readyRange = med(ready), span(ready)
	s.ratio, s.ratioRange = med(ratio), span(ratio)
	s.versus = method.Compare(col(sel), col(bare), seed)
	s.bareRevert = med(func(r runResult) float64 { return r.BareRevert.Seconds })
	s.revert = med(func(r runResult) float64 { return r.Revert.Seconds })
	s.writesPerSTS = med(func(r runResult) float64 { return r.Selector.StatefulSetWrites / n })
	s.serverWritesPerSTS = med(func(r runResult) float64 { return r.Selector.ServerStatefulSetWrites / n })
	s.requestsPerSTS = med(func(r runResult) float64 { return r.Selector.Requests.total() / n })
	s.revertWritesPerSTS = med(func(r runResult) float64 { return r.Revert.StatefulSetWrites / n })
	s.cpu = med(func(r runResult) float64 { return r.Selector.CPUSeconds })
	s.p50 = med(func(r runResult) float64 { return r.Selector.ReconcileP50 })
	s.p99 = med(func(r runResult) float64 { return r.Selector.ReconcileP99 })
	s.depth = med(func(r runResult) float64 { return r.Selector.MaxQueueDepth })
	s.many = med(opt(func(r runResult) *phase { return r.Many }, func(p *phase) float64 { return p.Seconds }))
	s.manyReady = med(opt(func(r runResult) *phase { return r.Many }, func(p *phase) float64 { return p.ReadySeconds }))
	s.manyRevert = med(opt(func(r runResult) *phase { return r.ManyRevert }, func(p *phase) float64 { return p.Seconds }))
	s.manyWritesPerSTS = med(opt(func(r runResult) *phase { return r.Many }, func(p *phase) float64 { return p.StatefulSetWrites / n }))
	steady := func(r runResult) *phase { return r.Steady }
	gitops := func(r runResult) *phase { return r.GitOps }
	s.steadySTSWrites = med(opt(steady, func(p *phase) float64 { return p.StatefulSetWrites }))
	s.steadyWrites = med(opt(steady, func(p *phase) float64 { return p.Requests.writes() }))
	s.gitOpsSTSWrites = med(opt(gitops, func(p *phase) float64 { return p.StatefulSetWrites }))
	s.gitOpsWrites = med(opt(gitops, func(p *phase) float64 { return p.Requests.writes() }))
	return s
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// againstMarkdown sets this tree's manager beside another commit's (-against), size by size: each
// run's injection time and peak RSS, each manager against the bare client of its own turns, and the
// two managers against each other; nothing when no other commit was measured.
func (r *results) againstMarkdown() string {
	var b strings.Builder
	seed := r.bootstrapSeed()
	for _, other := range r.Levels {
		ours := r.levelAt(other.N, defaultSettings.Name)
		if other.Settings.Commit == "" || ours == nil {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "\nThis tree's manager against the manager of %s, the two taking turns in each run, each turn with a bare client's of its own:\n\n", other.Settings.Commit)
			b.WriteString("| StatefulSets | manager | injected, each run | manager / its bare client | peak RSS, each run | CPU (inject) | StatefulSet writes per StatefulSet | writes in steady state: StatefulSets / all |\n|---:|---|---|---:|---|---:|---:|---:|\n")
		}
		for _, l := range []*level{ours, &other} {
			s := l.summarize(seed)
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.1f s | %.2f | %s / %s |\n", l.N, l.Settings.Name, eachRun(l.Runs, "%.1f s", injection),
				versusCell(s.versus), eachRun(l.Runs, "%.0f MiB", peakRSS), s.cpu, s.writesPerSTS, count(s.steadySTSWrites), count(s.steadyWrites))
		}
		inject := method.Compare(column(ours.Runs, injection), column(other.Runs, injection), seed)
		peak := method.Compare(column(ours.Runs, peakRSS), column(other.Runs, peakRSS), seed)
		fmt.Fprintf(&b, "| %d | this tree / %s | %s, %s | | %s, %s | | | |\n", other.N, other.Settings.Commit,
			versusCell(inject), inject.Verdict, versusCell(peak), peak.Verdict)
	}
	return b.String()
}

// injection and peakRSS are a run's manager injection time and the peak RSS of its manager.
func injection(r runResult) float64 { return r.Selector.Seconds }

func peakRSS(r runResult) float64 {
	if r.Memory == nil {
		return math.NaN()
	}
	return r.Memory.PeakRSSMiB
}

// column is f of each run, leaving out the runs without it.
func column(runs []runResult, f func(runResult) float64) []float64 {
	var out []float64
	for _, r := range runs {
		if v := f(r); !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// eachRun writes f of each run in format, in the order of the runs.
func eachRun(runs []runResult, format string, f func(runResult) float64) string {
	values := column(runs, f)
	cells := make([]string, 0, len(values))
	for _, v := range values {
		cells = append(cells, fmt.Sprintf(format, v))
	}
	return strings.Join(cells, ", ")
}

// levelAt is the level of size n measured with the settings named name, if any.
func (r *results) levelAt(n int, name string) *level {
	for i := range r.Levels {
		if l := &r.Levels[i]; l.N == n && l.Settings.Name == name {
			return l
		}
	}
	return nil
}

// levelsOf returns the levels measured with the settings named name, smallest first.
func (r *results) levelsOf(name string) []level {
	var out []level
	for _, l := range r.Levels {
		if l.Settings.Name == name {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b level) int { return a.N - b.N })
	return out
}

func (r *results) quiet(n int) *quietLevel {
	for i := range r.Quiet {
		if r.Quiet[i].N == n {
			return &r.Quiet[i]
		}
	}
	return nil
}

// chart draws convergence time and memory against N.
func (r *results) chart() *chart.Chart {
	ch := &chart.Chart{
		Title:      "ScratchVolume manager at fleet scale: convergence and memory against N",
		Series:     []string{"bare client (the same reads and applies)", "manager: all injected", "manager: all Ready", "peak RSS, with background", "peak RSS, no background"},
		PointLabel: "each run",
		Machine:    fmt.Sprintf("%d CPUs, %.0f GiB, Linux %s; local control plane", r.Machine.CPUs, r.Machine.MemoryGiB, r.Machine.Kernel),
		Measured:   r.Generated,
		Notes: fmt.Sprintf("Bars: medians of each size's runs (memory: the highest), dots: every run. One selector ScratchVolume per namespace over %d namespaces; %s. Background: %d ConfigMaps (%d of 100 KiB), %d Secrets, %d Pods. kube-controller-manager %s.",
			r.Settings.Namespaces, r.chartBaseline(), r.Settings.Background.ConfigMaps, r.Settings.Background.BigConfigMaps, r.Settings.Background.Secrets, r.Settings.Background.Pods, r.Settings.ControllerManager),
	}
	times := chart.Panel{Title: "convergence\n(lower is better)", ValueAxis: "time (s)"}
	mem := chart.Panel{Title: "manager memory\n(lower is better)", ValueAxis: "peak RSS (MiB)"}
	nan := chart.Bar{Value: math.NaN()}
	for _, l := range r.levelsOf(defaultSettings.Name) {
		s := l.summarize(r.bootstrapSeed())
		label := fmt.Sprintf("N=%d", l.N)
		label += fmt.Sprintf(", %d run%s", len(l.Runs), map[bool]string{true: "", false: "s"}[len(l.Runs) == 1])
		times.Groups = append(times.Groups, chart.Group{Label: label, Bars: []chart.Bar{
			{Value: s.bare, Points: l.each(func(r runResult) float64 { return r.Bare.Seconds })},
			{Value: s.selector, Points: l.each(func(r runResult) float64 { return r.Selector.Seconds })},
			{Value: s.ready, Points: l.each(func(r runResult) float64 { return r.Selector.ReadySeconds })},
		}})
		quiet := nan
		if q := r.quiet(l.N); q != nil {
			quiet = chart.Bar{Value: q.Memory.PeakRSSMiB}
		}
		var peaks []float64
		for _, run := range l.Runs {
			if run.Memory != nil {
				peaks = append(peaks, run.Memory.PeakRSSMiB)
			}
		}
		mem.Groups = append(mem.Groups, chart.Group{Label: label, Bars: []chart.Bar{nan, nan, nan, {Value: s.peakRSS, Highlight: s.peakRSS > 150, Points: peaks}, quiet}})
	}
	ch.Panels = []chart.Panel{times, mem}
	return ch
}

// chartBaseline says in a few words what the bare client does.
func (r *results) chartBaseline() string {
	if r.Settings.Baseline == nil {
		return "the bare client sends the same applies with the same concurrency, its plan made before its timer, beside a running manager"
	}
	return "the bare client reads, plans and applies the same with the same concurrency, timed from its first request, while no manager runs"
}

// each is a figure of every run, in the order run.
func (l *level) each(f func(runResult) float64) []float64 {
	out := make([]float64, len(l.Runs))
	for i, r := range l.Runs {
		out[i] = f(r)
	}
	return out
}

// writeChart draws the results' chart to dir/<base>.png and returns that path.
func (r *results) writeChart(dir, base string) (string, error) {
	path := filepath.Join(dir, base+".png")
	ch := r.chart()
	switch r.name() {
	case onlyFailover:
		ch = r.failoverChart()
	case onlyRollout:
		ch = r.rolloutChart()
	case onlyRefusal:
		ch = r.refusalChart()
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := ch.WritePNG(f); err != nil {
		_ = f.Close()
		return "", err
	}
	return path, f.Close()
}

func (r *results) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %d CPUs, %.0f GiB, Linux %s (load average %s before, %s after).\n",
		r.Generated.Format("2006-01-02"), r.Machine.CPUs, r.Machine.MemoryGiB, r.Machine.Kernel, r.Machine.LoadBefore, r.Machine.LoadAfter)
	if r.name() != "scale" {
		b.WriteString(r.rolloutMarkdown())
		b.WriteString(r.failoverMarkdown())
		b.WriteString(r.refusalMarkdown())
		return b.String()
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "With the background objects (%d ConfigMaps, %d of them 100 KiB; %d Secrets; %d Pods), kube-controller-manager %s, manager defaults, %s:\n\n",
		r.Settings.Background.ConfigMaps, r.Settings.Background.BigConfigMaps, r.Settings.Background.Secrets, r.Settings.Background.Pods, r.Settings.ControllerManager, r.runsPhrase())
	b.WriteString("| StatefulSets | runs | bare client | manager: injected | manager / bare (95% interval) | verdict | manager: Ready | one ScratchVolume each: injected / Ready | revert: bare / manager | StatefulSet writes per StatefulSet: inject / revert / one each | manager API requests per StatefulSet | manager writes in steady state: StatefulSets / all | manager writes after GitOps re-apply: StatefulSets / all | peak RSS (no background) | heap | manager CPU (inject) | reconcile p50 / p99 | max queue depth |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.levelsOf(defaultSettings.Name) {
		s := l.summarize(r.bootstrapSeed())
		quiet := "–"
		if q := r.quiet(l.N); q != nil {
			quiet = fmt.Sprintf("%.0f MiB", q.Memory.PeakRSSMiB)
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s | %s / %s | %s / %s | %.2f / %.2f / %s | %.2f | %s / %s | %s / %s | %.0f MiB (%s) | %.0f MiB | %.1f s | %s / %s | %.0f |\n",
			l.N, len(l.Runs), secs(s.bare), secs(s.selector), versusCell(s.versus), versusVerdict(s.versus), secs(s.ready), secs(s.many), secs(s.manyReady),
			secs(s.bareRevert), secs(s.revert), s.writesPerSTS, s.revertWritesPerSTS, ratio(s.manyWritesPerSTS), s.requestsPerSTS,
			count(s.steadySTSWrites), count(s.steadyWrites), count(s.gitOpsSTSWrites), count(s.gitOpsWrites),
			s.peakRSS, quiet, s.heap, s.cpu, secs(s.p50), secs(s.p99), s.depth)
	}
	if len(r.Settings.Variants) > 0 {
		fmt.Fprintf(&b, "\nManager settings compared at N=%d (the bare client with the same client-side limit and concurrency, side by side):\n\n", r.Settings.CompareAt)
		b.WriteString("| manager settings | runs | bare client | manager: injected | manager / bare (95% interval) | verdict | manager: Ready | revert | peak RSS |\n|---|---:|---:|---:|---:|---|---:|---:|---:|\n")
		for _, l := range r.Levels {
			if l.N != r.Settings.CompareAt {
				continue
			}
			s := l.summarize(r.bootstrapSeed())
			fmt.Fprintf(&b, "| %s (qps %g, burst %d, %d workers) | %d | %s | %s | %s | %s | %s | %s | %.0f MiB |\n", l.Settings.Name, l.Settings.QPS, l.Settings.Burst,
				l.Settings.Workers, len(l.Runs), secs(s.bare), secs(s.selector), versusCell(s.versus), versusVerdict(s.versus), secs(s.ready), secs(s.revert), s.peakRSS)
		}
	}
	b.WriteString(r.againstMarkdown())
	fmt.Fprintf(&b, "\nEach figure is the median of the size's runs. manager / bare: the median of the manager's injection times over the median of the bare client's, with a %.0f %% percentile bootstrap interval over the runs (%d resamples, seed %d); the verdict names a difference only where the interval excludes 1, and needs %d runs of each. %s Conditions: %s.\n",
		100*method.Level, method.Resamples, r.bootstrapSeed(), method.MinRuns, r.timersSentence(), r.conditions())
	b.WriteString(r.runsMarkdown())
	for _, l := range r.levelsOf(defaultSettings.Name) {
		b.WriteString(l.Memory.Profile.markdown(l.N))
	}
	b.WriteString(phasePeaks(r.levelsOf(defaultSettings.Name)))
	b.WriteString("\nWithout background objects (one run each, before they were created):\n\n")
	b.WriteString("| StatefulSets | kube-controller-manager | injected | Ready | revert (templates) | revert recorded by the StatefulSet controller | peak RSS | heap |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, q := range r.Quiet {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %.0f MiB | %.0f MiB |\n", q.N, q.ControllerManager, secs(q.Inject.Seconds),
			secs(q.Inject.ReadySeconds), secs(q.Revert.Seconds), secs(q.RevertSettledSeconds), q.Memory.PeakRSSMiB, q.Memory.HeapMiB)
	}
	if ro := r.Rollout; ro != nil {
		fmt.Fprintf(&b, "\nRollout run: %d StatefulSets with %d pod each on kwok nodes (pods Running %s after creation): injected in %s, Ready (every pod replaced) in %s; reverted in %s, rolled back in %s; %.2f StatefulSet writes per StatefulSet.\n",
			ro.StatefulSets, ro.Replicas, secs(ro.PodsRunningSeconds), secs(ro.Inject.Seconds), secs(ro.Inject.ReadySeconds), secs(ro.Revert.Seconds),
			secs(ro.RevertRolledOutSeconds), ro.Inject.StatefulSetWrites/float64(ro.StatefulSets))
	}
	b.WriteString(r.rolloutMarkdown())
	return b.String()
}

// phasePeaks tabulates the manager's peak RSS at the end of each phase of the first run of each
// size: the peak only grows, so the phase where it rises set it.
func phasePeaks(levels []level) string {
	var b strings.Builder
	b.WriteString("\nThe manager's peak RSS at the end of each of its phases in the first run:\n\n")
	b.WriteString("| StatefulSets | inject | steady state | GitOps re-apply | revert | one ScratchVolume each | its revert |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	rows := 0
	for _, l := range levels {
		if len(l.Runs) == 0 || l.Runs[0].Selector.PeakRSSMiB == 0 {
			continue // measured before the benchmark recorded it
		}
		r := l.Runs[0]
		peak := func(p *phase) string {
			if p == nil || p.PeakRSSMiB == 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f MiB", p.PeakRSSMiB)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", l.N, peak(&r.Selector), peak(r.Steady), peak(r.GitOps), peak(&r.Revert), peak(r.Many), peak(r.ManyRevert))
		rows++
	}
	if rows == 0 {
		return ""
	}
	return b.String()
}

// largeOf is the size above which the results' sizes got fewer runs: the benchmark's -large.
func largeOf(r *results) int {
	if r.Settings.Large > 0 {
		return r.Settings.Large
	}
	return 1000
}

// runsPhrase says how many runs each size's medians are of.
func (r *results) runsPhrase() string {
	counts := map[int]bool{}
	for _, l := range r.levelsOf(defaultSettings.Name) {
		counts[len(l.Runs)] = true
	}
	if len(counts) == 1 {
		for n := range counts {
			return fmt.Sprintf("medians of each size's %d runs", n)
		}
	}
	return fmt.Sprintf("medians of each size's runs (a size above %d StatefulSets gets fewer)", largeOf(r))
}

// timersSentence says what the bare client's and the manager's timers hold.
func (r *results) timersSentence() string {
	t := r.Settings.Baseline
	if t == nil {
		return "The bare client's timer held its applies only, its plan made before it started, and one manager ran through each size's runs, the bare client's phases included."
	}
	idle := "no manager process ran during the bare client's phases: each run's manager is started for its turn and stopped after it"
	if t.ManagerDuringBare {
		idle = "a manager process ran during the bare client's phases"
	}
	return fmt.Sprintf("The bare client's timer runs %s. The manager's runs %s. %s.", t.Bare, t.Manager, upperFirst(idle))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// versusCell is the ratio of the manager's injection time to the bare client's, with its interval.
func versusCell(c method.Comparison) string {
	if c.Interval == nil {
		return "–"
	}
	return c.String()
}

// versusVerdict says what the interval lets one say of the manager against the bare client.
func versusVerdict(c method.Comparison) string {
	switch c.Verdict {
	case method.Higher:
		return "manager slower"
	case method.Lower:
		return "manager faster"
	case method.NoDifference:
		return "no difference"
	}
	if c.Interval == nil && strings.Contains(c.Reason, method.ErrTooFewRuns.Error()) {
		return "too few runs"
	}
	return c.Reason
}

// runsMarkdown tabulates every run of every size and setting, in the order run.
func (r *results) runsMarkdown() string {
	var b strings.Builder
	rows := 0
	b.WriteString("\n<details><summary>Every run</summary>\n\n| StatefulSets | manager settings | run | order | bare client | manager: injected | manager / bare | manager: Ready | revert: bare / manager | the run's manager: peak RSS / CPU | load average (1 min) at its start |\n|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Levels {
		for i, run := range l.Runs {
			order, load := "bare client first", "not recorded"
			if len(run.Order) > 0 {
				order = run.Order[0] + " first"
			}
			if run.Conditions != nil {
				load = fmt.Sprintf("%.2f", run.Conditions.LoadAverage1m)
			}
			own := "one manager for the size's runs"
			if m := run.Memory; m != nil {
				own = fmt.Sprintf("%.0f MiB / %.1f s", m.PeakRSSMiB, m.CPUSeconds)
			}
			fmt.Fprintf(&b, "| %d | %s | %d | %s | %s | %s | %.2fx | %s | %s / %s | %s | %s |\n", l.N, l.Settings.Name, i+1, order,
				secs(run.Bare.Seconds), secs(run.Selector.Seconds), run.Selector.Seconds/run.Bare.Seconds, secs(run.Selector.ReadySeconds),
				secs(run.BareRevert.Seconds), secs(run.Revert.Seconds), own, load)
			rows++
		}
	}
	if rows == 0 {
		return ""
	}
	return b.String() + "\n</details>\n"
}

// conditions summarizes the conditions every run recorded.
func (r *results) conditions() string {
	var cs []method.Conditions
	for _, l := range r.Levels {
		for _, run := range l.Runs {
			if run.Conditions != nil {
				cs = append(cs, *run.Conditions)
			}
		}
	}
	if len(cs) == 0 {
		return "not recorded per run (measured before the benchmark recorded them)"
	}
	return method.Summary(cs)
}

func secs(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f s", v)
}

func ratio(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func count(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}

// markdown is the profile's top entries as a table; nothing when there is no profile.
func (p *heapProfile) markdown(n int) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nHeap profile nearest the peak at N=%d (`%s`: RSS %.0f MiB, live heap %.0f MiB), by inuse_space:\n\n", n, p.File, p.RSSMiB, p.InuseMiB)
	b.WriteString("| function | flat | flat % | cum |\n|---|---:|---:|---:|\n")
	for _, e := range p.Top[:min(len(p.Top), 10)] {
		fmt.Fprintf(&b, "| `%s` | %.1f MiB | %.1f%% | %.1f MiB |\n", e.Function, e.FlatMiB, e.FlatPct, e.CumMiB)
	}
	return b.String()
}
