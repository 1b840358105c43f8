package testenv

// Object builders that the unit and envtest suites share.

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// FullStatefulSet is a StatefulSet with much of what a pod template may hold, half-way through a
// partitioned rollout.
func FullStatefulSet(image string, args []string, env []corev1.EnvVar, limit string) *appsv1.StatefulSet {
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
	sts.Spec.Replicas = ptr.To[int32](3)
	sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}}
	sts.Generation = 4
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 4, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 1,
		CurrentRevision: "db-1", UpdateRevision: "db-2"}
	return sts
}

// SelectorScratchVolume is a ScratchVolume of namespace "ns" selecting tier=db for a 256Mi
// MySQLTmpdir volume, its spec changed by change when it is not nil.
func SelectorScratchVolume(name string, change func(*v1alpha1.ScratchVolumeSpec)) v1alpha1.ScratchVolume {
	sv := v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Generation: 1}}
	sv.Spec.Target.Selector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "db"}}
	sv.Spec.Size = resource.MustParse("256Mi")
	sv.Spec.Purpose = v1alpha1.PurposeMySQLTmpdir
	if change != nil {
		change(&sv.Spec)
	}
	return sv
}
