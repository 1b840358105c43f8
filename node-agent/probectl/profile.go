package probectl

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/nodeprofile"
)

// profileWriter keeps the agent's part of its NodeIOProfile status in memory and writes it to the
// API server, retrying with backoff until it gets through: a result measured while the API server
// is away is written when it is back, and only the latest state is ever written.
//
// The status is server-side applied through nodeprofile with only the agent's fields (see
// ownedStatus), so the read-ahead list and the ReadAheadApplied condition, written by another
// field manager, are left as they are.
type profileWriter struct {
	// profile reads through the API server itself: the seed and the existence check must be fresh.
	profile *nodeprofile.Writer
	node    string
	backoff wait.Backoff
	log     logr.Logger
	kick    chan struct{}
	// seeded is closed once the status on the server has been read, so that nothing computed
	// in memory ever hides an earlier run's figures.
	seeded     chan struct{}
	seededOnce sync.Once

	mu         sync.Mutex
	status     v1alpha1.NodeIOProfileStatus
	gen        uint64 // bumped by every change to write
	flushedGen uint64
	served     string // a ProbeRequestedAnnotation value to record as served
	uid        types.UID
}

func newProfileWriter(c client.Client, reader client.Reader, node string, backoff wait.Backoff, log logr.Logger) *profileWriter {
	return &profileWriter{
		profile: nodeprofile.NewWriter(c, reader, node, v1alpha1.AgentFieldManager, log),
		node:    node, backoff: backoff, log: log,
		kick: make(chan struct{}, 1), seeded: make(chan struct{}),
		gen: 1, // the first flush creates the profile and reads what is there
	}
}

// record changes the in-memory status and has it written. A non-empty served value is recorded
// in ProbeServedAnnotation once the status is written. It returns the new status.
func (w *profileWriter) record(change func(v1alpha1.NodeIOProfileStatus) v1alpha1.NodeIOProfileStatus, served string) v1alpha1.NodeIOProfileStatus {
	w.mu.Lock()
	w.status = change(w.status)
	if served != "" {
		w.served = served
	}
	w.gen++
	st := *w.status.DeepCopy()
	w.mu.Unlock()
	w.poke()
	return st
}

// rewrite has the profile written again even if nothing changed in memory: it was deleted, or
// changed behind the agent's back.
func (w *profileWriter) rewrite() {
	w.mu.Lock()
	w.gen++
	w.mu.Unlock()
	w.poke()
}

func (w *profileWriter) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *profileWriter) clean() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushedGen == w.gen
}

func (w *profileWriter) objectUID() types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.uid
}

// run writes whenever something changed, until ctx ends.
func (w *profileWriter) run(ctx context.Context) {
	w.poke()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		bo := w.backoff
		for !w.clean() {
			err := w.flush(ctx)
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return
			}
			delay := bo.Step()
			w.log.Error(err, "Failed to write the NodeIOProfile; the result is kept and written later", "retryIn", delay.Round(time.Millisecond))
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
		}
	}
}

// flushBeforeExit makes one last, short attempt when the agent stops, so that a run canceled by
// the shutdown says so.
func (w *profileWriter) flushBeforeExit(ctx context.Context) {
	if w.clean() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := w.flush(ctx); err != nil {
		w.log.Error(err, "Failed to write the NodeIOProfile before exiting")
	}
}

func (w *profileWriter) flush(ctx context.Context) error {
	p, err := w.profile.Ensure(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.uid = p.UID
	w.seededOnce.Do(func() {
		w.status = ownedStatus(p.Status)
		close(w.seeded)
	})
	desired, served, gen := *w.status.DeepCopy(), w.served, w.gen
	w.mu.Unlock()

	if !equality.Semantic.DeepEqual(ownedStatus(p.Status), desired) {
		if err := w.profile.ApplyStatus(ctx, &desired); err != nil {
			return err
		}
	}
	if served != "" && p.Annotations[v1alpha1.ProbeServedAnnotation] != served {
		if err := w.markServed(ctx, p, served); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.flushedGen = gen
	if w.served == served {
		w.served = ""
	}
	w.mu.Unlock()
	return nil
}

// markServed records the served request in ProbeServedAnnotation.
func (w *profileWriter) markServed(ctx context.Context, p *v1alpha1.NodeIOProfile, served string) error {
	if err := w.profile.Annotate(ctx, p, v1alpha1.ProbeServedAnnotation, served); err != nil {
		return fmt.Errorf("failed to record the served probe request: %w", err)
	}
	w.log.Info("Served a probe request", "nodeIOProfile", w.node, "request", served)
	return nil
}
