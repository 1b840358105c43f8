package inject_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

const (
	testNamespace = "shop"
	testTarget    = "db"
	testSV        = "tmp"
	// dbContainer is the database container of every fixture.
	dbContainer = "db"
	// testDigest is a well-formed sha256 digest; no registry serves it.
	testDigest = "sha256:4b1c0e3c9f6a2d8e7b5a3c1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d"
)

// dataKind says where the database container keeps its data directory.
type dataKind string

const (
	// dataClaim mounts a volumeClaimTemplate at the data directory: the usual, persistent case.
	dataClaim dataKind = "claim"
	// dataEmptyDir mounts a disk-backed emptyDir: survives container restarts, not the pod.
	dataEmptyDir dataKind = "emptydir"
	// dataMemory mounts a memory-backed emptyDir: the data itself is in RAM.
	dataMemory dataKind = "memory"
	// dataNone mounts nothing: the data lives in the container's own filesystem.
	dataNone dataKind = "none"
)

// statefulSet is a realistic database StatefulSet: the database container (1G buffer pool, 2Gi
// request, 4Gi limit, a security context the init container must copy), a metrics sidecar, and a
// user init container. data says how the data directory at dataMount is stored.
func statefulSet(image string, data dataKind, dataMount string) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/name": testTarget}
	db := corev1.Container{
		Name:  dbContainer,
		Image: image,
		Args:  []string{"--innodb-buffer-pool-size=1G", "--binlog-format=ROW"},
		Env:   []corev1.EnvVar{{Name: "MYSQL_RANDOM_ROOT_PASSWORD", Value: "1"}},
		Ports: []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("2Gi"),
			},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
		},
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)},
	}
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testTarget},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](3),
			ServiceName: testTarget,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{"prometheus.io/scrape": "true"},
				},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{
						Name: "wait-for-dns", Image: "busybox:1.36",
						Command: []string{"sh", "-c", "until nslookup db; do sleep 1; done"},
					}},
					Containers: []corev1.Container{db, {
						Name:  "metrics",
						Image: "prom/mysqld-exporter:v0.15.1",
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9104}},
					}},
				},
			},
		},
	}
	pod := &sts.Spec.Template.Spec
	mount := corev1.VolumeMount{Name: "data", MountPath: dataMount}
	switch data {
	case dataClaim:
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")},
				},
			},
		}}
	case dataEmptyDir:
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	case dataMemory:
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
	case dataNone:
		return sts
	}
	pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, mount)
	return sts
}

// mysqlSTS is the most common target: official mysql:8.0.36 with its data on a volumeClaimTemplate.
func mysqlSTS() *appsv1.StatefulSet {
	return statefulSet("mysql:8.0.36", dataClaim, "/var/lib/mysql")
}

// svOption changes one thing about a ScratchVolume.
type svOption func(*v1alpha1.ScratchVolume)

// scratchVolume is a 512Mi MySQLTmpdir ScratchVolume with the API server's defaults filled in
// (ConfigFile injection, Validate accounting), as the controller reads it.
func scratchVolume(opts ...svOption) *v1alpha1.ScratchVolume {
	sv := &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testSV},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: testTarget},
			Size:    resource.MustParse("512Mi"),
			Purpose: v1alpha1.PurposeMySQLTmpdir,
			MySQL: &v1alpha1.MySQLSpec{
				Injection:    v1alpha1.InjectionConfigFile,
				InnoDBTmpdir: v1alpha1.InnoDBTmpdirDisk,
			},
			Memory: v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryValidate},
		},
	}
	for _, o := range opts {
		o(sv)
	}
	return sv
}

func named(name string) svOption { return func(sv *v1alpha1.ScratchVolume) { sv.Name = name } }

func size(q string) svOption {
	return func(sv *v1alpha1.ScratchVolume) { sv.Spec.Size = resource.MustParse(q) }
}

func injection(m v1alpha1.InjectionMode) svOption {
	return func(sv *v1alpha1.ScratchVolume) { sv.Spec.MySQL.Injection = m }
}

func accounting(a v1alpha1.MemoryAccounting) svOption {
	return func(sv *v1alpha1.ScratchVolume) { sv.Spec.Memory.Accounting = a }
}

func headroom(q string) svOption {
	return func(sv *v1alpha1.ScratchVolume) { sv.Spec.Memory.Headroom = ptr.To(resource.MustParse(q)) }
}

func mountPath(p string) svOption {
	return func(sv *v1alpha1.ScratchVolume) { sv.Spec.MountPath = v1alpha1.AbsolutePath(p) }
}

func container(name string) svOption {
	return func(sv *v1alpha1.ScratchVolume) { sv.Spec.Container = name }
}

func mysqlSpec(change func(*v1alpha1.MySQLSpec)) svOption {
	return func(sv *v1alpha1.ScratchVolume) { change(sv.Spec.MySQL) }
}

// generic makes the ScratchVolume a Generic one, which takes no spec.mysql.
func generic() svOption {
	return func(sv *v1alpha1.ScratchVolume) {
		sv.Spec.Purpose = v1alpha1.PurposeGeneric
		sv.Spec.MySQL = nil
	}
}

// stsOption changes one thing about a StatefulSet.
type stsOption func(*appsv1.StatefulSet)

func withSTS(sts *appsv1.StatefulSet, opts ...stsOption) *appsv1.StatefulSet {
	for _, o := range opts {
		o(sts)
	}
	return sts
}

// dbArgs replaces the database container's args.
func dbArgs(args ...string) stsOption {
	return func(sts *appsv1.StatefulSet) { sts.Spec.Template.Spec.Containers[0].Args = args }
}

