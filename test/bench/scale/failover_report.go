package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dbtune/scratch-operator/test/bench/chart"
	"github.com/dbtune/scratch-operator/test/bench/method"
)

// failoverChart draws every run of every size: how long after the SIGKILL the survivor took the
// Lease and wrote, against the Lease's duration, and who wrote the StatefulSets.
func (r *results) failoverChart() *chart.Chart {
	ch := &chart.Chart{
		Title:       "Leader failover: the leader SIGKILLed mid-injection and mid-revert, every run",
		Orientation: chart.Horizontal,
		Series:      []string{"Lease taken, from the kill", "Lease taken, from the dead leader's last renewal", "written by the killed leader", "written by the survivor", "written twice"},
		Machine:     fmt.Sprintf("%d CPUs, %.0f GiB, Linux %s; local control plane", r.Machine.CPUs, r.Machine.MemoryGiB, r.Machine.Kernel),
		Measured:    r.Generated,
		Notes:       "Two manager replicas with leader election; the shaded band is the Lease's duration (15 s, controller-runtime's default, or shorter with --leader-election-lease-duration). Writes: successful StatefulSet writes in the API server's audit log, by replica; the table in docs/benchmarks.md has the rest.",
	}
	takeover := chart.Panel{Title: "takeover\n(the longest Lease's duration shaded)", ValueAxis: "seconds", Band: &chart.Band{Low: 0, High: r.longestLease(), Label: "Lease duration"}}
	writes := chart.Panel{Title: "StatefulSet writes\n(one per StatefulSet is the ideal)", ValueAxis: "StatefulSets"}
	nan := chart.Bar{Value: math.NaN()}
	for _, f := range r.Failover {
		for i, run := range f.Runs {
			for _, ph := range []struct {
				name string
				p    failoverPhase
			}{{"inject", run.Inject}, {"revert", run.Revert}} {
				label := fmt.Sprintf("Lease %gs, run %d, %s", f.LeaseDurationSeconds, i+1, ph.name)
				takeover.Groups = append(takeover.Groups, chart.Group{Label: label, Bars: []chart.Bar{
					{Value: ph.p.TakeoverSeconds, Label: fmt.Sprintf("%.1f", ph.p.TakeoverSeconds)},
					{Value: ph.p.AfterLastRenewalSeconds, Label: fmt.Sprintf("%.1f", ph.p.AfterLastRenewalSeconds)},
				}})
				twice := ph.p.Writes.twice()
				writes.Groups = append(writes.Groups, chart.Group{Label: label, Bars: []chart.Bar{nan, nan,
					{Value: float64(ph.p.Writes.ByKilled), Label: strconv.Itoa(ph.p.Writes.ByKilled)},
					{Value: float64(ph.p.Writes.BySurvivor), Label: strconv.Itoa(ph.p.Writes.BySurvivor)},
					{Value: float64(twice), Label: strconv.Itoa(twice), Highlight: twice > 0},
				}})
			}
		}
	}
	ch.Panels = []chart.Panel{takeover, writes}
	return ch
}

// failoverMarkdown tabulates every failover run.
func (r *results) failoverMarkdown() string {
	var b strings.Builder
	for _, f := range r.Failover {
		fmt.Fprintf(&b, "\nLeader failover at N=%d: two replicas with leader election (Lease duration %.3g s, renew deadline %.3g s, retry period %.3g s); the leader SIGKILLed once %.0f%% of the fleet was done, in the injection and again in the revert; every run:\n\n",
			f.N, f.LeaseDurationSeconds, f.RenewDeadlineSeconds, f.RetryPeriodSeconds, 100*f.KillAt)
		b.WriteString("| run | turn | phase | killed at (done) | Lease taken after the kill / after the last renewal | survivor's first write after the kill | end state reached | StatefulSet writes: killed leader / survivor / other | StatefulSets written 0 / 1 / 2+ times | failed writes | drop-in ConfigMap writes |\n")
		b.WriteString("|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|\n")
		for i, run := range f.Runs {
			for _, ph := range []struct {
				name string
				p    failoverPhase
			}{{"inject", run.Inject}, {"revert", run.Revert}} {
				w := ph.p.Writes
				fmt.Fprintf(&b, "| %d | %s | %s | %s (%d) | %s / %s | %s | %s | %d / %d / %d | %d / %d / %d | %s | %d |\n",
					i+1, turn(run.Turn), ph.name, secs(ph.p.KilledAtSeconds), ph.p.DoneAtKill, secs(ph.p.TakeoverSeconds), secs(ph.p.AfterLastRenewalSeconds),
					secs(ph.p.FirstWriteSeconds), secs(ph.p.Seconds), w.ByKilled, w.BySurvivor, w.ByOthers, w.times(0), w.times(1), w.twice(),
					failedWrites(w.Failed), w.ConfigMapWrites)
			}
		}
	}
	var cs []method.Conditions
	for _, f := range r.Failover {
		for _, run := range f.Runs {
			if run.Conditions != nil {
				cs = append(cs, *run.Conditions)
			}
		}
	}
	if len(r.Failover) > 0 {
		b.WriteString(r.orderSentence(cs))
	}
	return b.String()
}

