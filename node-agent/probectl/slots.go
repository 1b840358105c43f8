package probectl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// slotPool limits how many nodes probe at once with a fixed set of Leases, <prefix>-0 to
// <prefix>-(size-1): a node probes only while it holds one of them. Taking a slot is an
// optimistic update (resourceVersion precondition), so two nodes never both win the same Lease.
//
// A slot held by another node counts as free once its holder has stopped renewing it: the Lease
// has not changed for its leaseDurationSeconds, timed on this node's clock from when this node
// first saw that version (as client-go's leader election does), so clock skew between nodes
// cannot steal a live slot.
type slotPool struct {
	reader    client.Reader // the API server itself: slots must be read fresh, and are not cached
	writer    client.Writer
	namespace string
	prefix    string
	size      int
	identity  string
	duration  time.Duration
	backoff   wait.Backoff
	log       logr.Logger

	// seen maps a slot name to the version of it first seen and when; only the acquiring
	// goroutine uses it.
	seen map[string]observation
}

type observation struct {
	resourceVersion string
	at              time.Time
}

// errSlotLost is the cause given to a probe whose slot was lost.
var errSlotLost = errors.New("lost its probe slot")

// acquire takes a slot, waiting with backoff while none is free. waiting is told why, each time
// the reason changes. It fails only when ctx ends.
func (p *slotPool) acquire(ctx context.Context, waiting func(message string)) (*heldSlot, error) {
	bo := p.backoff
	last := ""
	for {
		held, why := p.tryAcquire(ctx)
		if held != nil {
			return held, nil
		}
		if why != last {
			last = why
			p.log.Info("Waiting for a probe slot Lease", "reason", why)
			waiting(why)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(bo.Step()):
		}
	}
}

// tryAcquire tries every slot once, starting at a random one so that waiting nodes spread over
// the slots instead of all racing for the first.
func (p *slotPool) tryAcquire(ctx context.Context) (*heldSlot, string) {
	var holders []string
	var errs []error
	start := rand.IntN(p.size)
	for k := range p.size {
		name := slotName(p.prefix, (start+k)%p.size)
		lease, holder, err := p.take(ctx, name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case lease != nil:
			return p.hold(ctx, lease), ""
		default:
			holders = append(holders, holder)
		}
	}
	return nil, p.waitMessage(holders, errs)
}

