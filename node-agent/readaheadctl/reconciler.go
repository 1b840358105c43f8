package readaheadctl

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/nodeprofile"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

// nodeReconciler applies the ReadAheadPolicies to the devices of one node. Its queue holds a
// single key, the node, so passes never overlap and need no locking.
type nodeReconciler struct {
	client   client.Client
	recorder recorder.EventRecorder
	nodeName string
	paths    readahead.Paths
	host     readahead.Host
	store    *readahead.Store
	// profile writes the node's NodeIOProfile, reading it through the manager's cache.
	profile *nodeprofile.Writer
	// warned holds the problems announced in the last pass, so that a lasting problem is
	// announced once, not on every resync.
	warned map[problem]bool
	// exported holds the devices the gauge has a series for.
	exported map[string]bool
	now      func() time.Time
}

// +kubebuilder:rbac:groups=dbtune.io,resources=readaheadpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the node's devices to what the policies ask for and reports the outcome.
func (r *nodeReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (ctrl.Result, error) {
	node, err := r.getNode(ctx)
	if err != nil || node == nil {
		return ctrl.Result{}, err
	}
	in, err := r.gather(ctx, node)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := decide(in)
	steps := r.assess(p.targets)
	events := newEventBatch(in.policies)
	results := r.act(ctx, p, steps, events)
	rep := buildReport(p, results)
	r.warn(events, rep.problems)
	events.emit(r.recorder, node)
	r.exportMetrics(rep.devices)
	return ctrl.Result{}, r.writeStatus(ctx, rep)
}

func (r *nodeReconciler) key() reconcile.Request { return keyFor(r.nodeName) }

// getNode returns the agent's Node, or nil when it does not exist (yet, or any more): without
// its labels nothing can be decided, and without it no NodeIOProfile can be owned.
func (r *nodeReconciler) getNode(ctx context.Context) (*metav1.PartialObjectMetadata, error) {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	err := r.client.Get(ctx, client.ObjectKey{Name: r.nodeName}, node)
	if apierrors.IsNotFound(err) {
		log.FromContext(ctx).Info("Skipped read-ahead: Node not found", "node", r.nodeName)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to get Node %s: %w", r.nodeName, err)
	}
	return node, nil
}

// gather reads the policies, the host's devices and the state file. Only the API read can fail
// the pass; what the host refuses becomes part of the input, to be reported.
func (r *nodeReconciler) gather(ctx context.Context, node *metav1.PartialObjectMetadata) (input, error) {
	list := &v1alpha1.ReadAheadPolicyList{}
	if err := r.client.List(ctx, list); err != nil {
		return input{}, fmt.Errorf("failed to list ReadAheadPolicies: %w", err)
	}
	in := input{nodeLabels: node.Labels}
	for i := range list.Items {
		in.policies = append(in.policies, &list.Items[i])
	}
	in.inventory, in.inventoryErr = readahead.ReadInventory(r.paths)
	in.saved, in.stateErr = r.store.Entries()
	return in, nil
}

// assess reads every target's current value and decides what to do with it.
func (r *nodeReconciler) assess(targets []target) []step {
	steps := make([]step, 0, len(targets))
	for _, t := range targets {
		kib, err := r.host.ReadAhead(t.device)
		steps = append(steps, assess(t, reading{kib: kib, err: err}))
	}
	return steps
}

// nodeRef is what Events about the node point at.
func nodeRef(node *metav1.PartialObjectMetadata) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
}

func policyRef(name string, uid types.UID) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ReadAheadPolicy", Name: name, UID: uid}
}

// warn adds a Warning for each problem that was not there in the last pass, and forgets the
// problems that went away, so that a lasting problem is announced once and its return again.
func (r *nodeReconciler) warn(events *eventBatch, problems []problem) {
	current := make(map[problem]bool, len(problems))
	for _, p := range problems {
		current[p] = true
		if !r.warned[p] {
			events.add(eventKey{eventType: corev1.EventTypeWarning, reason: EventFailed, action: actionCheck, policy: p.policy}, "", p.String())
		}
	}
	r.warned = current
}
