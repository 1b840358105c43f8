package main

// Leader failover at fleet scale: two manager replicas elect a leader through a Lease, as the
// installed Deployment runs them; the leader is SIGKILLed in the middle of an injection of the fleet,
// and the replica that takes over is SIGKILLed in the middle of its revert. The API server's audit
// log says who wrote which StatefulSet when, so that every write of every replica is counted per
// object, not estimated from a client's own metrics.

import (
	"context"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/localcluster"
)

const (
	// leaseNamespace holds the managers' leader-election Lease, as the installed manager's own
	// namespace does.
	leaseNamespace = "dbtune-system"
	// leaseName is the manager's LeaderElectionID (main.go).
	leaseName = "scratch-operator.dbtune.io"
	// failoverQuiet is how long a phase goes on being audited after the fleet reached its end
	// state, so that a late second write of a StatefulSet is counted too.
	failoverQuiet = 10 * time.Second
)

// failoverResult is what failover.json holds: every run, each with an injection and a revert that
// lost their leader.
type failoverResult struct {
	N int `json:"statefulSets"`
	// KillAt is the share of the fleet done when the leader is killed.
	KillAt float64 `json:"killAtShare"`
	// LeaseDurationSeconds is the Lease's duration: the survivor may take over only once the dead
	// leader's last renewal is that old.
	LeaseDurationSeconds float64 `json:"leaseDurationSeconds"`
	// RenewDeadlineSeconds and RetryPeriodSeconds are the other leader-election flags the replicas
	// ran with.
	RenewDeadlineSeconds float64         `json:"renewDeadlineSeconds"`
	RetryPeriodSeconds   float64         `json:"retryPeriodSeconds"`
	Settings             managerSettings `json:"manager"`
	Runs                 []failoverRun   `json:"runs"`
}

type failoverRun struct {
	// Turn is the run's place in its round, 1 for the first Lease timing run: the round's order is
	// drawn from the results' seed. Results from before the order was drawn have none.
	Turn   int           `json:"turn,omitempty"`
	Inject failoverPhase `json:"inject"`
	Revert failoverPhase `json:"revert"`
	// Conditions are the machine's at the start of the run; results from before they were
	// recorded have none.
	Conditions *method.Conditions `json:"conditions,omitempty"`
}

// failoverPhase is one injection or revert during which the leader was killed.
type failoverPhase struct {
	// KilledAtSeconds is when the leader was killed, from the start of the phase, and DoneAtKill how
	// many StatefulSets were done (injected, or reverted) at that moment.
	KilledAtSeconds float64 `json:"killedAtSeconds"`
	DoneAtKill      int     `json:"doneAtKill"`
	// TakeoverSeconds is from the kill to the Lease's acquisition by the survivor (its acquireTime);
	// FirstWriteSeconds from the kill to the survivor's first StatefulSet write the API server
	// received.
	TakeoverSeconds   float64 `json:"takeoverSeconds"`
	FirstWriteSeconds float64 `json:"firstWriteSeconds"`
	// AfterLastRenewalSeconds is from the dead leader's last renewal of the Lease to the survivor's
	// acquisition: never less than the Lease's duration, or two replicas would have led at once.
	AfterLastRenewalSeconds float64 `json:"afterLastRenewalSeconds"`
	// Seconds is from the start of the phase to its end state: every StatefulSet injected exactly
	// once and every ScratchVolume Ready, or every template back to the original and the
	// ScratchVolumes gone.
	Seconds float64 `json:"seconds"`
	// Writes are the StatefulSet writes the API server received from the replicas.
	Writes failoverWrites `json:"writes"`
}

// failoverWrites counts, from the audit log, the writes to StatefulSets (not their status) the
// replicas sent during a phase.
type failoverWrites struct {
	// ByKilled and BySurvivor are the successful writes of the leader that was killed and of the
	// replica that took over; ByOthers those of any other replica, which does not lead and so
	// must not write.
	ByKilled   int `json:"byKilledLeader"`
	BySurvivor int `json:"bySurvivor"`
	ByOthers   int `json:"byOthers"`
	// StatefulSetsByWrites[k] is how many StatefulSets were written k times (successfully, by
	// any replica).
	StatefulSetsByWrites []int `json:"statefulSetsByWrites"`
	// Failed counts the writes the API server answered with an error, by HTTP status code: a
	// conflict (409), or a request of the killed leader in flight at the kill, which the API server
	// may have carried out although the client was gone to hear it.
	Failed map[string]int `json:"failed,omitempty"`
	// ConfigMapWrites counts the replicas' successful writes to ConfigMaps (the drop-ins).
	ConfigMapWrites int `json:"configMapWrites"`
}