func (p *slotPool) waitMessage(holders []string, errs []error) string {
	if err := errors.Join(errs...); err != nil {
		return fmt.Sprintf("Cannot take a probe slot (Leases %s/%s-*): %s. Check that the namespace exists and that the agent may get, create and update Leases in it.",
			p.namespace, p.prefix, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	slices.Sort(holders)
	return fmt.Sprintf("Waiting for a probe slot: at most %d node(s) probe at once (Leases %s/%s-*), and the slots are held by %s.",
		p.size, p.namespace, p.prefix, strings.Join(holders, ", "))
}

// take returns the Lease once this node holds it, or the identity of the holder that keeps this
// node from taking it, or an error.
func (p *slotPool) take(ctx context.Context, name string) (*coordinationv1.Lease, string, error) {
	lease := &coordinationv1.Lease{}
	err := p.reader.Get(ctx, types.NamespacedName{Namespace: p.namespace, Name: name}, lease)
	if apierrors.IsNotFound(err) {
		return p.create(ctx, name)
	}
	if err != nil {
		return nil, "", fmt.Errorf("failed to get Lease %s/%s: %w", p.namespace, name, err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder != "" && holder != p.identity && !p.expired(name, lease) {
		return nil, holder, nil
	}
	now := metav1.NewMicroTime(time.Now())
	if holder != p.identity {
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
	lease.Spec.HolderIdentity = ptr.To(p.identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(p.durationSeconds())
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	if err := p.writer.Update(ctx, lease, client.FieldOwner(v1alpha1.AgentFieldManager)); err != nil {
		if apierrors.IsConflict(err) {
			return nil, "another node that was faster", nil
		}
		return nil, "", fmt.Errorf("failed to take Lease %s/%s: %w", p.namespace, name, err)
	}
	return lease, "", nil
}

func (p *slotPool) create(ctx context.Context, name string) (*coordinationv1.Lease, string, error) {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(p.identity), LeaseDurationSeconds: ptr.To(p.durationSeconds()),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0),
		},
	}
	err := p.writer.Create(ctx, lease, client.FieldOwner(v1alpha1.AgentFieldManager))
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil, "another node that was faster", nil
	case err != nil:
		return nil, "", fmt.Errorf("failed to create Lease %s/%s: %w", p.namespace, name, err)
	}
	return lease, "", nil
}

// expired reports whether the Lease has stayed unchanged for its whole duration since this node
// first saw it in that version.
func (p *slotPool) expired(name string, lease *coordinationv1.Lease) bool {
	now := time.Now()
	o, ok := p.seen[name]
	if !ok || o.resourceVersion != lease.ResourceVersion {
		p.seen[name] = observation{resourceVersion: lease.ResourceVersion, at: now}
		return false
	}
	d := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	return now.Sub(o.at) >= d
}

func (p *slotPool) durationSeconds() int32 {
	return int32((p.duration + time.Second - 1) / time.Second)
}

// heldSlot is a slot this node holds. Its context ends when the slot is lost, so that a probe
// never goes on once another node may have taken over.
type heldSlot struct {
	pool   *slotPool
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	lease *coordinationv1.Lease
}

func (p *slotPool) hold(parent context.Context, lease *coordinationv1.Lease) *heldSlot {
	ctx, cancel := context.WithCancelCause(parent)
	s := &heldSlot{pool: p, ctx: ctx, cancel: cancel, done: make(chan struct{}), lease: lease}
	go s.renew()
	p.log.V(1).Info("Took a probe slot Lease", "lease", lease.Name)
	return s
}

// renew renews the Lease every third of its duration. It gives up, and cancels the slot's
// context, once the Lease could not be renewed for two thirds of its duration: past the full
// duration another node may take it.
func (s *heldSlot) renew() {
	defer close(s.done)
	every := s.pool.duration / 3
	lastRenewed := time.Now()
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-ticker.C:
		}
		err := s.renewOnce()
		switch {
		case err == nil:
			lastRenewed = time.Now()
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			s.cancel(fmt.Errorf("%w: Lease %s/%s changed hands: %w", errSlotLost, s.pool.namespace, s.name(), err))
			return
		case time.Since(lastRenewed) >= 2*s.pool.duration/3:
			s.cancel(fmt.Errorf("%w: Lease %s/%s could not be renewed for %s: %w", errSlotLost, s.pool.namespace, s.name(),
				time.Since(lastRenewed).Round(time.Second), err))
			return
		}
	}
}

func (s *heldSlot) renewOnce() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lease := s.lease.DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.RenewTime = &now
	ctx, cancel := context.WithTimeout(s.ctx, s.pool.duration/3)
	defer cancel()
	if err := s.pool.writer.Update(ctx, lease, client.FieldOwner(v1alpha1.AgentFieldManager)); err != nil {
		return err
	}
	s.lease = lease
	return nil
}

func (s *heldSlot) name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease.Name
}

// release stops renewing and hands the slot back at once, so that a waiting node need not wait
// for it to expire. If the API server cannot be reached the slot simply expires.
func (s *heldSlot) release() {
	s.once.Do(func() {
		s.cancel(errors.New("the probe slot was released"))
		<-s.done
		s.mu.Lock()
		lease := s.lease.DeepCopy()
		s.mu.Unlock()
		lease.Spec.HolderIdentity = nil
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 5*time.Second)
		defer cancel()
		if err := s.pool.writer.Update(ctx, lease, client.FieldOwner(v1alpha1.AgentFieldManager)); err != nil {
			s.pool.log.Info("Failed to release the probe slot Lease; it expires on its own", "lease", lease.Name,
				"expiresIn", s.pool.duration, "error", err.Error())
			return
		}
		s.pool.log.V(1).Info("Released the probe slot Lease", "lease", lease.Name)
	})
}
