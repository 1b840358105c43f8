package main

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Labels the benchmark puts on what it creates.
const (
	// benchLabel marks every object of the benchmark, so its watches and cleanups see only those.
	benchLabel = "bench.dbtune.io/scale"
	// tierLabel on a StatefulSet is the smallest fleet size it belongs to: the fleet of size N is
	// every StatefulSet whose tier is at most N, so fleets grow and shrink by whole tiers.
	tierLabel = "bench.dbtune.io/tier"
	// selectedLabel is what the fleet's selector ScratchVolumes match, as a platform team would
	// label the StatefulSets it wants tuned.
	selectedLabel = "dbtune.io/tmpdir"
	// touchLabel is the unrelated label the steady-state phase changes.
	touchLabel = "bench.dbtune.io/touched"
	// fleetScratchVolume is the name of the selector ScratchVolume in every fleet namespace.
	fleetScratchVolume = "fleet-tmpdir"
	// scratchSize is every ScratchVolume's size: it fits the shapes' memory limits under the
	// default Validate accounting, so no StatefulSet is refused.
	scratchSize = "256Mi"
)

// shape is one kind of database StatefulSet found in the samples and tests.
type shape struct {
	name, image string
	// args are the server's flags; env its environment.
	args []string
	env  []corev1.EnvVar
	// dataPath is where the image keeps its data directory.
	dataPath string
	// sidecar is the second container.
	sidecar corev1.Container
}

// shapes rotate over the fleet: the official MariaDB and MySQL images, each with a sidecar, a
// persistent data volume from a volumeClaimTemplate and memory limits, as teams run them.
var shapes = []shape{
	{
		name: "mariadb", image: "mariadb:11.4", dataPath: "/var/lib/mysql",
		args: []string{"--innodb-buffer-pool-size=512M", "--binlog-format=ROW"},
		env:  []corev1.EnvVar{{Name: "MARIADB_RANDOM_ROOT_PASSWORD", Value: "1"}},
		sidecar: corev1.Container{
			Name: "metrics", Image: "prom/mysqld-exporter:v0.15.1",
			Ports:     []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9104}},
			Resources: limits("64Mi"),
		},
	},
	{
		name: "mysql", image: "mysql:8.4", dataPath: "/var/lib/mysql",
		args: []string{"--innodb-buffer-pool-size=512M", "--max-connections=500"},
		env: []corev1.EnvVar{{Name: "MYSQL_ROOT_PASSWORD", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "mysql-root"}, Key: "password"},
		}}},
		sidecar: corev1.Container{
			Name: "backup", Image: "percona/percona-xtrabackup:8.4",
			Command:      []string{"sleep", "infinity"},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/mysql", ReadOnly: true}},
			Resources:    limits("256Mi"),
		},
	},
	{
		name: "mysql80", image: "mysql:8.0.39", dataPath: "/var/lib/mysql",
		args: []string{"--innodb-buffer-pool-size=512M", "--binlog-expire-logs-seconds=86400"},
		env:  []corev1.EnvVar{{Name: "MYSQL_RANDOM_ROOT_PASSWORD", Value: "yes"}},
		sidecar: corev1.Container{
			Name: "logs", Image: "fluent/fluent-bit:3.1",
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/mysql", ReadOnly: true}},
			Resources:    limits("64Mi"),
		},
	},
}

func limits(memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}}
}

// statefulSetName is the name of the fleet's i-th StatefulSet.
func statefulSetName(i int) string { return fmt.Sprintf("db-%05d", i) }

// fleetNamespace is the namespace of the fleet's i-th StatefulSet among namespaces.
func fleetNamespace(i, namespaces int) string { return fmt.Sprintf("fleet-%02d", i%namespaces) }

// tierOf is the smallest of tiers (sorted ascending) that holds StatefulSet i.
func tierOf(i int, tiers []int) int {
	for _, t := range tiers {
		if i < t {
			return t
		}
	}
	return tiers[len(tiers)-1]
}

