package controllers

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
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

// fullStatefulSet is a StatefulSet with everything trimPodSpec drops set, and resources written in
// several ways: the plans made from it must not change when the cache trims it.
func fullStatefulSet(image string, args []string, env []corev1.EnvVar, limit string) *appsv1.StatefulSet {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(3306)}}, PeriodSeconds: 10}
	db := corev1.Container{
		Name: "db", Image: image, Args: args, Env: env,
		Ports:           []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
		LivenessProbe:   probe,
		ReadinessProbe:  probe.DeepCopy(),
		StartupProbe:    probe.DeepCopy(),
		Lifecycle:       &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}},
		ResizePolicy:    []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}},
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](999)},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse(limit)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/mysql"}},
	}
	sidecar := corev1.Container{
		Name: "exporter", Image: "prom/mysqld-exporter:v0.15.1", Ports: []corev1.ContainerPort{{ContainerPort: 9104}},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "u1", ResourceVersion: "7", Labels: map[string]string{"tier": "db"}}}
	sts.Spec.Template.Labels = map[string]string{"app": "db"}
	sts.Spec.Template.Spec = corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup", Image: image, Command: []string{"true"}, StartupProbe: probe.DeepCopy()}},
		Containers:     []corev1.Container{db, sidecar},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		}}}},
		Tolerations:      []corev1.Toleration{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
		NodeSelector:     map[string]string{"pool": "db"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
		DNSConfig:        &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}},
		ReadinessGates:   []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}},
		Volumes:          []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-conf"}}}}},
	}
	sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	return sts
}

func selectorScratchVolume(name string, change func(*v1alpha1.ScratchVolumeSpec)) v1alpha1.ScratchVolume {
	sv := v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Generation: 1}}
	sv.Spec.Target.Selector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "db"}}
	sv.Spec.Size = resource.MustParse("256Mi")
	sv.Spec.Purpose = v1alpha1.PurposeMySQLTmpdir
	if change != nil {
		change(&sv.Spec)
	}
	return sv
}

// TestTrimmedStatefulSetsPlanTheSame plans each case on the whole StatefulSet and on the cache's
// trimmed copy, before and after the injection: what is dropped must never change a decision.
func TestTrimmedStatefulSetsPlanTheSame(t *testing.T) {
	mariadbFlags := []corev1.EnvVar{{Name: "MARIADB_EXTRA_FLAGS", Value: "--max-connections=500"}}
	cases := []struct {
		name string
		sts  *appsv1.StatefulSet
		svs  []v1alpha1.ScratchVolume
	}{
		{"MariaDB, defaults", fullStatefulSet("mariadb:11.4", []string{"--innodb-buffer-pool-size=512M"}, nil, "2Gi"), []v1alpha1.ScratchVolume{selectorScratchVolume("a", nil)}},
		{"MySQL 8.4, Args", fullStatefulSet("mysql:8.4", nil, nil, "2048Mi"), []v1alpha1.ScratchVolume{selectorScratchVolume("a", func(s *v1alpha1.ScratchVolumeSpec) {
			s.MySQL = &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionArgs}
		})}},
		{"Bitnami, ExtraFlags, Reserve", fullStatefulSet("bitnami/mariadb:11.4", nil, mariadbFlags, "2Gi"), []v1alpha1.ScratchVolume{selectorScratchVolume("a", func(s *v1alpha1.ScratchVolumeSpec) {
			s.MySQL = &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionExtraFlags}
			s.Memory = v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryReserve}
		})}},
		{"limit too small", fullStatefulSet("mariadb:11.4", nil, nil, "200Mi"), []v1alpha1.ScratchVolume{selectorScratchVolume("a", nil)}},
		{"two ScratchVolumes", fullStatefulSet("mysql:8.0.39", nil, nil, "4Gi"), []v1alpha1.ScratchVolume{selectorScratchVolume("a", nil), selectorScratchVolume("b", nil)}},
	}
	sameQuantity := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() })
	opts := []cmp.Option{sameQuantity, cmp.Exporter(func(reflect.Type) bool { return true }), cmpopts.IgnoreFields(outcome{}, "sv")}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			full := c.sts
			for round := range 2 {
				trimmed := mustTrim(t, full.DeepCopy()).(*appsv1.StatefulSet)
				want, got := planTarget(c.svs, full), planTarget(c.svs, trimmed)
				if diff := cmp.Diff(want, got, opts...); diff != "" {
					t.Fatalf("round %d: the trimmed StatefulSet was planned differently (-whole +trimmed):\n%s", round, diff)
				}
				if round == 1 && !want.settled() {
					t.Errorf("the injected StatefulSet is not settled: desired %+v, observed %+v, pending %v", want.desired, want.observed, want.pending)
				}
				// The next round plans the StatefulSet as the injection leaves it.
				full = full.DeepCopy()
				full.Spec.Template = inject.Inject(full.Spec.Template, winningPlans(want.outcomes))
			}
		})
	}
}

// TestTrimPodSpec checks what the cache drops from a pod template and that equal resource lists
// are held once.
func TestTrimPodSpec(t *testing.T) {
	a := mustTrim(t, fullStatefulSet("mariadb:11.4", nil, nil, "2Gi")).(*appsv1.StatefulSet)
	b := mustTrim(t, fullStatefulSet("mysql:8.4", nil, nil, "2Gi")).(*appsv1.StatefulSet)
	c := mustTrim(t, fullStatefulSet("mysql:8.4", nil, nil, "3Gi")).(*appsv1.StatefulSet)
	pod := &a.Spec.Template.Spec
	if pod.Affinity != nil || pod.Tolerations != nil || pod.NodeSelector != nil || pod.ImagePullSecrets != nil || pod.DNSConfig != nil || pod.ReadinessGates != nil {
		t.Errorf("scheduling and pull fields kept: %+v", pod)
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		if c.Ports != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil || c.Lifecycle != nil || c.ResizePolicy != nil {
			t.Errorf("container %s keeps ports, probes or hooks: %+v", c.Name, c)
		}
	}
	db := pod.Containers[0]
	if db.SecurityContext == nil || db.Image != "mariadb:11.4" || len(db.VolumeMounts) != 1 || len(pod.Volumes) != 1 {
		t.Errorf("what planning reads was dropped: %+v, volumes %v", db, pod.Volumes)
	}
	same := func(x, y corev1.ResourceList) bool {
		return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer()
	}
	if !same(db.Resources.Limits, b.Spec.Template.Spec.Containers[0].Resources.Limits) {
		t.Error("two equal limit lists are held twice")
	}
	if same(db.Resources.Limits, c.Spec.Template.Spec.Containers[0].Resources.Limits) {
		t.Error("a 2Gi and a 3Gi limit list are held as one")
	}
	if got := c.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; got.String() != "3Gi" {
		t.Errorf("memory limit %s after sharing, want 3Gi", got.String())
	}
}