// twice is how many StatefulSets were written more than once.
func (w failoverWrites) twice() int {
	n := 0
	for k, c := range w.StatefulSetsByWrites {
		if k > 1 {
			n += c
		}
	}
	return n
}

// replica is one manager of the pair, with the user it authenticates as.
type replica struct {
	*manager
	user string
}

// failoverUsers are the users the replicas run as (system:masters), one per replica a run starts;
// the API server audits their requests.
var failoverUsers = []string{"dbtune-manager-a", "dbtune-manager-b", "dbtune-manager-c"}

// election is the replicas' leader-election timing: a Lease duration, and the renew deadline and
// retry period in the proportions of controller-runtime's defaults (15 s, 10 s, 2 s).
type election struct{ lease, renew, retry time.Duration }

func electionFor(lease time.Duration) election {
	return election{lease: lease, renew: lease * 2 / 3, retry: lease * 2 / 15}
}

func (el election) args() []string {
	return []string{"--leader-election-lease-duration=" + el.lease.String(), "--leader-election-renew-deadline=" + el.renew.String(),
		"--leader-election-retry-period=" + el.retry.String()}
}

// measureFailover runs cfg.runs runs at size n for each of the Lease durations cfg.leases, one run
// of each in turn: an injection whose leader is killed, then a revert whose new leader is killed.
func (e *env) measureFailover(ctx context.Context, cfg config, n int) ([]*failoverResult, error) {
	b := e.bench
	results := make([]*failoverResult, len(cfg.leases))
	for i, lease := range cfg.leases {
		el := electionFor(lease)
		results[i] = &failoverResult{N: n, KillAt: cfg.killAt, LeaseDurationSeconds: el.lease.Seconds(), RenewDeadlineSeconds: el.renew.Seconds(),
			RetryPeriodSeconds: el.retry.Seconds(), Settings: defaultSettings}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}
	if err := client.IgnoreAlreadyExists(b.admin.Create(ctx, ns)); err != nil {
		return results, err
	}
	if err := b.fleet.resize(ctx, n); err != nil {
		return results, err
	}
	if _, err := b.waitSettled(ctx); err != nil {
		return results, err
	}
	turns := make([]int, len(cfg.leases))
	for j := range turns {
		turns[j] = j
	}
	for i := range cfg.runs {
		for position, j := range method.Shuffled(e.order, turns) {
			el := electionFor(cfg.leases[j])
			logf("failover at N=%d, Lease %s: run %d of %d (load %s)", n, el.lease, i+1, cfg.runs, loadAverage())
			r, err := e.failoverRun(ctx, cfg, n, i, el)
			r.Turn = position + 1
			results[j].Runs = append(results[j].Runs, r)
			if err != nil {
				return results, fmt.Errorf("run %d with a Lease of %s: %w", i+1, el.lease, err)
			}
			logf("  inject: killed at %d done, took over in %.1f s (%.1f s after the last renewal), first write %.1f s after the kill, all in %.1f s; %d written twice",
				r.Inject.DoneAtKill, r.Inject.TakeoverSeconds, r.Inject.AfterLastRenewalSeconds, r.Inject.FirstWriteSeconds, r.Inject.Seconds, r.Inject.Writes.twice())
			logf("  revert: killed at %d done, took over in %.1f s (%.1f s after the last renewal), first write %.1f s after the kill, all in %.1f s; %d written twice",
				r.Revert.DoneAtKill, r.Revert.TakeoverSeconds, r.Revert.AfterLastRenewalSeconds, r.Revert.FirstWriteSeconds, r.Revert.Seconds, r.Revert.Writes.twice())
		}
	}
	return results, nil
}