// orderSentence says how the runs were ordered and the conditions they ran under.
func (r *results) orderSentence(cs []method.Conditions) string {
	order := "Each round ran every setting in a fixed order (measured before the benchmark drew it)"
	if r.Settings.Seed != 0 {
		order = fmt.Sprintf("Each round ran every setting in an order drawn from seed %d", r.Settings.Seed)
	}
	conditions := "not recorded per run (measured before the benchmark recorded them)"
	if len(cs) > 0 {
		conditions = method.Summary(cs)
	}
	return fmt.Sprintf("\n%s. Conditions: %s.\n", order, conditions)
}

// turn names a run's place in its round; results from before the order was drawn have none.
func turn(t int) string {
	if t == 0 {
		return "–"
	}
	return method.Ordinal(t)
}

// longestLease is the longest Lease duration of the failover results, in seconds.
func (r *results) longestLease() float64 {
	longest := 0.0
	for _, f := range r.Failover {
		longest = max(longest, f.LeaseDurationSeconds)
	}
	return longest
}

// failedWrites lists failed writes by status code, "none" when there were none.
func failedWrites(byCode map[string]int) string {
	if len(byCode) == 0 {
		return "none"
	}
	codes := slices.Sorted(maps.Keys(byCode))
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d × %s", byCode[c], c)
	}
	return strings.Join(parts, ", ")
}

// times is how many StatefulSets were written k times.
func (w failoverWrites) times(k int) int {
	if k < len(w.StatefulSetsByWrites) {
		return w.StatefulSetsByWrites[k]
	}
	return 0
}

// rolloutChart draws every rollout run: how long until every pod ran the new template and was
// ready, and the revert until every pod ran the original again, beside how many StatefulSets
// rolled at once.
func (r *results) rolloutChart() *chart.Chart {
	ch := &chart.Chart{
		Title:       "Paced and unpaced rollouts of one selector per namespace, every run",
		Series:      []string{"injection: every pod replaced and ready", "revert: every pod back on the original", "most StatefulSets rolling at once"},
		Orientation: chart.Horizontal,
		Machine:     fmt.Sprintf("%d CPUs, %.0f GiB, Linux %s; local control plane, kwok nodes", r.Machine.CPUs, r.Machine.MemoryGiB, r.Machine.Kernel),
		Measured:    r.Generated,
		Notes:       "kwok starts and readies a pod at once: with real databases every wave also waits for the slowest pod's start.",
	}
	times := chart.Panel{Title: "time (lower is better)", ValueAxis: "seconds"}
	rolling := chart.Panel{Title: "StatefulSets rolling at once", ValueAxis: "StatefulSets"}
	nan := chart.Bar{Value: math.NaN()}
	for i, ro := range r.Rollouts {
		label := fmt.Sprintf("run %d, %s", i/2+1, ro.Settings.Name)
		times.Groups = append(times.Groups, chart.Group{Label: label, Bars: []chart.Bar{
			{Value: ro.Inject.ReadySeconds, Label: fmt.Sprintf("%.0f", ro.Inject.ReadySeconds)},
			{Value: ro.RevertRolledOutSeconds, Label: fmt.Sprintf("%.0f", ro.RevertRolledOutSeconds)},
		}})
		rolling.Groups = append(rolling.Groups, chart.Group{Label: label, Bars: []chart.Bar{nan, nan, {Value: float64(ro.Inject.MaxRolling), Label: strconv.Itoa(ro.Inject.MaxRolling)}}})
	}
	ch.Panels = []chart.Panel{times, rolling}
	return ch
}

// rolloutMarkdown tabulates every rollout run, paced and unpaced.
func (r *results) rolloutMarkdown() string {
	if len(r.Rollouts) == 0 {
		return ""
	}
	ro := r.Rollouts[0]
	var b strings.Builder
	var cs []method.Conditions
	fmt.Fprintf(&b, "\nRollout runs: %d StatefulSets with %d pod each on kwok nodes (pods Running %s after creation), one selector ScratchVolume per namespace; every run, in the order run:\n\n",
		ro.StatefulSets, ro.Replicas, secs(ro.PodsRunningSeconds))
	b.WriteString("| manager | injected | Ready (every pod replaced) | most StatefulSets rolling at once | reverted | rolled back | StatefulSet writes per StatefulSet | peak RSS |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, ro := range r.Rollouts {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %.2f | %.0f MiB |\n", ro.Settings.Name, secs(ro.Inject.Seconds), secs(ro.Inject.ReadySeconds),
			ro.Inject.MaxRolling, secs(ro.Revert.Seconds), secs(ro.RevertRolledOutSeconds), ro.Inject.StatefulSetWrites/float64(ro.StatefulSets), ro.Memory.PeakRSSMiB)
		if ro.Conditions != nil {
			cs = append(cs, *ro.Conditions)
		}
	}
	b.WriteString(r.orderSentence(cs))
	return b.String()
}
