package controllers_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// mariadbStatefulSet is the suite's usual target, labeled tier=db: two replicas of a MariaDB
// container with a 2Gi limit and its data on a 10Gi claim, and a metrics sidecar.
func mariadbStatefulSet(ns, name string) *appsv1.StatefulSet {
	return testenv.StatefulSet(ns, name, testenv.WithLabels(map[string]string{"tier": "db"}), testenv.WithReplicas(2),
		testenv.WithContainerName("mariadb"), testenv.WithArgs("--innodb-buffer-pool-size=512M"), testenv.WithClaimSize("10Gi"),
		testenv.WithSidecar(corev1.Container{Name: "metrics", Image: "prom/mysqld-exporter:v0.15.1"}))
}

func scratchVolume(ns, name, target string) *v1alpha1.ScratchVolume {
	return &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target: v1alpha1.ScratchTarget{Name: target},
			Size:   resource.MustParse("512Mi"),
		},
	}
}

func create(t *testing.T, e *testenv.Env, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := e.Client.Create(ctxFor(t), o); err != nil {
			t.Fatalf("failed to create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func getSTS(t *testing.T, e *testenv.Env, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	return testenv.Get[appsv1.StatefulSet](t, e.Client, ns, name)
}

func getSV(t *testing.T, e *testenv.Env, ns, name string) *v1alpha1.ScratchVolume {
	t.Helper()
	return testenv.Get[v1alpha1.ScratchVolume](t, e.Client, ns, name)
}

// conditionIs returns "" when the ScratchVolume's condition has the status and reason, else why not.
func conditionIs(t *testing.T, e *testenv.Env, ns, name, typ string, status metav1.ConditionStatus, reason string) string {
	sv := getSV(t, e, ns, name)
	c := meta.FindStatusCondition(sv.Status.Conditions, typ)
	if c == nil {
		return fmt.Sprintf("%s has no %s condition yet", name, typ)
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Sprintf("%s condition %s=%s reason=%s message=%q, want %s/%s", name, typ, c.Status, c.Reason, c.Message, status, reason)
	}
	if c.ObservedGeneration != sv.Generation {
		return fmt.Sprintf("%s condition %s describes generation %d, not %d", name, typ, c.ObservedGeneration, sv.Generation)
	}
	return ""
}

func condition(t *testing.T, e *testenv.Env, ns, name, typ string) metav1.Condition {
	sv := getSV(t, e, ns, name)
	if c := meta.FindStatusCondition(sv.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func findVolume(pod *corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func findMount(c *corev1.Container, mountPath string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == mountPath {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// updateSV applies mutate to the latest ScratchVolume "tmp" (every test here names its one that way)
// and writes it.
func updateSV(t *testing.T, e *testenv.Env, ns string, mutate func(*v1alpha1.ScratchVolume)) {
	t.Helper()
	testenv.Update(t, e.Client, ns, "tmp", mutate)
}

// updateSTS is updateSV for a StatefulSet, which the controller may be writing too.
func updateSTS(t *testing.T, e *testenv.Env, ns, name string, mutate func(*appsv1.StatefulSet)) {
	t.Helper()
	testenv.Update(t, e.Client, ns, name, mutate)
}