// failoverRun starts replicas a (the leader) and b, injects the fleet and kills a halfway; starts c,
// reverts the fleet and kills b halfway; then stops c.
func (e *env) failoverRun(ctx context.Context, cfg config, n, run int, el election) (failoverRun, error) {
	b := e.bench
	r := failoverRun{Conditions: recordConditions()}
	var started []*replica
	defer func() {
		for _, rep := range started {
			_ = rep.stop()
		}
	}()
	start := func(user string) (*replica, error) {
		rep, err := e.startReplica(ctx, user, run, el)
		if err == nil {
			started = append(started, rep)
		}
		return rep, err
	}
	a, err := start(failoverUsers[0])
	if err != nil {
		return r, err
	}
	if _, err := waitFor(ctx, "the first replica to lead", time.Minute, func() (bool, string) {
		return a.leads(ctx), "not leading yet"
	}); err != nil {
		return r, err
	}
	standby, err := start(failoverUsers[1])
	if err != nil {
		return r, err
	}
	r.Inject, err = e.failoverPhase(ctx, cfg, n, el, a, standby, nil, func() error {
		return forEach(ctx, b.fleet.namespaces, createWorkers, func(ctx context.Context, i int) error {
			return b.admin.Create(ctx, selectorScratchVolume(fleetNamespace(i, b.fleet.namespaces)))
		})
	}, func() (int, bool, string) {
		sets := b.fleet.statefulSets(ctx)
		injected, bad := b.fleet.injectedOnce(sets, fleetScratchVolume)
		if bad != "" {
			return injected, false, bad
		}
		svs := b.fleet.scratchVolumes(ctx)
		return injected, injected == len(sets) && countReady(svs) == b.fleet.namespaces,
			fmt.Sprintf("%d of %d injected, %d of %d ScratchVolumes Ready", injected, len(sets), countReady(svs), b.fleet.namespaces)
	})
	if err != nil {
		return r, fmt.Errorf("injection: %w", err)
	}
	c, err := start(failoverUsers[2])
	if err != nil {
		return r, err
	}
	r.Revert, err = e.failoverPhase(ctx, cfg, n, el, standby, c, a, func() error {
		return forEach(ctx, b.fleet.namespaces, createWorkers, func(ctx context.Context, i int) error {
			return b.admin.DeleteAllOf(ctx, &v1alpha1.ScratchVolume{}, client.InNamespace(fleetNamespace(i, b.fleet.namespaces)),
				client.MatchingLabels{benchLabel: "fleet"})
		})
	}, func() (int, bool, string) {
		sets := b.fleet.statefulSets(ctx)
		reverted := len(sets) - countInjected(sets, "")
		diverged := b.fleet.diverged(sets)
		left := len(b.fleet.scratchVolumes(ctx))
		return reverted, len(diverged) == 0 && left == 0,
			fmt.Sprintf("%d of %d reverted, %d differ from their original template, %d ScratchVolumes left", reverted, len(sets), len(diverged), left)
	})
	if err != nil {
		return r, fmt.Errorf("revert: %w", err)
	}
	return r, nil
}

// startReplica starts a manager with leader election timed by el, authenticated as user.
func (e *env) startReplica(ctx context.Context, user string, run int, el election) (*replica, error) {
	kubeconfig, err := e.cluster.UserKubeconfig(user, "system:masters")
	if err != nil {
		return nil, err
	}
	m, err := startManager(ctx, e.cluster, e.manager, fmt.Sprintf("manager-failover-%s-%d-%s", el.lease, run+1, user), defaultSettings,
		e.bench.cfg.resync, e.bench.cfg.runtimeEnv(), launch{
			kubeconfig: kubeconfig,
			args:       append([]string{"--leader-elect", "--leader-election-namespace=" + leaseNamespace}, el.args()...),
		})
	if err != nil {
		return nil, err
	}
	return &replica{manager: m, user: user}, nil
}

// leads says whether the replica holds the Lease, by its own leader-election metric.
func (r *replica) leads(ctx context.Context) bool {
	s, err := r.scrape(ctx)
	return err == nil && s.sum("leader_election_master_status", func(l map[string]string) bool { return l["name"] == leaseName }) == 1
}

