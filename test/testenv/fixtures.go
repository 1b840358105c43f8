package testenv

// Object builders that the test suites share.

import (
	"maps"
	"strings"

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

// StatefulSetOption changes one thing about a StatefulSet that StatefulSet or BitnamiStatefulSet
// builds; the container options change the first container, the database's.
type StatefulSetOption func(*appsv1.StatefulSet)

// StatefulSet is a database StatefulSet as a user writes it, changed by opts: one replica of
// container "db" running mariadb:11.4 with a 2Gi memory limit, its data directory /var/lib/mysql on
// the 1Gi claim "data", its pods labeled app.kubernetes.io/name=<name> and governed by Service
// <name>.
func StatefulSet(ns, name string, opts ...StatefulSetOption) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/name": name}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "db",
					Image: "mariadb:11.4",
					Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/mysql"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{dataClaim("1Gi")},
		},
	}
	for _, o := range opts {
		o(sts)
	}
	return sts
}

// BitnamiStatefulSet is the primary StatefulSet the Bitnami mysql or mariadb chart renders for
// release name (db is "mysql" or "mariadb"), changed by opts: the image's entrypoint and run.sh
// start the server, with --defaults-file=/opt/bitnami/<db>/conf/my.cnf from the chart's ConfigMap;
// the claim "data" at /bitnami/<db> holds the data directory data/; one emptyDir gives the writable
// directories of a read-only root filesystem, among them /opt/bitnami/<db>/tmp (tmpdir, socket and
// pid file in the chart's my.cnf); the server runs as 1001. The chart's extraFlags value, when set,
// reaches the container as <DB>_EXTRA_FLAGS, which WithEnv adds.
func BitnamiStatefulSet(ns, name, db, image string, opts ...StatefulSetOption) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/instance": name, "app.kubernetes.io/name": db,
		"app.kubernetes.io/component": "primary"}
	upper := strings.ToUpper(db)
	emptyDir := func(mountPath, subPath string) corev1.VolumeMount {
		return corev1.VolumeMount{Name: "empty-dir", MountPath: mountPath, SubPath: subPath}
	}
	container := corev1.Container{
		Name:            db,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsGroup:               ptr.To[int64](1001),
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](1001),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Env: []corev1.EnvVar{
			{Name: "BITNAMI_DEBUG", Value: "false"},
			{Name: upper + "_ROOT_PASSWORD_FILE", Value: "/opt/bitnami/" + db + "/secrets/" + db + "-root-password"},
			{Name: upper + "_ENABLE_SSL", Value: "no"},
			{Name: upper + "_PORT_NUMBER", Value: "3306"},
		},
		Ports: []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("375m"), corev1.ResourceMemory: resource.MustParse("384Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: "/bitnami/" + db},
			emptyDir("/tmp", "tmp-dir"),
			emptyDir("/opt/bitnami/"+db+"/conf", "app-conf-dir"),
			emptyDir("/opt/bitnami/"+db+"/tmp", "app-tmp-dir"),
			emptyDir("/opt/bitnami/"+db+"/logs", "app-logs-dir"),
			{Name: "config", MountPath: "/opt/bitnami/" + db + "/conf/my.cnf", SubPath: "my.cnf"},
			{Name: db + "-credentials", MountPath: "/opt/bitnami/" + db + "/secrets/"},
		},
	}
	claim := dataClaim("8Gi")
	claim.Labels = map[string]string{"app.kubernetes.io/instance": name}
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](1),
			ServiceName:         name + "-headless",
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels,
					Annotations: map[string]string{"checksum/configuration": "5c7b9e0f3d1a"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: name,
					SecurityContext:    &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1001), FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeAlways)},
					InitContainers: []corev1.Container{{
						Name: "preserve-logs-symlinks", Image: image, SecurityContext: container.SecurityContext.DeepCopy(),
						Command:      []string{"/bin/bash"},
						Args:         []string{"-ec", "if [[ -d /opt/bitnami/" + db + "/logs ]]; then cp -r /opt/bitnami/" + db + "/logs /emptydir/app-logs-dir; fi"},
						VolumeMounts: []corev1.VolumeMount{{Name: "empty-dir", MountPath: "/emptydir"}},
					}},
					Containers: []corev1.Container{container},
					Volumes: []corev1.Volume{
						{Name: "empty-dir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
						{Name: db + "-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: name, Items: []corev1.KeyToPath{{Key: db + "-root-password", Path: db + "-root-password"}}}}},
					},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
		},
	}
	for _, o := range opts {
		o(sts)
	}
	return sts
}

// dataClaim is the claim template "data": one ReadWriteOnce volume of size.
func dataClaim(size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			},
		},
	}
}

// WithLabels adds labels to the StatefulSet's own labels, not to its pods'.
func WithLabels(labels map[string]string) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) {
		own := maps.Clone(sts.Labels)
		if own == nil {
			own = map[string]string{}
		}
		maps.Copy(own, labels)
		sts.Labels = own
	}
}

// WithReplicas sets the number of replicas.
func WithReplicas(n int32) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) { sts.Spec.Replicas = ptr.To(n) }
}

// WithContainerName renames the database container.
func WithContainerName(name string) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) { sts.Spec.Template.Spec.Containers[0].Name = name }
}

// WithImage sets the database container's image.
func WithImage(image string) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) { sts.Spec.Template.Spec.Containers[0].Image = image }
}

// WithArgs sets the database container's args.
func WithArgs(args ...string) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) { sts.Spec.Template.Spec.Containers[0].Args = args }
}

// WithEnv adds variables to the database container's environment, after those it has.
func WithEnv(env ...corev1.EnvVar) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) {
		c := &sts.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, env...)
	}
}

// WithMemoryLimit sets the database container's memory limit.
func WithMemoryLimit(limit string) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) {
		c := &sts.Spec.Template.Spec.Containers[0]
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse(limit)
	}
}

// WithSidecar adds a container after those the pods have.
func WithSidecar(c corev1.Container) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) {
		sts.Spec.Template.Spec.Containers = append(sts.Spec.Template.Spec.Containers, c)
	}
}

// WithDataMount mounts the claim "data" at path in the database container.
func WithDataMount(path string) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) {
		for i, m := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
			if m.Name == "data" {
				sts.Spec.Template.Spec.Containers[0].VolumeMounts[i].MountPath = path
			}
		}
	}
}

// WithClaimSize sets the size of the claim "data".
func WithClaimSize(size string) StatefulSetOption {
	return func(sts *appsv1.StatefulSet) {
		for i := range sts.Spec.VolumeClaimTemplates {
			if pvc := &sts.Spec.VolumeClaimTemplates[i]; pvc.Name == "data" {
				pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
			}
		}
	}
}

// WithoutData removes the claim templates and the database container's mounts: its data lives in
// the container's own filesystem.
func WithoutData() StatefulSetOption {
	return func(sts *appsv1.StatefulSet) {
		sts.Spec.VolumeClaimTemplates = nil
		sts.Spec.Template.Spec.Containers[0].VolumeMounts = nil
	}
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
