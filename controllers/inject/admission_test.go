package inject_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

func limitRange(name string, items ...corev1.LimitRangeItem) corev1.LimitRange {
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resourceQ(pairs[i+1])
	}
	return out
}

func quota(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) corev1.ResourceQuota {
	return corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}

// ratioRules is the namespace of the outage the init container once caused: limits at most 4 times
// the request for CPU and 2 times for memory, with defaults that fill a missing limit.
var ratioRules = inject.Namespace{LimitRanges: []corev1.LimitRange{limitRange("ratios", corev1.LimitRangeItem{
	Type:                 corev1.LimitTypeContainer,
	Default:              list("cpu", "1", "memory", "1Gi"),
	DefaultRequest:       list("cpu", "100m", "memory", "256Mi"),
	MaxLimitRequestRatio: list("cpu", "4", "memory", "2"),
})}}

// TestInitContainerResources checks what the init container asks for under the namespace's rules:
// equal requests and limits of its own small needs, never above the database container's request,
// within every LimitRange's bounds.
func TestInitContainerResources(t *testing.T) {
	tests := []struct {
		name  string
		sts   *appsv1.StatefulSet
		rules inject.Namespace
		want  corev1.ResourceList // both the request and the limit
	}{
		{"no rules", mysqlSTS(), inject.Namespace{}, list("cpu", "50m", "memory", "32Mi")},
		{"limit-to-request ratios", mysqlSTS(), ratioRules, list("cpu", "50m", "memory", "32Mi")},
		{"minimum and maximum", mysqlSTS(), inject.Namespace{LimitRanges: []corev1.LimitRange{
			limitRange("min", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: list("memory", "64Mi")}),
			limitRange("max", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: list("cpu", "20m", "memory", "8Gi")}),
			limitRange("pods", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: list("memory", "1Gi")}),
		}}, list("cpu", "20m", "memory", "64Mi")},
		{"a bound on another resource is set too", mysqlSTS(), inject.Namespace{LimitRanges: []corev1.LimitRange{
			limitRange("disk", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: list("ephemeral-storage", "1Gi")}),
		}}, list("cpu", "50m", "memory", "32Mi", "ephemeral-storage", "1Gi")},
		{"a small database container", withSTS(mysqlSTS(), dbMemory("16Mi", "4Gi")), inject.Namespace{}, list("cpu", "50m", "memory", "16Mi")},
		{"the pod's request bounds it", withSTS(mysqlSTS(), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
			s.Spec.Template.Spec.Resources = &corev1.ResourceRequirements{Requests: list("cpu", "10m", "memory", "3Gi"), Limits: list("memory", "3Gi")}
		}), inject.Namespace{}, list("cpu", "10m", "memory", "32Mi")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := inject.NewPlan(scratchVolume(), tt.sts, tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Init.Resources
			if diff := cmp.Diff(tt.want, got.Requests, quantityEqual); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got.Limits, quantityEqual); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInitContainerKeptWhileAdmitted checks that an init container the StatefulSet carries keeps
// its resources while the namespace admits them (an upgrade of the operator must not roll the
// database), and gets new ones once a rule would refuse them.
func TestInitContainerKeptWhileAdmitted(t *testing.T) {
	old := corev1.ResourceRequirements{Requests: list("cpu", "10m", "memory", "16Mi"), Limits: list("memory", "64Mi")}
	carrying := func() *appsv1.StatefulSet {
		sts := injected(mysqlSTS(), plan(t, scratchVolume(), mysqlSTS()))
		for i := range sts.Spec.Template.Spec.InitContainers {
			if sts.Spec.Template.Spec.InitContainers[i].Name == scratchVolume().InitContainerName() {
				sts.Spec.Template.Spec.InitContainers[i].Resources = old
			}
		}
		return sts
	}
	tests := []struct {
		name  string
		rules inject.Namespace
		kept  bool
	}{
		{"no rules", inject.Namespace{}, true},
		{"a quota on requests only", inject.Namespace{Quotas: []corev1.ResourceQuota{quota("q", list("requests.memory", "100Gi"), nil)}}, true},
		{"limit-to-request ratios", ratioRules, false},
		{"a quota on CPU limits", inject.Namespace{Quotas: []corev1.ResourceQuota{quota("q", list("limits.cpu", "100"), nil)}}, false},
		{"a quota on CPU limits that counts other pods", inject.Namespace{Quotas: []corev1.ResourceQuota{
			quota("q", list("limits.cpu", "100"), nil, corev1.ResourceQuotaScopeBestEffort)}}, true},
		{"a larger minimum", inject.Namespace{LimitRanges: []corev1.LimitRange{
			limitRange("min", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: list("memory", "32Mi")})}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := inject.NewPlan(scratchVolume(), carrying(), tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			kept := cmp.Equal(p.Init.Resources, old, quantityEqual)
			if kept != tt.kept {
				t.Errorf("kept the carried resources = %v, want %v (planned %v)", kept, tt.kept, p.Init.Resources)
			}
		})
	}
}

