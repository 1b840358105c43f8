package admission_test

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// fixture is a realistic StatefulSet every admitted spec is planned against.
type fixture struct {
	name string
	sts  *appsv1.StatefulSet
	// db is the database container, "" when there is none.
	db string
	// dataDir is the data directory of the database image, as its documentation gives it.
	dataDir string
	// bufferPool is the innodb_buffer_pool_size the db container's args set, in bytes.
	bufferPool int64
	// claimMount is where the data claim is mounted, when that is above the data directory.
	claimMount string
}

// fixtures are the StatefulSets users run: the official images with their data on a
// volumeClaimTemplate and a metrics sidecar, bitnami's own layout, Percona's builds (one with
// Galera), an application that is no database at all, and a server with no data volume.
func fixtures(ns string) []fixture {
	claim := func(path string) stsOption { return withClaim("data", path) }
	return []fixture{{
		name: "mariadb-11.4",
		sts: database(ns, "mariadb-11-4", "mariadb", "mariadb:11.4",
			[]string{"--innodb-buffer-pool-size=1G", "--binlog-format=ROW"}, claim("/var/lib/mysql"), withExporter()),
		db: "mariadb", dataDir: "/var/lib/mysql", bufferPool: 1 << 30,
	}, {
		// A server with its own limits on temporary space.
		name: "mariadb-11.8",
		sts:  database(ns, "mariadb-11-8", "mariadb", "mariadb:11.8.5", nil, claim("/var/lib/mysql")),
		db:   "mariadb", dataDir: "/var/lib/mysql",
	}, {
		name: "mysql-8.4",
		sts: database(ns, "mysql-8-4", "mysql", "mysql:8.4",
			[]string{"--character-set-server=utf8mb4", "--innodb_buffer_pool_size=512M"}, claim("/var/lib/mysql"), withExporter()),
		db: "mysql", dataDir: "/var/lib/mysql", bufferPool: 512 << 20,
	}, {
		name: "mysql-5.7",
		sts:  database(ns, "mysql-5-7", "mysql", "mysql:5.7.44", nil, claim("/var/lib/mysql")),
		db:   "mysql", dataDir: "/var/lib/mysql",
	}, {
		// Bitnami mounts the claim one level above its data directory.
		name: "bitnami-mysql",
		sts:  database(ns, "bitnami-mysql", "mysql", "bitnami/mysql:8.0.36-debian-12-r8", nil, claim("/bitnami/mysql"), withExporter()),
		db:   "mysql", dataDir: "/bitnami/mysql/data", claimMount: "/bitnami/mysql",
	}, {
		name: "percona-server",
		sts: database(ns, "percona-server", "db", "percona/percona-server:8.0.36-28",
			[]string{"--innodb-buffer-pool-size=1024M"}, claim("/var/lib/mysql")),
		db: "db", dataDir: "/var/lib/mysql", bufferPool: 1 << 30,
	}, {
		name: "percona-xtradb-cluster",
		sts:  database(ns, "pxc", "pxc", "percona/percona-xtradb-cluster:8.0", nil, claim("/var/lib/mysql"), withExporter()),
		db:   "pxc", dataDir: "/var/lib/mysql",
	}, {
		// Pod-level resources (KEP-2837) and none on the database container: the pod's limit
		// bounds the volume and the database together.
		name: "mariadb-11.4-pod-resources",
		sts: database(ns, "mariadb-pod-resources", "mariadb", "mariadb:11.4",
			[]string{"--innodb-buffer-pool-size=1G"}, claim("/var/lib/mysql"), withExporter(), withPodResources("1", "3Gi", "6Gi")),
		db: "mariadb", dataDir: "/var/lib/mysql", bufferPool: 1 << 30,
	}, {
		// Pod-level resources beside the container's own, and a native sidecar that runs beside
		// the database for the pod's whole life.
		name: "mysql-8.4-native-sidecar",
		sts: database(ns, "mysql-sidecar", "mysql", "mysql:8.4",
			[]string{"--innodb_buffer_pool_size=512M"}, claim("/var/lib/mysql"), withPodResources("", "4Gi", "7Gi"), withNativeSidecar()),
		db: "mysql", dataDir: "/var/lib/mysql", bufferPool: 512 << 20,
	}, {
		// No database: a web application with a cache volume and a log shipper.
		name: "generic-app",
		sts:  genericApp(ns),
	}, {
		// The data lives in the container's own filesystem; the only container, so a Generic
		// volume needs no spec.container.
		name: "mysql-no-data-volume",
		sts:  database(ns, "mysql-no-data", "db", "mysql:8.0.36", nil),
		db:   "db", dataDir: "/var/lib/mysql",
	}}
}

