// Command scale measures the ScratchVolume manager at fleet scale on a local control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok): N realistic MySQL and MariaDB
// StatefulSets over M namespaces, beside background objects the manager must not pay for
// (ConfigMaps, some of 100 KiB, Secrets, Pods on kwok nodes). For each N it measures, side by side
// in one run and as medians of several runs:
//
//   - the baseline: a bare client doing the manager's work without a controller — the same reads
//     of each StatefulSet, the same plan by the controller's planning code, the same ConfigMap and
//     StatefulSet server-side applies, same field manager, same concurrency and client-side limit —
//     timed from its first request, while no manager runs; so manager / bare is the controller's
//     overhead over the same requests, not a limit of the API server. Each run gives the bare
//     client and a manager started for the purpose their turns in an order drawn from -seed;
//   - convergence: one selector ScratchVolume per namespace until every StatefulSet carries the
//     injection and every ScratchVolume is Ready; then one ScratchVolume per StatefulSet at once;
//   - writes: per StatefulSet for the injection, in a steady state (-steady, 10 minutes by default)
//     with unrelated edits every minute (labels, status changes, a scale) and informer resyncs, after
//     a GitOps re-apply of every manifest, and for the revert (checked exact against the originals);
//   - cost: the manager's peak RSS, heap, CPU time, reconcile latency and work-queue depth, and its
//     heap profile taken nearest the peak (saved beside scale.json, its top entries in it).
//
// Before the background objects exist, each N is also measured once with kube-controller-manager
// at its default client QPS, which is what keeps ScratchVolumes from turning Ready, and once more
// after it is raised. A last run puts pods on kwok nodes to see the rollout path.
//
// It writes <out>/scale.json and <out>/scale.png and prints the results as Markdown for
// docs/benchmarks.md. With -replot FILE it measures nothing: it draws the chart of FILE and prints
// the Markdown again; with -sets FILE,... it prints every set of runs of those files with its
// interval, and each size's sets pooled.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/test/bench/method"
)

// config is what the flags set.
type config struct {
	out            string
	levels         []int
	namespaces     int
	runs           int
	background     float64
	nodes          int
	rollout        int
	steady         time.Duration
	resync         time.Duration
	goMemLimit     string
	goGC           string
	gitOpsSettle   time.Duration
	kcmQPS         int
	kcmDefaultMax  int
	compareAt      int
	timeout        time.Duration
	keep           bool
	replot         string
	workersVariant int
	// large is the size above which a level gets largeRuns runs and no one-per-StatefulSet phase.
	large, largeRuns int
	// only narrows the run to one measurement: "failover", "rollout" or "refusal"; empty runs the
	// whole.
	only string
	// killAt is the share of the fleet done when the failover measurement kills the leader.
	killAt float64
	// leases are the Lease durations the failover measurement runs the replicas with.
	leases []time.Duration
	// seed draws the order of the bare client and the manager in each run, and the intervals.
	seed int64
	// sets lists results files whose sets of runs are tabulated and pooled instead of measuring.
	sets string
	// name is the base name of the results file, its chart and heap profiles; empty: what was
	// measured (scale, failover or rollout).
	name string
	// quiet measures each size once without background objects first; many measures one
	// ScratchVolume per StatefulSet at the sizes up to large.
	quiet, many bool
	// against is another checkout of this repository whose manager runs beside this tree's, and
	// againstCommit its commit.
	against, againstCommit string
}

