package controllers

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestStaleWriteInABatchIsNoError reconciles a selector over a batch of ordinary StatefulSets,
// one of which another writer changes between the read and the write (a conflict, or a JSON
// patch whose resourceVersion test fails), or deletes: the reconcile must end in a quiet retry,
// not an error, which controller-runtime would log with a stack trace as "Reconciler error".
func TestStaleWriteInABatchIsNoError(t *testing.T) {
	stsGVR := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"a conflict", apierrors.NewConflict(stsGVR, "db-2", fmt.Errorf("the object has been modified"))},
		{"a failed resourceVersion test", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: "the server rejected our request due to an error in our request"}}},
		{"deleted meanwhile", apierrors.NewNotFound(stsGVR, "db-2")},
		// A server-side apply to a StatefulSet that is gone tries to create it from our few fields.
		{"deleted before the apply", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "db-2", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sv := testenv.SelectorScratchVolume("tmp", nil)
			sv.Finalizers = []string{v1alpha1.ScratchVolumeFinalizer}
			objs := []client.Object{&sv}
			for i := range 3 {
				sts := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
				sts.Name, sts.UID = fmt.Sprintf("db-%d", i+1), types.UID(fmt.Sprintf("uid-%d", i+1))
				sts.Labels = map[string]string{"tier": "db"}
				objs = append(objs, sts)
			}
			c := withFieldIndexes(fake.NewClientBuilder().WithScheme(schemeWithAPI(t)).WithObjects(objs...).
				WithStatusSubresource(&v1alpha1.ScratchVolume{})).
				WithInterceptorFuncs(interceptor.Funcs{
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
						if _, ok := obj.(*appsv1.StatefulSet); !ok {
							return c.Patch(ctx, obj, p, opts...)
						}
						if obj.GetName() == "db-2" {
							if tc.name == "deleted before the apply" {
								if err := c.Delete(ctx, obj); err != nil {
									return err
								}
							}
							return tc.err
						}
						return nil // the write went through; the fake client has no server-side apply
					},
				}).Build()
			r := &ScratchVolumeReconciler{Client: c, APIReader: c, Recorder: &eventCapture{}, Informers: cachedIn(t, nil, objs...)}
			result, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&sv)})
			if err != nil {
				t.Fatalf("Reconcile returned %v, which controller-runtime logs with a stack trace; want a quiet retry", err)
			}
			if result.RequeueAfter <= 0 {
				t.Errorf("Reconcile returned %+v, want a retry", result)
			}
		})
	}
}