type stsOption func(*appsv1.StatefulSet)

// database is a StatefulSet running image in container name with args, a 2Gi request, a 4Gi
// limit and a security context, changed by opts.
func database(ns, name, container, image string, args []string, opts ...stsOption) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/name": name}
	sts := testenv.StatefulSet(ns, name, testenv.WithLabels(labels), testenv.WithReplicas(3), testenv.WithoutData(),
		testenv.WithContainerName(container), testenv.WithImage(image), testenv.WithArgs(args...),
		testenv.WithEnv(corev1.EnvVar{Name: "MYSQL_RANDOM_ROOT_PASSWORD", Value: "1"}), testenv.WithMemoryLimit("4Gi"))
	sts.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
	sts.Spec.Template.Annotations = map[string]string{"prometheus.io/scrape": "true"}
	pod := &sts.Spec.Template.Spec
	pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
		}}},
	}}
	db := &pod.Containers[0]
	db.Ports = []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}}
	db.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("mysql")},
	}, PeriodSeconds: 10}
	db.Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("500m"),
		corev1.ResourceMemory: resource.MustParse("2Gi"),
	}
	db.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsUser: ptr.To[int64](999)}
	for _, o := range opts {
		o(sts)
	}
	return sts
}

// withClaim mounts a 20Gi volumeClaimTemplate at path in the first container.
func withClaim(name, path string) stsOption {
	return func(sts *appsv1.StatefulSet) {
		sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")},
				},
			},
		})
		c := &sts.Spec.Template.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: path})
	}
}

// withExporter adds the usual metrics sidecar and an init container that waits for DNS.
func withExporter() stsOption {
	return func(sts *appsv1.StatefulSet) {
		pod := &sts.Spec.Template.Spec
		pod.InitContainers = append(pod.InitContainers, corev1.Container{
			Name: "wait-for-dns", Image: "busybox:1.36",
			Command: []string{"sh", "-c", "until nslookup " + sts.Name + "; do sleep 1; done"},
		})
		pod.Containers = append(pod.Containers, corev1.Container{
			Name:  "metrics",
			Image: "prom/mysqld-exporter:v0.15.1",
			Args:  []string{"--collect.info_schema.processlist"},
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9104}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		})
	}
}

// withPodResources gives the pod pod-level resources: a CPU request (none when ""), and a memory
// request and limit. A container that is the only one with resources keeps them; the database
// container of a single-container shape gives its own up when the pod has some and it had the
// defaults of database.
func withPodResources(cpu, memRequest, memLimit string) stsOption {
	return func(sts *appsv1.StatefulSet) {
		pod := &sts.Spec.Template.Spec
		r := &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memRequest)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memLimit)},
		}
		if cpu != "" {
			r.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
			pod.Containers[0].Resources = corev1.ResourceRequirements{}
		}
		pod.Resources = r
	}
}

// withNativeSidecar adds a log shipper as a native sidecar: an init container that keeps running.
func withNativeSidecar() stsOption {
	return func(sts *appsv1.StatefulSet) {
		always := corev1.ContainerRestartPolicyAlways
		pod := &sts.Spec.Template.Spec
		pod.InitContainers = append(pod.InitContainers, corev1.Container{
			Name: "log-shipper", Image: "fluent/fluent-bit:3.0", RestartPolicy: &always,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
		})
	}
}

// genericApp is a web application with a sidecar: no database image at all. Kept apart: it builds
// an application, not a database.
func genericApp(ns string) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/name": "web"}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Volumes: []corev1.Volume{
						{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
					Containers: []corev1.Container{{
						Name:  "app",
						Image: "nginx:1.27",
						Args:  []string{"nginx", "-g", "daemon off;"},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "cache", MountPath: "/var/cache/nginx"},
							{Name: "logs", MountPath: "/var/log/nginx"},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
						},
					}, {
						Name:         "log-shipper",
						Image:        "fluent/fluent-bit:3.0",
						VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/var/log/nginx", ReadOnly: true}},
					}},
				},
			},
		},
	}
}