func main() {
	cfg := config{}
	var levels string
	flag.StringVar(&cfg.out, "out", filepath.Join("bin", "bench", "scale"), "directory for scale.json and scale.png")
	flag.StringVar(&levels, "n", "100,1000,5000", "fleet sizes: StatefulSets, comma-separated")
	flag.IntVar(&cfg.namespaces, "namespaces", 10, "namespaces the fleet is spread over, one selector ScratchVolume each")
	flag.IntVar(&cfg.runs, "runs", 3, "runs per fleet size (medians are reported)")
	flag.Float64Var(&cfg.background, "background", 1, "scale of the background objects: 1 is 20000 ConfigMaps (2000 of 100 KiB), 5000 Secrets, 10000 Pods")
	flag.IntVar(&cfg.nodes, "nodes", 3, "kwok nodes, for the background pods and the rollout run")
	flag.IntVar(&cfg.rollout, "rollout", 50, "StatefulSets with one pod each for the rollout run; 0 skips it")
	flag.DurationVar(&cfg.steady, "steady", 10*time.Minute, "length of the steady-state window (first run of each size), with unrelated edits every minute")
	flag.StringVar(&cfg.goMemLimit, "gomemlimit", "", "GOMEMLIMIT of the manager (config/manager sets one); empty: none, what the binary does by itself")
	flag.StringVar(&cfg.goGC, "gogc", "", "GOGC of the manager; empty: none, what the binary does by itself")
	flag.DurationVar(&cfg.resync, "resync", 3*time.Minute, "the manager's --sync-period, so that the steady state sees its informers resync")
	flag.DurationVar(&cfg.gitOpsSettle, "gitops-settle", 15*time.Second, "time given the manager to react to a GitOps re-apply")
	flag.IntVar(&cfg.kcmQPS, "kcm-qps", 200, "kube-controller-manager --kube-api-qps once raised (burst: twice that)")
	flag.IntVar(&cfg.kcmDefaultMax, "kcm-default-max", 1000, "largest size also measured with kube-controller-manager's default QPS")
	flag.IntVar(&cfg.compareAt, "compare-at", 1000, "size at which other manager settings are compared with the defaults; 0 skips")
	flag.IntVar(&cfg.workersVariant, "workers", 0, "--max-concurrent-reconciles of the compared setting with more workers (default: -namespaces)")
	flag.IntVar(&cfg.large, "large", 1000, "sizes above this get -large-runs runs and skip the one-ScratchVolume-per-StatefulSet phase")
	flag.IntVar(&cfg.largeRuns, "large-runs", 3, "runs per size above -large")
	flag.DurationVar(&cfg.timeout, "timeout", 20*time.Minute, "longest wait for any one phase")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the cluster's directory (logs) after the run")
	flag.StringVar(&cfg.only, "only", "", "measure only one thing: failover (two replicas, the leader SIGKILLed mid-injection and mid-revert, at each -n; failover.json) "+
		"or rollout (the -rollout run with paced and unpaced manager settings; rollout.json) "+
		"or refusal (a pod deleted, against the injected pods refused by an admission policy and put back, -runs rounds; refusal.json); empty: the whole benchmark")
	flag.Func("leases", "Lease durations of the failover measurement's replicas, comma-separated (renew deadline and retry period in the proportions of 15s, 10s, 2s); default 15s",
		func(s string) error {
			for _, f := range strings.Split(s, ",") {
				d, err := time.ParseDuration(strings.TrimSpace(f))
				if err != nil || d < 3*time.Second {
					return fmt.Errorf("%q is not a Lease duration of 3s or more", f)
				}
				cfg.leases = append(cfg.leases, d)
			}
			return nil
		})
	flag.Float64Var(&cfg.killAt, "kill-at", 0.5, "share of the fleet injected (or reverted) when the failover measurement kills the leader")
	flag.Int64Var(&cfg.seed, "seed", method.NewSeed(), "seed of the order of the bare client and the manager in each run, and of the intervals (recorded in the results)")
	flag.StringVar(&cfg.sets, "sets", "", "print every set of runs of these results files (comma-separated), each with its interval, and the sets of each size pooled, instead of measuring")
	flag.StringVar(&cfg.name, "name", "", "base name of the results file, its chart and its heap profiles (<name>-heap-*.pb.gz) in -out; default: scale, failover or rollout, after what -only measured")
	flag.BoolVar(&cfg.quiet, "quiet", true, "measure each size once without the background objects, before they are created")
	flag.BoolVar(&cfg.many, "many", true, "measure one ScratchVolume per StatefulSet at the sizes up to -large (in each setting's first run)")
	flag.StringVar(&cfg.against, "against", "", "another checkout of this repository (a git worktree of an earlier commit, say): its manager runs with the defaults beside this tree's at every size, "+
		"the two taking turns run by run in an order drawn from -seed, each turn with a bare client's of its own; the report sets them side by side")
	flag.StringVar(&cfg.replot, "replot", "", "draw the chart of an existing results file instead of measuring, to a PNG of its name (in -out, default beside it)")
	flag.Parse()
	// The benchmark's own clients log nothing worth reading; the manager logs to its file.
	ctrllog.SetLogger(logr.Discard())
	var err error
	if cfg.levels, err = parseLevels(levels); err == nil {
		err = validate(&cfg)
	}
	if err == nil && cfg.against != "" {
		cfg.againstCommit, err = commitOf(cfg.against)
	}
	switch {
	case err != nil:
	case cfg.sets != "":
		var md string
		if md, err = setsMarkdown(".", strings.Split(cfg.sets, ","), true); err == nil {
			fmt.Print(md)
		}
	case cfg.replot != "":
		if !flagSet("out") {
			cfg.out = filepath.Dir(cfg.replot)
		}
		err = replot(cfg, os.Stdout)
	default:
		err = measure(cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		os.Exit(1)
	}
}

// measure runs the benchmark and writes whatever was measured, even when a later phase failed or
// the run was interrupted.
func measure(cfg config) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := run(ctx, cfg)
	if res != nil {
		err = errors.Join(err, res.write(cfg.out, cfg.name, os.Stdout))
	}
	return err
}

