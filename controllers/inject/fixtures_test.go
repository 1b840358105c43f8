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
	"github.com/dbtune/scratch-operator/test/testenv"
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
	sts := testenv.StatefulSet(testNamespace, testTarget, testenv.WithReplicas(3),
		testenv.WithImage(image), testenv.WithArgs("--innodb-buffer-pool-size=1G", "--binlog-format=ROW"),
		testenv.WithEnv(corev1.EnvVar{Name: "MYSQL_RANDOM_ROOT_PASSWORD", Value: "1"}), testenv.WithMemoryLimit("4Gi"),
		testenv.WithDataMount(dataMount), testenv.WithClaimSize("20Gi"),
		testenv.WithSidecar(corev1.Container{
			Name:  "metrics",
			Image: "prom/mysqld-exporter:v0.15.1",
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9104}},
		}))
	sts.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
	sts.Spec.Template.Annotations = map[string]string{"prometheus.io/scrape": "true"}
	pod := &sts.Spec.Template.Spec
	pod.InitContainers = []corev1.Container{{
		Name: "wait-for-dns", Image: "busybox:1.36",
		Command: []string{"sh", "-c", "until nslookup db; do sleep 1; done"},
	}}
	db := &pod.Containers[0]
	db.Ports = []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}}
	db.Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("500m"),
		corev1.ResourceMemory: resource.MustParse("2Gi"),
	}
	db.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}
	switch data {
	case dataEmptyDir:
		sts.Spec.VolumeClaimTemplates = nil
		pod.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	case dataMemory:
		sts.Spec.VolumeClaimTemplates = nil
		pod.Volumes = []corev1.Volume{{Name: "data",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
	case dataNone:
		testenv.WithoutData()(sts)
	}
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
func noData() stsOption { return stsOption(testenv.WithoutData()) }

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

// bitnamiStatefulSet is testenv's BitnamiStatefulSet of the chart for db ("mysql" or "mariadb")
// with image; extraFlags, when not nil, is the chart's extraFlags value as it reaches the container.
func bitnamiStatefulSet(db, image string, extraFlags *corev1.EnvVar) *appsv1.StatefulSet {
	if extraFlags == nil {
		return testenv.BitnamiStatefulSet(testNamespace, testTarget, db, image)
	}
	return testenv.BitnamiStatefulSet(testNamespace, testTarget, db, image, testenv.WithEnv(*extraFlags))
}

// chartExtraFlags is the chart's extraFlags value as the container gets it.
func chartExtraFlags(db, value string) *corev1.EnvVar {
	return &corev1.EnvVar{Name: map[string]string{"mysql": "MYSQL", "mariadb": "MARIADB"}[db] + "_EXTRA_FLAGS", Value: value}
}
