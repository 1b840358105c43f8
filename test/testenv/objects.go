package testenv

// Reading and writing objects from a test, the same way in every suite.

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// requestTimeout bounds each read and write of a test.
const requestTimeout = time.Minute

// Object is a pointer to a Kubernetes object type T, such as *appsv1.StatefulSet.
type Object[T any] interface {
	*T
	client.Object
}

// Get reads the object named name in namespace ns, and fails t when it cannot:
// Get[appsv1.StatefulSet](t, c, ns, "db").
func Get[T any, P Object[T]](t testing.TB, c client.Reader, ns, name string) P {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	obj := P(new(T))
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("get %T %s/%s: %v", obj, ns, name, err)
	}
	return obj
}

// Update applies mutate to the latest copy of the object named name in namespace ns and writes it,
// again when someone else wrote the object meanwhile (a controller patching its status moves the
// resourceVersion), and fails t when it cannot.
func Update[T any, P Object[T]](t testing.TB, c client.Client, ns, name string, mutate func(P)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := P(new(T))
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		mutate(obj)
		return c.Update(ctx, obj)
	})
	if err != nil {
		t.Fatalf("update %T %s/%s: %v", P(new(T)), ns, name, err)
	}
}
