package readaheadstatus

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// PolicyStatusReconciler writes each ReadAheadPolicy's status from the NodeIOProfiles the node
// agents write. It runs once per cluster, in the operator's manager: with every agent writing
// its own counts into one policy, the counts would be lost to each other's updates.
type PolicyStatusReconciler struct {
	client.Client
}

// SetupPolicyStatus adds the PolicyStatusReconciler to the operator's manager. Its cache then
// holds every Node (metadata only) and every NodeIOProfile.
func SetupPolicyStatus(mgr manager.Manager) error {
	r := &PolicyStatusReconciler{Client: mgr.GetClient()}
	all := handler.EnqueueRequestsFromMapFunc(r.allPolicies)
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(&v1alpha1.ReadAheadPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.NodeIOProfile{}, all, builder.WithPredicates(readAheadChanged())).
		Watches(&corev1.Node{}, all, builder.OnlyMetadata, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}

// controllerName is the controller label of controller-runtime's metrics and logs for this
// controller (controller_runtime_reconcile_total{controller="readaheadpolicy-status"}).
const controllerName = "readaheadpolicy-status"

// +kubebuilder:rbac:groups=dbtune.io,resources=readaheadpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=dbtune.io,resources=readaheadpolicies/status,verbs=patch
// +kubebuilder:rbac:groups=dbtune.io,resources=nodeioprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile sums one policy up across nodes and writes its status when it changed.
func (r *PolicyStatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	policy := &v1alpha1.ReadAheadPolicy{}
	if err := r.Get(ctx, req.NamespacedName, policy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !policy.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.List(ctx, nodes); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to list Nodes: %w", err)
	}
	profiles := &v1alpha1.NodeIOProfileList{}
	if err := r.List(ctx, profiles); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to list NodeIOProfiles: %w", err)
	}
	status := summarizePolicy(policy, nodes.Items, profiles.Items).status(policy, metav1.NewTime(time.Now()))
	if equality.Semantic.DeepEqual(policy.Status, status) {
		return ctrl.Result{}, nil
	}
	before := policy.DeepCopy()
	policy.Status = status
	// A merge patch of the whole status, as for ScratchVolumes: this reconcile computed all of it.
	if err := r.Status().Patch(ctx, policy, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to update the status of ReadAheadPolicy %s: %w", policy.Name, err)
	}
	log.FromContext(ctx).Info("Updated ReadAheadPolicy status", "readaheadpolicy", policy.Name,
		"matched", status.NodesMatched, "applied", status.NodesApplied, "degraded", status.NodesDegraded)
	return ctrl.Result{}, nil
}

func (r *PolicyStatusReconciler) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &v1alpha1.ReadAheadPolicyList{}
	if err := r.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "Failed to list ReadAheadPolicies")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return reqs
}

// readAheadChanged passes NodeIOProfile updates that change what the policies are summed up
// from, and not the probe's results.
func readAheadChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*v1alpha1.NodeIOProfile)
		after, ok2 := e.ObjectNew.(*v1alpha1.NodeIOProfile)
		if !ok1 || !ok2 {
			return true
		}
		return !equality.Semantic.DeepEqual(before.Status.ReadAhead, after.Status.ReadAhead) ||
			!equality.Semantic.DeepEqual(
				meta.FindStatusCondition(before.Status.Conditions, v1alpha1.ConditionReadAheadApplied),
				meta.FindStatusCondition(after.Status.Conditions, v1alpha1.ConditionReadAheadApplied))
	}}
}
