package probectl

import (
	"context"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// ProfileReconciler serves on-demand probe requests: when the node's NodeIOProfile carries a
// ProbeRequestedAnnotation value that differs from its ProbeServedAnnotation, it asks the Runner
// for one run, which records the value as served once its result is written. It also has a
// deleted profile written again.
type ProfileReconciler struct {
	client   client.Reader
	nodeName string
	runner   *Runner
	log      logr.Logger
}

// Reconcile looks at the node's NodeIOProfile and asks for what it needs.
func (r *ProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &v1alpha1.NodeIOProfile{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.log.Info("Found the NodeIOProfile deleted; writing it again", "nodeIOProfile", req.Name)
			r.runner.profile.rewrite()
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	requested := p.Annotations[v1alpha1.ProbeRequestedAnnotation]
	if requested == "" || requested == p.Annotations[v1alpha1.ProbeServedAnnotation] {
		return ctrl.Result{}, nil
	}
	r.log.V(1).Info("Found a probe request on the NodeIOProfile", "nodeIOProfile", p.Name, "request", requested)
	r.runner.requestOnDemand(requested)
	return ctrl.Result{}, nil
}

// SetupWithManager watches this node's NodeIOProfile only, and of its updates only those that
// change annotations: the agent's own status writes need no reconcile.
func (r *ProfileReconciler) SetupWithManager(mgr ctrl.Manager) error {
	thisNode := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == r.nodeName })
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.NodeIOProfile{}, builder.WithPredicates(thisNode, predicate.AnnotationChangedPredicate{})).
		Named("nodeioprofile-agent").
		Complete(r)
}