// dbMemory sets the database container's memory request and limit; "" removes one.
func dbMemory(request, limit string) stsOption {
	return func(sts *appsv1.StatefulSet) {
		r := &sts.Spec.Template.Spec.Containers[0].Resources
		set := func(list corev1.ResourceList, v string) {
			if v == "" {
				delete(list, corev1.ResourceMemory)
				return
			}
			list[corev1.ResourceMemory] = resource.MustParse(v)
		}
		set(r.Requests, request)
		set(r.Limits, limit)
	}
}

// dbMount adds a mount to the database container and its volume to the pod.
func dbMount(m corev1.VolumeMount, v *corev1.Volume) stsOption {
	return func(sts *appsv1.StatefulSet) {
		c := &sts.Spec.Template.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, m)
		if v != nil {
			sts.Spec.Template.Spec.Volumes = append(sts.Spec.Template.Spec.Volumes, *v)
		}
	}
}

// configMapVolume is a user's ConfigMap volume.
func configMapVolume(name string) *corev1.Volume {
	return &corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name},
	}}}
}

// sidecars replaces every container but the first.
func sidecars(cs ...corev1.Container) stsOption {
	return func(sts *appsv1.StatefulSet) {
		pod := &sts.Spec.Template.Spec
		pod.Containers = append(pod.Containers[:1], cs...)
	}
}

// noData removes the database container's data volume: its data lives in the container's filesystem.
func noData() stsOption {
	return func(sts *appsv1.StatefulSet) {
		sts.Spec.VolumeClaimTemplates = nil
		sts.Spec.Template.Spec.Containers[0].VolumeMounts = nil
	}
}

// onlyContainers replaces all containers.
func onlyContainers(cs ...corev1.Container) stsOption {
	return func(sts *appsv1.StatefulSet) { sts.Spec.Template.Spec.Containers = cs }
}

// plan runs NewPlan and fails the test on any error.
func plan(t *testing.T, sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) *inject.Plan {
	t.Helper()
	p, err := inject.NewPlan(sv, sts, inject.Namespace{})
	if err != nil {
		t.Fatalf("NewPlan(%s) failed: %v", sv.Name, err)
	}
	return p
}

// problemOf runs NewPlan and returns its *Problem, nil when it planned; any other error fails the
// test, because every input the user can fix must come back as a Problem.
func problemOf(t *testing.T, sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) (*inject.Plan, *inject.Problem) {
	t.Helper()
	p, err := inject.NewPlan(sv, sts, inject.Namespace{})
	if err == nil {
		return p, nil
	}
	var problem *inject.Problem
	if !errors.As(err, &problem) {
		t.Fatalf("NewPlan(%s) failed with %T, want a *inject.Problem: %v", sv.Name, err, err)
	}
	return nil, problem
}

// injected returns a copy of sts whose pod template carries the plans.
func injected(sts *appsv1.StatefulSet, plans ...*inject.Plan) *appsv1.StatefulSet {
	out := sts.DeepCopy()
	out.Spec.Template = inject.Inject(sts.Spec.Template, plans)
	return out
}

// quantityEqual compares quantities by value, so 1Gi equals 1024Mi.
var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func containerIn(tmpl *corev1.PodTemplateSpec, name string) *corev1.Container {
	for i := range tmpl.Spec.Containers {
		if tmpl.Spec.Containers[i].Name == name {
			return &tmpl.Spec.Containers[i]
		}
	}
	return nil
}

func resourceQ(s string) resource.Quantity { return resource.MustParse(s) }

// bitnamiStatefulSet is the primary StatefulSet the Bitnami mysql or mariadb chart renders (db is
// "mysql" or "mariadb"): the image's entrypoint and run.sh start the server, with
// --defaults-file=/opt/bitnami/<db>/conf/my.cnf from the chart's ConfigMap; the claim "data" at
// /bitnami/<db> holds the data directory data/; one emptyDir gives the writable directories of a
// read-only root filesystem, among them /opt/bitnami/<db>/tmp (tmpdir, socket and pid file in the
// chart's my.cnf); the server runs as 1001. extraFlags, when not nil, is the chart's extraFlags
// value as it reaches the container.
func bitnamiStatefulSet(db, image string, extraFlags *corev1.EnvVar) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/instance": testTarget, "app.kubernetes.io/name": db,
		"app.kubernetes.io/component": "primary"}
	upper := map[string]string{"mysql": "MYSQL", "mariadb": "MARIADB"}[db]
	env := []corev1.EnvVar{
		{Name: "BITNAMI_DEBUG", Value: "false"},
		{Name: upper + "_ROOT_PASSWORD_FILE", Value: "/opt/bitnami/" + db + "/secrets/" + db + "-root-password"},
		{Name: upper + "_ENABLE_SSL", Value: "no"},
		{Name: upper + "_PORT_NUMBER", Value: "3306"},
	}
	if extraFlags != nil {
		env = append(env, *extraFlags)
	}
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
		Env:   env,
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
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testTarget, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](1),
			ServiceName:         testTarget + "-headless",
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels,
					Annotations: map[string]string{"checksum/configuration": "5c7b9e0f3d1a"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: testTarget,
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
							LocalObjectReference: corev1.LocalObjectReference{Name: testTarget}}}},
						{Name: db + "-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: testTarget, Items: []corev1.KeyToPath{{Key: db + "-root-password", Path: db + "-root-password"}}}}},
					},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"app.kubernetes.io/instance": testTarget}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Gi")},
					},
				},
			}},
		},
	}
}

// chartExtraFlags is the chart's extraFlags value as the container gets it.
func chartExtraFlags(db, value string) *corev1.EnvVar {
	return &corev1.EnvVar{Name: map[string]string{"mysql": "MYSQL", "mariadb": "MARIADB"}[db] + "_EXTRA_FLAGS", Value: value}
}
