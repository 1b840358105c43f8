package probectl

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Triggers of a run, as logged.
const (
	triggerStart      = "start"
	triggerSchedule   = "schedule"
	triggerAnnotation = "annotation"
)

// cleanupGrace is added to a run's time limit: the probe checks its limit between system calls
// and then removes its files, and neither must be cut short.
const cleanupGrace = 10 * time.Second

// Runner runs the probes of one node, one run at a time. The scheduler and the ProfileReconciler
// only ask for runs; the Runner queues at most one, takes a probe slot, probes, and hands the
// outcome to the status writer, the metrics and the event recorder.
type Runner struct {
	cfg      Config
	slots    *slotPool
	profile  *profileWriter
	metrics  *probeCollector
	recorder recorder.EventRecorder
	log      logr.Logger
	wake     chan struct{}

	mu      sync.Mutex
	next    *request // the queued run
	running *request
	served  string // the last on-demand value whose run is over
}

var _ manager.Runnable = (*Runner)(nil)

// request is a run asked for: by whom, and for an on-demand run the annotation value it serves.
type request struct {
	trigger  string
	onDemand string
}

// requestScheduled asks for a run unless one is queued or under way: that one is just as fresh.
func (r *Runner) requestScheduled(trigger string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next != nil || r.running != nil {
		r.log.V(1).Info("Skipped a scheduled probe run: one is already queued or running", "trigger", trigger)
		return
	}
	r.next = &request{trigger: trigger}
	r.signal()
}

// requestOnDemand asks for a run that serves value. A run that already started does not serve a
// new value: it may have measured before the user asked. Repeated reconciles of the same value
// ask once.
func (r *Runner) requestOnDemand(value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case value == r.served,
		r.running != nil && r.running.onDemand == value,
		r.next != nil && r.next.onDemand == value:
		return
	case r.next != nil:
		r.next.onDemand, r.next.trigger = value, triggerAnnotation
	default:
		r.next = &request{trigger: triggerAnnotation, onDemand: value}
	}
	r.signal()
}

func (r *Runner) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// NeedLeaderElection is false: every node's agent works for its own node.
func (r *Runner) NeedLeaderElection() bool { return false }

// Start runs queued runs until ctx ends, then makes a last attempt to write what is unwritten.
// The metrics go with the agent, so that another one may start in the same process.
func (r *Runner) Start(ctx context.Context) error {
	defer r.cfg.Registerer.Unregister(r.metrics)
	var wg sync.WaitGroup
	wg.Go(func() { r.profile.run(ctx) })
	r.work(ctx)
	wg.Wait()
	r.profile.flushBeforeExit(ctx)
	return nil
}

func (r *Runner) work(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-r.profile.seeded:
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		req := r.take()
		if req == nil {
			continue
		}
		r.runOnce(ctx, req)
		r.finish(req)
	}
}

func (r *Runner) take() *request {
	r.mu.Lock()
	defer r.mu.Unlock()
	req := r.next
	r.next, r.running = nil, req
	return req
}

func (r *Runner) finish(req *request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running = nil
	if req.onDemand != "" {
		r.served = req.onDemand
	}
	if r.next != nil {
		r.signal()
	}
}

// runOnce takes a slot, probes within the options' time limit, and publishes the outcome. It
// publishes nothing when ctx ends before a slot is free: nothing was measured or attempted.
func (r *Runner) runOnce(ctx context.Context, req *request) {
	log := r.log.WithValues("trigger", req.trigger)
	slot, err := r.slots.acquire(ctx, r.waiting)
	if err != nil {
		log.Info("Gave up waiting for a probe slot", "reason", err.Error())
		return
	}
	defer slot.release()
	pctx, cancel := context.WithTimeout(slot.ctx, r.cfg.Options.MaxDuration+cleanupGrace)
	defer cancel()
	log.Info("Started a probe run", "targets", len(r.cfg.Targets))
	res, perr := r.cfg.Prober.Probe(pctx, r.cfg.Targets, r.cfg.Options)
	slot.release()
	o := runOutcome{Result: res, Err: perr}
	now := time.Now()
	st := r.profile.record(func(prev v1alpha1.NodeIOProfileStatus) v1alpha1.NodeIOProfileStatus {
		return statusAfterRun(prev, o, now)
	}, req.onDemand)
	r.metrics.observe(o, now)
	r.announce(log, st)
}

func (r *Runner) waiting(message string) {
	now := time.Now()
	r.profile.record(func(prev v1alpha1.NodeIOProfileStatus) v1alpha1.NodeIOProfileStatus {
		return statusWhileWaiting(prev, message, now)
	}, "")
}

// announce logs the run and emits its Event: Normal when every target was measured, Warning with
// the Degraded message otherwise.
func (r *Runner) announce(log logr.Logger, st v1alpha1.NodeIOProfileStatus) {
	probed := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProbed)
	degraded := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	if probed == nil || degraded == nil {
		return
	}
	regarding := &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: r.cfg.NodeName, UID: r.profile.objectUID()}}
	if degraded.Status != metav1.ConditionTrue {
		log.Info("Finished a probe run", "message", probed.Message)
		r.recorder.Eventf(regarding, nil, corev1.EventTypeNormal, EventProbed, actionProbe, "%s", probed.Message)
		return
	}
	log.Info("Finished a probe run with problems", "probed", probed.Status, "reason", degraded.Reason, "message", degraded.Message)
	r.recorder.Eventf(regarding, nil, corev1.EventTypeWarning, EventProbeDegraded, actionProbe, "%s", degraded.Message)
}

// scheduler asks for a run at start and then every period, with jitter.
type scheduler struct {
	runner *Runner
	period time.Duration
	jitter float64
}

// NeedLeaderElection is false: every node's agent works for its own node.
func (s *scheduler) NeedLeaderElection() bool { return false }

// Start asks for the first run at once and the next ones one jittered period after the previous
// request; it returns when ctx ends.
func (s *scheduler) Start(ctx context.Context) error {
	trigger := triggerStart
	ask := func(context.Context) {
		s.runner.requestScheduled(trigger)
		trigger = triggerSchedule
	}
	wait.JitterUntilWithContext(ctx, ask, s.period, s.jitter, true)
	return nil
}
