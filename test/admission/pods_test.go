package admission_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// policed is a namespace set up the way platform teams set one up: a LimitRange with defaults,
// bounds and limit-to-request ratios, and a ResourceQuota that tracks every request and limit of
// CPU and memory (so it demands them of every container). The API server applies both to every
// pod it creates there.
type policed struct {
	name  string
	rules inject.Namespace
}

func quantities(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// newPoliced sets up the policed namespace ns. The quota's status, which the quota controller
// would compute (envtest runs none), is written as it would be for an empty namespace.
func newPoliced(t testing.TB, c client.Client, ns string) *policed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:                 corev1.LimitTypeContainer,
		Default:              quantities("cpu", "1", "memory", "1Gi"),
		DefaultRequest:       quantities("cpu", "250m", "memory", "512Mi"),
		Min:                  quantities("cpu", "10m", "memory", "16Mi"),
		Max:                  quantities("memory", "12Gi"),
		MaxLimitRequestRatio: quantities("cpu", "4", "memory", "4"),
	}}}}
	hard := quantities("requests.cpu", "100", "requests.memory", "1Ti", "limits.cpu", "200", "limits.memory", "1Ti")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	for _, o := range []client.Object{lr, quota} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("failed to create %T: %v", o, err)
		}
	}
	quota.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: quantities("requests.cpu", "0", "requests.memory", "0", "limits.cpu", "0", "limits.memory", "0")}
	if err := c.Status().Update(ctx, quota); err != nil {
		t.Fatalf("failed to write the quota's status: %v", err)
	}
	return &policed{name: ns, rules: inject.Namespace{LimitRanges: []corev1.LimitRange{*lr}, Quotas: []corev1.ResourceQuota{*quota}}}
}

// podOf is the pod the StatefulSet controller would create from tmpl for sts, in namespace ns.
func podOf(sts *appsv1.StatefulSet, tmpl corev1.PodTemplateSpec, ns string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sts.Name + "-0", Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec: *tmpl.Spec.DeepCopy()}
	for _, claim := range sts.Spec.VolumeClaimTemplates {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name + "-" + sts.Name + "-0"}}})
	}
	return pod
}

// checkPodsAdmitted has the API server create, as dry runs in the policed namespace, the pod of the
// fixture as its owner wrote it and the pod of its template injected by sv as planned under the
// namespace's rules: where the database's own pod is admitted, the injected one must be, and a
// plan refused for the namespace's rules must be one whose pods the API server refuses.
func (c *checker) checkPodsAdmitted(t testing.TB, sv *v1alpha1.ScratchVolume, fx fixture) []string {
	t.Helper()
	if c.policed == nil {
		return nil
	}
	sts := fx.sts.DeepCopy()
	sts.Namespace = c.policed.name
	if err := create(c.e.Client, podOf(sts, sts.Spec.Template, c.policed.name)); err != nil {
		c.stats.podsOriginalRefused++
		return nil
	}
	p, err := inject.NewPlan(sv, sts, c.policed.rules)
	var problem *inject.Problem
	switch {
	case errors.As(err, &problem) && (problem.Reason == v1alpha1.ReasonLimitRange || problem.Reason == v1alpha1.ReasonResourceQuota):
		c.stats.podsPolicyRefusals++
		unruled, uerr := inject.NewPlan(sv, sts, inject.Namespace{})
		if uerr != nil {
			return nil
		}
		if err := create(c.e.Client, podOf(sts, inject.Inject(sts.Spec.Template, []*inject.Plan{unruled}), c.policed.name)); err == nil {
			return []string{fmt.Sprintf("the plan is refused as %s (%s), but the API server admits the injected pod", problem.Reason, problem.Message)}
		}
		return nil
	case err != nil:
		// Refused for a reason of the namespace's defaults (a default limit the volume does not
		// fit in): checkProblem has checked the reason of refusals like it.
		c.stats.podsOtherRefusals++
		return nil
	}
	if err := create(c.e.Client, podOf(sts, inject.Inject(sts.Spec.Template, []*inject.Plan{p}), c.policed.name)); err != nil {
		return []string{fmt.Sprintf("the namespace admits the database's own pod but refuses the injected one: %v\nplan: %s", err, planSummary(p))}
	}
	c.stats.podsAdmitted++
	return nil
}