// failoverPhase begins a phase with leader and standby running (and gone, a replica killed
// earlier, whose writes count as the killed leader's), kills the leader once cfg.killAt of the
// fleet is done, and waits until check says the end state is reached. check returns how many
// StatefulSets are done, whether the phase is over, and where it stands.
func (e *env) failoverPhase(ctx context.Context, cfg config, n int, el election, leader, standby, gone *replica, begin func() error,
	check func() (done int, over bool, status string),
) (failoverPhase, error) {
	var p failoverPhase
	if !leader.leads(ctx) {
		return p, fmt.Errorf("replica %s does not lead", leader.user)
	}
	before, err := e.lease(ctx)
	if err != nil {
		return p, err
	}
	from, err := localcluster.AuditLogSize(e.cluster.AuditLog())
	if err != nil {
		return p, err
	}
	start := time.Now()
	if err := begin(); err != nil {
		return p, err
	}
	killAt := int(math.Ceil(cfg.killAt * float64(n)))
	if _, err := waitFor(ctx, fmt.Sprintf("%d StatefulSets to be done before the kill", killAt), cfg.timeout, func() (bool, string) {
		done, over, status := check()
		p.DoneAtKill = done
		return done >= killAt || over, status
	}); err != nil {
		return p, err
	}
	if p.DoneAtKill >= n {
		return p, fmt.Errorf("the whole fleet was done before the leader could be killed (%d of %d); lower -kill-at", p.DoneAtKill, n)
	}
	if err := leader.proc.Kill(); err != nil {
		return p, err
	}
	killed := time.Now()
	p.KilledAtSeconds = killed.Sub(start).Seconds()
	logf("  killed leader %s with %d of %d done, %.1f s in", leader.user, p.DoneAtKill, n, p.KilledAtSeconds)
	// The dead leader's last renewal: read after the kill, so that it is the last.
	lastRenewal := before.Spec.RenewTime
	if _, err := waitFor(ctx, "another replica to take the Lease", 2*el.lease+time.Minute, func() (bool, string) {
		l, err := e.lease(ctx)
		if err != nil {
			return false, err.Error()
		}
		if ptrString(l.Spec.HolderIdentity) == ptrString(before.Spec.HolderIdentity) || l.Spec.AcquireTime == nil {
			lastRenewal = l.Spec.RenewTime
			return false, "still held by " + ptrString(l.Spec.HolderIdentity)
		}
		p.TakeoverSeconds = l.Spec.AcquireTime.Sub(killed).Seconds()
		if lastRenewal != nil {
			p.AfterLastRenewalSeconds = l.Spec.AcquireTime.Sub(lastRenewal.Time).Seconds()
		}
		return true, ""
	}); err != nil {
		return p, err
	}
	// The replica sets its metric once it has written the Lease, a moment later.
	if _, err := waitFor(ctx, "the new holder of the Lease to say it leads", 10*time.Second, func() (bool, string) {
		return standby.leads(ctx), "replica " + standby.user + " does not report leading"
	}); err != nil {
		return p, fmt.Errorf("the Lease changed hands, but: %w", err)
	}
	if _, err := waitFor(ctx, "the fleet to reach its end state", cfg.timeout, func() (bool, string) {
		_, over, status := check()
		return over, status
	}); err != nil {
		return p, err
	}
	p.Seconds = time.Since(start).Seconds()
	// Late writes are what the count is for: give them time to happen.
	if err := sleepUntil(ctx, time.Now().Add(failoverQuiet)); err != nil {
		return p, err
	}
	events, err := localcluster.ReadAuditLog(e.cluster.AuditLog(), from)
	if err != nil {
		return p, err
	}
	killedBy := map[string]bool{leader.user: true}
	if gone != nil {
		killedBy[gone.user] = true
	}
	var wrote bool
	p.Writes, p.FirstWriteSeconds, wrote = countFailoverWrites(events, n, killedBy, standby.user, killed)
	switch {
	case !wrote:
		return p, fmt.Errorf("replica %s took over but wrote no StatefulSet: the audit log holds none of its writes", standby.user)
	case p.FirstWriteSeconds < 0:
		return p, fmt.Errorf("replica %s wrote a StatefulSet %.1f s before the leader was killed, while it did not lead", standby.user, -p.FirstWriteSeconds)
	}
	return p, nil
}

// lease reads the managers' leader-election Lease.
func (e *env) lease(ctx context.Context) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	err := e.bench.admin.Get(ctx, client.ObjectKey{Namespace: leaseNamespace, Name: leaseName}, l)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("no Lease %s/%s: the replicas do not elect a leader", leaseNamespace, leaseName)
	}
	return l, err
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
