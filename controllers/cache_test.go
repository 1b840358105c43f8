package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrimStatefulSet(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}}
	sts.Spec.Template.Annotations = map[string]string{"scratch.dbtune.io/tmp": "abc"}
	sts.Spec.Template.Spec.Containers = []corev1.Container{{Name: "mariadb", Image: "mariadb:11.4",
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/mysql"}}}}
	sts.Annotations = map[string]string{lastAppliedAnnotation: `{"kind":"StatefulSet"}`, "team": "db"}
	sts.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
	}}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 3, UpdatedReplicas: 2, CurrentRevision: "r1", UpdateRevision: "r2",
		Conditions: []appsv1.StatefulSetCondition{{Type: "Unrelated", Status: corev1.ConditionTrue}}}
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	template, status := *sts.Spec.Template.DeepCopy(), *sts.Status.DeepCopy()

	out, err := trimStatefulSet(sts)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*appsv1.StatefulSet)
	if diff := cmp.Diff(template, got.Spec.Template); diff != "" {
		t.Errorf("the pod template changed (-want +got):\n%s", diff)
	}
	status.Conditions = nil
	if diff := cmp.Diff(status, got.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"team": "db"}, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	wantClaims := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	if diff := cmp.Diff(wantClaims, got.Spec.VolumeClaimTemplates); diff != "" {
		t.Errorf("volumeClaimTemplates (-want +got):\n%s", diff)
	}
	if got.Spec.Selector != nil {
		t.Errorf("selector kept: %v", got.Spec.Selector)
	}
	if got.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", got.ManagedFields)
	}
	if cm := (&corev1.ConfigMap{Data: map[string]string{"k": "v"}}); mustTrim(t, cm) != cm {
		t.Error("another kind was not passed through")
	}
}

func mustTrim(t *testing.T, obj any) any {
	t.Helper()
	out, err := trimStatefulSet(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