// TestReserveWithinTheNamespaceRules checks that a Reserve the namespace cannot admit is refused
// before anything is written, naming the rule and the numbers, and that the rest goes ahead.
func TestReserveWithinTheNamespaceRules(t *testing.T) {
	three := func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](3) }
	reserve := scratchVolume(accounting(v1alpha1.MemoryReserve))
	tests := []struct {
		name   string
		sts    *appsv1.StatefulSet
		rules  inject.Namespace
		reason string
		words  []string
	}{
		{"quota with room", withSTS(mysqlSTS(), three), inject.Namespace{Quotas: []corev1.ResourceQuota{
			quota("mem", list("requests.memory", "8Gi", "limits.memory", "20Gi"), list("requests.memory", "6Gi", "limits.memory", "12Gi"))}}, "", nil},
		{"quota on requests without room", withSTS(mysqlSTS(), three), inject.Namespace{Quotas: []corev1.ResourceQuota{
			quota("mem", list("requests.memory", "8Gi"), list("requests.memory", "7Gi"))}},
			v1alpha1.ReasonResourceQuota, []string{"ResourceQuota mem", "8Gi of requests.memory", "7Gi are in use", "512Mi to each of 3 pods (1536Mi)", "512Mi more"}},
		{"quota on limits without room", withSTS(mysqlSTS(), three), inject.Namespace{Quotas: []corev1.ResourceQuota{
			quota("mem", list("limits.memory", "13Gi"), list("limits.memory", "12Gi"))}},
			v1alpha1.ReasonResourceQuota, []string{"limits.memory"}},
		{"quota for other pods", withSTS(mysqlSTS(), three), inject.Namespace{Quotas: []corev1.ResourceQuota{
			quota("batch", list("requests.memory", "1Gi"), list("requests.memory", "1Gi"), corev1.ResourceQuotaScopeTerminating)}}, "", nil},
		{"quota for the pods' priority class", withSTS(mysqlSTS(), three, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.PriorityClassName = "databases"
		}), inject.Namespace{Quotas: []corev1.ResourceQuota{func() corev1.ResourceQuota {
			q := quota("prio", list("memory", "1Gi"), list("memory", "1Gi"))
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
				ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"databases"}}}}
			return q
		}()}}, v1alpha1.ReasonResourceQuota, []string{"ResourceQuota prio"}},
		{"container maximum", mysqlSTS(), inject.Namespace{LimitRanges: []corev1.LimitRange{
			limitRange("caps", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: list("memory", "4Gi")})}},
			v1alpha1.ReasonLimitRange, []string{"LimitRange caps", "container's memory limit at 4Gi", "container db's to 4608Mi"}},
		{"pod maximum", withSTS(mysqlSTS(), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[1].Resources.Limits = list("memory", "128Mi")
		}), inject.Namespace{LimitRanges: []corev1.LimitRange{
			limitRange("pods", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: list("memory", "4700Mi")})}},
			v1alpha1.ReasonLimitRange, []string{"LimitRange pods", "pod's memory limit at 4700Mi", "raise the pod's to 4736Mi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inject.NewPlan(reserve, tt.sts, tt.rules)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var p *inject.Problem
			if !errors.As(err, &p) || p.Reason != tt.reason {
				t.Fatalf("got %v, want a %s problem", err, tt.reason)
			}
			for _, w := range tt.words {
				if !strings.Contains(p.Message, w) {
					t.Errorf("the message does not say %q: %s", w, p.Message)
				}
			}
		})
	}
	// Validate changes no resources of the database: nothing to refuse.
	full := inject.Namespace{Quotas: []corev1.ResourceQuota{quota("mem", list("requests.memory", "8Gi"), list("requests.memory", "8Gi"))}}
	if _, err := inject.NewPlan(scratchVolume(), mysqlSTS(), full); err != nil {
		t.Errorf("Validate refused under a full quota: %v", err)
	}
}

// TestNamespaceStamp checks that the stamp moves with what planning reads, and not with the use
// of a quota.
func TestNamespaceStamp(t *testing.T) {
	q := quota("q", list("limits.cpu", "10"), list("limits.cpu", "1"))
	base := inject.Namespace{LimitRanges: ratioRules.LimitRanges, Quotas: []corev1.ResourceQuota{q}}
	used := q.DeepCopy()
	used.Status.Used = list("limits.cpu", "9")
	hard := q.DeepCopy()
	hard.Spec.Hard = list("limits.cpu", "20")
	if empty := (inject.Namespace{}).Stamp(); empty != "" || base.Stamp() == "" {
		t.Errorf("stamps: empty %q, rules %q", empty, base.Stamp())
	}
	if s := (inject.Namespace{LimitRanges: base.LimitRanges, Quotas: []corev1.ResourceQuota{*used}}).Stamp(); s != base.Stamp() {
		t.Errorf("the stamp moved with the quota's use")
	}
	if s := (inject.Namespace{LimitRanges: base.LimitRanges, Quotas: []corev1.ResourceQuota{*hard}}).Stamp(); s == base.Stamp() {
		t.Errorf("the stamp did not move with the quota's limit")
	}
	if s := (inject.Namespace{Quotas: base.Quotas}).Stamp(); s == base.Stamp() {
		t.Errorf("the stamp did not move with the LimitRanges")
	}
}

// TestValidateCountsTheDefaultLimit checks that a container without a memory limit is held to the
// limit a LimitRange gives it by default: the pod runs with that limit.
func TestValidateCountsTheDefaultLimit(t *testing.T) {
	sts := withSTS(mysqlSTS(), dbMemory("", ""))
	defaults := inject.Namespace{LimitRanges: []corev1.LimitRange{limitRange("defaults", corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer, Default: list("memory", "1Gi"), DefaultRequest: list("memory", "512Mi")})}}
	_, err := inject.NewPlan(scratchVolume(), sts, defaults)
	var p *inject.Problem
	if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonMemoryBudget || !strings.Contains(p.Message, "container db has a 1Gi memory limit") {
		t.Errorf("got %v, want MemoryLimitTooLow against the LimitRange's 1Gi default", err)
	}
	if _, err := inject.NewPlan(scratchVolume(), sts, inject.Namespace{}); err != nil {
		t.Errorf("without the LimitRange the container has no limit and the volume goes in with a note: %v", err)
	}
}