// commitOf is the commit checked out in dir, abbreviated, for -against.
func commitOf(dir string) (string, error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("-against %s: not a checkout git can read: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-n: %q is not a positive number of StatefulSets", f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func validate(cfg *config) error {
	switch {
	case cfg.runs < 1:
		return errors.New("-runs must be at least 1")
	case cfg.namespaces < 1:
		return errors.New("-namespaces must be at least 1")
	case cfg.background < 0:
		return errors.New("-background must not be negative")
	case cfg.largeRuns < 1:
		return errors.New("-large-runs must be at least 1")
	case cfg.nodes < 1:
		return errors.New("-nodes must be at least 1")
	case cfg.steady < 0 || cfg.resync <= 0:
		return errors.New("-steady must not be negative and -resync must be positive")
	case cfg.only != "" && cfg.only != onlyFailover && cfg.only != onlyRollout && cfg.only != onlyRefusal:
		return fmt.Errorf("-only %q: want %s, %s or %s", cfg.only, onlyFailover, onlyRollout, onlyRefusal)
	case cfg.killAt <= 0 || cfg.killAt >= 1:
		return errors.New("-kill-at must be between 0 and 1, such as 0.5")
	case cfg.only == onlyRollout && cfg.rollout < 1:
		return errors.New("-only rollout needs -rollout of at least 1")
	}
	if cfg.only == onlyFailover && !flagSet("n") {
		cfg.levels = []int{1000}
	}
	if len(cfg.leases) == 0 {
		cfg.leases = []time.Duration{15 * time.Second}
	}
	if cfg.workersVariant == 0 {
		cfg.workersVariant = cfg.namespaces
	}
	return nil
}

// The measurements -only selects.
const (
	onlyFailover = "failover"
	onlyRollout  = "rollout"
	onlyRefusal  = "refusal"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scale: %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// replot draws the chart of the results in cfg.replot to cfg.out and prints their Markdown.
func replot(cfg config, md io.Writer) error {
	r, err := readResults(cfg.replot)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	png, err := r.writeChart(cfg.out, strings.TrimSuffix(filepath.Base(cfg.replot), filepath.Ext(cfg.replot)))
	if err != nil {
		return err
	}
	logf("wrote %s", png)
	_, err = io.WriteString(md, r.markdown())
	return err
}

// flagSet says whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