// statefulSet is the fleet's i-th StatefulSet, as its team wrote it (nothing the controller adds).
// Kept apart from testenv's builders: it builds a fleet of several shapes and tiers, one per index.
func statefulSet(i, namespaces, tier int, replicas int32) *appsv1.StatefulSet {
	s := shapes[i%len(shapes)]
	name := statefulSetName(i)
	podLabels := map[string]string{"app.kubernetes.io/name": s.name, "app.kubernetes.io/instance": name}
	labels := map[string]string{
		"app.kubernetes.io/name": s.name, "app.kubernetes.io/instance": name,
		selectedLabel: "ram", benchLabel: "fleet", tierLabel: strconv.Itoa(tier),
	}
	db := corev1.Container{
		Name: s.name, Image: s.image, Args: s.args, Env: s.env,
		Ports: []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: s.dataPath}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("mysql")},
		}, PeriodSeconds: 10},
	}
	sidecar := *s.sidecar.DeepCopy()
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleetNamespace(i, namespaces), Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: name,
			Replicas:    ptr.To(replicas),
			Selector:    &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{db, sidecar},
					TerminationGracePeriodSeconds: ptr.To[int64](60),
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("10Gi"),
					}},
				},
			}},
		},
	}
}

// selectorScratchVolume selects every StatefulSet labeled for a RAM tmpdir in namespace.
func selectorScratchVolume(namespace string) *v1alpha1.ScratchVolume {
	sv := scratchVolume(fleetScratchVolume, namespace)
	sv.Spec.Target.Selector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{selectedLabel: "ram"}}
	return sv
}

// targetScratchVolume targets one StatefulSet by name.
func targetScratchVolume(namespace, target string) *v1alpha1.ScratchVolume {
	sv := scratchVolume("tmp-"+target, namespace)
	sv.Spec.Target.Name = target
	return sv
}

func scratchVolume(name, namespace string) *v1alpha1.ScratchVolume {
	return &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{benchLabel: "fleet"}},
		Spec: v1alpha1.ScratchVolumeSpec{
			Size:    resource.MustParse(scratchSize),
			Purpose: v1alpha1.PurposeMySQLTmpdir,
		},
	}
}

// Background objects: what a busy cluster holds besides the databases, none of which the manager
// has any reason to read.

// backgroundNamespace is the namespace of the i-th background object of a kind.
func backgroundNamespace(i, namespaces int) string { return fmt.Sprintf("apps-%02d", i%namespaces) }

// configMap is the i-th background ConfigMap; every one for which big is true carries 100 KiB of
// data (a dashboard, a rules file), the others a few small keys.
func configMap(i, namespaces int, big bool) *corev1.ConfigMap {
	data := map[string]string{
		"application.properties": fmt.Sprintf("server.port=8080\napp.instance=%d\nlogging.level=INFO\n", i),
		"feature-flags.yaml":     "checkout: true\nsearch-v2: false\n",
	}
	if big {
		data["dashboard.json"] = filler(i, 100<<10)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("app-config-%05d", i), Namespace: backgroundNamespace(i, namespaces),
			Labels: map[string]string{benchLabel: "background", "app.kubernetes.io/name": fmt.Sprintf("app-%d", i%500)},
		},
		Data: data,
	}
}

// secret is the i-th background Secret, the size of a TLS key pair.
func secret(i, namespaces int) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("app-tls-%05d", i), Namespace: backgroundNamespace(i, namespaces),
			Labels: map[string]string{benchLabel: "background"},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte(filler(i, 1800)), "tls.key": []byte(filler(i+1, 1700))},
	}
}

// pod is the i-th background Pod, bound to node so that no scheduler works on it and kwok runs it.
func pod(i, namespaces int, node string) *corev1.Pod {
	name := fmt.Sprintf("web-%05d", i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: backgroundNamespace(i, namespaces),
			Labels: map[string]string{benchLabel: "background", "app.kubernetes.io/name": fmt.Sprintf("app-%d", i%500)},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{
				{
					Name: "web", Image: "nginx:1.27",
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Env:       []corev1.EnvVar{{Name: "APP_INSTANCE", Value: strconv.Itoa(i)}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
				},
				{Name: "proxy", Image: "envoyproxy/envoy:v1.31.0", Args: []string{"-c", "/etc/envoy/envoy.yaml"}},
			},
		},
	}
}

// filler is n bytes of printable text that differs between seeds, so etcd cannot share it.
func filler(seed, n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	for line := 0; b.Len() < n; line++ {
		fmt.Fprintf(&b, "%08x-%06d: lorem ipsum dolor sit amet consectetur adipiscing elit\n", seed*7919+line, line)
	}
	return b.String()[:n]
}
