package upgrade_test

// The fleet a release is recorded with: one StatefulSet per kind of target the controller renders
// differently, each in the shape its image or chart gives it, and the ScratchVolumes that tune them.

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// fleetNamespace holds the recorded fleet.
const fleetNamespace = "fleet"

// fleet returns the StatefulSets and ScratchVolumes of a recorded fleet.
func fleet() ([]*appsv1.StatefulSet, []*v1alpha1.ScratchVolume) {
	stss := []*appsv1.StatefulSet{
		officialImage("mariadb", "mariadb:11.4"),
		officialImage("mysql84-args", "mysql:8.4"),
		officialImage("mysql9-configfile", "mysql:9.1"),
		officialImage("percona80", "percona/percona-server:8.0.36"),
		officialImage("mariadb-reserve", "mariadb:10.11"),
		bitnami("bitnami-mysql", "mysql", "bitnami/mysql:8.4"),
		bitnami("galera", "mariadb", "bitnami/mariadb-galera:11.4"),
	}
	for i := range 3 {
		pool := officialImage("pool-"+string(rune('a'+i)), "mariadb:10.11")
		pool.Labels["tier"] = "pool"
		stss = append(stss, pool)
	}
	named := func(name, target string, change func(*v1alpha1.ScratchVolumeSpec)) *v1alpha1.ScratchVolume {
		sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: name}}
		sv.Spec.Target.Name = target
		sv.Spec.Size = resource.MustParse("256Mi")
		if change != nil {
			change(&sv.Spec)
		}
		return sv
	}
	svs := []*v1alpha1.ScratchVolume{
		named("mariadb", "mariadb", nil),
		named("mysql84-args", "mysql84-args", func(s *v1alpha1.ScratchVolumeSpec) {
			s.MySQL = &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionArgs}
		}),
		named("mysql9-configfile", "mysql9-configfile", func(s *v1alpha1.ScratchVolumeSpec) {
			s.MySQL = &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionConfigFile}
		}),
		named("percona80", "percona80", nil),
		named("mariadb-reserve", "mariadb-reserve", func(s *v1alpha1.ScratchVolumeSpec) { s.Memory.Accounting = v1alpha1.MemoryReserve }),
		named("bitnami-mysql", "bitnami-mysql", nil),
		named("galera", "galera", nil),
		named("pool", "", func(s *v1alpha1.ScratchVolumeSpec) {
			s.Target.Selector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "pool"}}
			s.Size = resource.MustParse("128Mi")
		}),
	}
	return stss, svs
}

// officialImage is a StatefulSet of an official mysql, mariadb or percona image: the data claim at
// /var/lib/mysql, a 2Gi limit and a metrics sidecar.
func officialImage(name, image string) *appsv1.StatefulSet {
	sts := testenv.StatefulSet(fleetNamespace, name, testenv.WithLabels(map[string]string{"tier": "db"}), testenv.WithReplicas(2),
		testenv.WithImage(image), testenv.WithClaimSize("10Gi"),
		testenv.WithEnv(corev1.EnvVar{Name: "MYSQL_RANDOM_ROOT_PASSWORD", Value: "yes"}, corev1.EnvVar{Name: "MARIADB_RANDOM_ROOT_PASSWORD", Value: "yes"}),
		testenv.WithSidecar(corev1.Container{Name: "metrics", Image: "prom/mysqld-exporter:v0.15.1", Ports: []corev1.ContainerPort{{ContainerPort: 9104}}}))
	db := &sts.Spec.Template.Spec.Containers[0]
	db.Ports = []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}}
	db.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
	return sts
}

// bitnami is the primary StatefulSet of a Bitnami chart (db is mysql or mariadb): the data claim at
// /bitnami/<db>, a read-only root file system with its writable directories on one emptyDir, the
// chart's my.cnf from a ConfigMap, uid 1001. Kept apart: it builds the chart without the
// ServiceAccount and Secret that testenv.BitnamiStatefulSet names, which the fleet's cluster lacks.
func bitnami(name, db, image string) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/instance": name, "app.kubernetes.io/name": db}
	upper := map[string]string{"mysql": "MYSQL", "mariadb": "MARIADB"}[db]
	emptyDir := func(mountPath, subPath string) corev1.VolumeMount {
		return corev1.VolumeMount{Name: "empty-dir", MountPath: mountPath, SubPath: subPath}
	}
	container := corev1.Container{
		Name: db, Image: image,
		SecurityContext: &corev1.SecurityContext{
			ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1001),
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		Env: []corev1.EnvVar{
			{Name: upper + "_ROOT_PASSWORD_FILE", Value: "/opt/bitnami/" + db + "/secrets/" + db + "-root-password"},
			{Name: upper + "_PORT_NUMBER", Value: "3306"},
		},
		Ports: []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("384Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: "/bitnami/" + db},
			emptyDir("/tmp", "tmp-dir"),
			emptyDir("/opt/bitnami/"+db+"/conf", "app-conf-dir"),
			emptyDir("/opt/bitnami/"+db+"/tmp", "app-tmp-dir"),
			emptyDir("/opt/bitnami/"+db+"/logs", "app-logs-dir"),
			{Name: "config", MountPath: "/opt/bitnami/" + db + "/conf/my.cnf", SubPath: "my.cnf"},
		},
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: name, Labels: map[string]string{"tier": "db"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: name + "-headless",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"checksum/configuration": "5c7b9e0f3d1a"}},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1001)},
					Containers:      []corev1.Container{container},
					Volumes: []corev1.Volume{
						{Name: "empty-dir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
					},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim("data", "8Gi")},
		},
	}
}

func claim(name, size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}
