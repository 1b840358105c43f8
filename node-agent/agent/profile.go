package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// profileWriter keeps the agent's part of its NodeIOProfile status in memory and writes it to the
// API server, retrying with backoff until it gets through: a result measured while the API server
// is away is written when it is back, and only the latest state is ever written.
//
// The status is server-side applied with only the agent's fields (see ownedStatus), so the
// read-ahead list and the ReadAheadApplied condition, written by another field manager, are left
// as they are.
type profileWriter struct {
	client  client.Client
	reader  client.Reader // the API server itself: the seed and the existence check must be fresh
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
		client: c, reader: reader, node: node, backoff: backoff, log: log,
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
	p, err := w.ensure(ctx)
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
		if err := w.applyStatus(ctx, desired); err != nil {
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

// ensure returns the node's NodeIOProfile, creating it owned by the Node (so that it is garbage
// collected with the Node) or adding that owner to a profile created by someone else.
func (w *profileWriter) ensure(ctx context.Context) (*v1alpha1.NodeIOProfile, error) {
	p := &v1alpha1.NodeIOProfile{}
	err := w.reader.Get(ctx, client.ObjectKey{Name: w.node}, p)
	switch {
	case apierrors.IsNotFound(err):
		return w.create(ctx)
	case err != nil:
		return nil, fmt.Errorf("failed to get NodeIOProfile %s: %w", w.node, err)
	case !ownedByNode(p, w.node):
		return p, w.adopt(ctx)
	}
	return p, nil
}

func (w *profileWriter) create(ctx context.Context) (*v1alpha1.NodeIOProfile, error) {
	owner, err := w.nodeOwner(ctx)
	if err != nil {
		return nil, err
	}
	p := &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: w.node, OwnerReferences: []metav1.OwnerReference{owner}}}
	err = w.client.Create(ctx, p, client.FieldOwner(v1alpha1.AgentFieldManager))
	if apierrors.IsAlreadyExists(err) {
		// The read-ahead side creates the same profile, with the same owner, and may be first.
		if err := w.reader.Get(ctx, client.ObjectKey{Name: w.node}, p); err != nil {
			return nil, fmt.Errorf("failed to get NodeIOProfile %s: %w", w.node, err)
		}
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to create NodeIOProfile %s: %w", w.node, err)
	}
	w.log.Info("Created the NodeIOProfile", "nodeIOProfile", w.node)
	return p, nil
}

func (w *profileWriter) adopt(ctx context.Context) error {
	owner, err := w.nodeOwner(ctx)
	if err != nil {
		return err
	}
	u := w.skeleton()
	u.SetOwnerReferences([]metav1.OwnerReference{owner})
	if err := w.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.AgentFieldManager)); err != nil {
		return fmt.Errorf("failed to add the Node as owner of NodeIOProfile %s: %w", w.node, err)
	}
	w.log.Info("Added the Node as owner of the NodeIOProfile", "nodeIOProfile", w.node)
	return nil
}

func (w *profileWriter) nodeOwner(ctx context.Context) (metav1.OwnerReference, error) {
	node := &corev1.Node{}
	if err := w.reader.Get(ctx, client.ObjectKey{Name: w.node}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.OwnerReference{}, fmt.Errorf("node %s does not exist: the agent's node name must be the name of the Node it runs on (spec.nodeName): %w", w.node, err)
		}
		return metav1.OwnerReference{}, fmt.Errorf("failed to get Node %s: %w", w.node, err)
	}
	// No blockOwnerDeletion: it would need permission to update nodes/finalizers, and nothing
	// is gained by holding up a Node's deletion for a measurement.
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}, nil
}

func ownedByNode(p *v1alpha1.NodeIOProfile, node string) bool {
	for _, o := range p.OwnerReferences {
		if o.APIVersion == "v1" && o.Kind == "Node" && o.Name == node {
			return true
		}
	}
	return false
}

func (w *profileWriter) applyStatus(ctx context.Context, st v1alpha1.NodeIOProfileStatus) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return fmt.Errorf("failed to convert the status of NodeIOProfile %s: %w", w.node, err)
	}
	u := w.skeleton()
	u.Object["status"] = obj
	// Forcing is safe: the fields sent are the agent's alone, and a hand edit of a measurement
	// must not stop the agent from publishing the next one.
	if err := w.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.AgentFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply the status of NodeIOProfile %s: %w", w.node, err)
	}
	return nil
}

// markServed records the served request with a merge patch of that one annotation: the user owns
// the profile's other annotations, and an apply would take them over.
func (w *profileWriter) markServed(ctx context.Context, p *v1alpha1.NodeIOProfile, served string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.ProbeServedAnnotation: served}}})
	if err != nil {
		return err
	}
	if err := w.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(v1alpha1.AgentFieldManager)); err != nil {
		return fmt.Errorf("failed to record the served probe request on NodeIOProfile %s: %w", w.node, err)
	}
	w.log.Info("Served a probe request", "nodeIOProfile", w.node, "request", served)
	return nil
}

func (w *profileWriter) skeleton() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("NodeIOProfile")
	u.SetName(w.node)
	return u
}
