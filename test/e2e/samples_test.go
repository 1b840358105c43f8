package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// imageSample is a directory of config/samples holding a database StatefulSet as a common image or
// chart runs it, and the ScratchVolume that fits it.
type imageSample struct {
	dir         string
	statefulSet string
	injection   v1alpha1.InjectionMode
	// check says what is wrong with the injected database container, or "".
	check func(t *testing.T, s *suite, ns string, sv *v1alpha1.ScratchVolume, c *corev1.Container) string
}

var imageSamples = []imageSample{
	{dir: "mysql", statefulSet: "mysql", injection: v1alpha1.InjectionConfigFile, check: dropInSetsTmpdir},
	{dir: "bitnami-mysql", statefulSet: "orders-mysql", injection: v1alpha1.InjectionExtraFlags, check: extraFlagsSetTmpdir},
}

// TestImageSamplesAreInjected applies each per-image sample with `kubectl apply -k`, as its
// comment tells a user to: the API server accepts every object, the ScratchVolume turns Ready
// with the injection mode the image calls for, and the rolled-out pods' database container has
// the RAM volume and the server's temporary directories on it, the replica-load directory on the
// data volume.
func TestImageSamplesAreInjected(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	for _, sample := range imageSamples {
		ns := s.namespace(t)
		t.Run(sample.dir, func(t *testing.T) {
			t.Parallel()
			dir := s.sample(sample.dir)
			if sample.dir == "bitnami-mysql" {
				// The Secret the chart makes, which the sample's comment has the user create.
				s.kubectl(t, "create", "secret", "generic", "orders-mysql", "-n", ns, "--from-literal=mysql-root-password=e2e")
			}
			s.kubectl(t, "apply", "-n", ns, "-k", dir)
			name := readManifest[v1alpha1.ScratchVolume](t, filepath.Join(dir, "scratchvolume.yaml")).Name
			sv := s.waitCondition(t, ns, name, v1alpha1.ConditionReady, metav1.ConditionTrue)
			sts := s.waitRolledOut(t, ns, sample.statefulSet, runsScratchVolume(sv))
			s.kubectl(t, "get", "scratchvolume", "-n", ns)
			if len(sv.Status.Targets) != 1 || sv.Status.Targets[0].Name != sample.statefulSet || sv.Status.Targets[0].Injection != sample.injection {
				t.Fatalf("ScratchVolume %s reports targets %+v, want %s injected with %s", sv.Name, sv.Status.Targets, sample.statefulSet, sample.injection)
			}
			c := databaseContainer(t, sts)
			if why := mountsRAMVolume(c, sv); why != "" {
				t.Error(why)
			}
			if why := sample.check(t, s, ns, sv, c); why != "" {
				t.Error(why)
			}
		})
	}
}

func databaseContainer(t *testing.T, sts *appsv1.StatefulSet) *corev1.Container {
	t.Helper()
	for i, c := range sts.Spec.Template.Spec.Containers {
		if mysql.IsDatabaseImage(c.Image) {
			return &sts.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatalf("StatefulSet %s has no database container", sts.Name)
	return nil
}

func mountsRAMVolume(c *corev1.Container, sv *v1alpha1.ScratchVolume) string {
	for _, m := range c.VolumeMounts {
		if m.Name == sv.VolumeName() && m.MountPath == sv.EffectiveMountPath() {
			return ""
		}
	}
	return fmt.Sprintf("container %s does not mount %s at %s: %+v", c.Name, sv.VolumeName(), sv.EffectiveMountPath(), c.VolumeMounts)
}

// dropInSetsTmpdir checks the official image's drop-in: tmpdir and the session temporary
// tablespaces in RAM, replica_load_tmpdir on the data volume.
func dropInSetsTmpdir(t *testing.T, s *suite, ns string, sv *v1alpha1.ScratchVolume, _ *corev1.Container) string {
	cm := testenv.Get[corev1.ConfigMap](t, s.admin, ns, sv.ConfigMapName(sv.Status.Targets[0].Name))
	cnf := cm.Data[mysql.DropInFileName]
	ram := sv.EffectiveMountPath()
	for _, want := range []string{"tmpdir = " + ram, "innodb_temp_tablespaces_dir = " + ram, "replica_load_tmpdir = /var/lib/mysql/"} {
		if !strings.Contains(cnf, want) {
			return fmt.Sprintf("the drop-in of %s lacks %q:\n%s", sv.Name, want, cnf)
		}
	}
	return ""
}

// extraFlagsSetTmpdir checks the Bitnami image's MYSQL_EXTRA_FLAGS: tmpdir in RAM, the replica
// load directory on the chart's claim at /bitnami/mysql.
func extraFlagsSetTmpdir(_ *testing.T, _ *suite, _ string, sv *v1alpha1.ScratchVolume, c *corev1.Container) string {
	for _, e := range c.Env {
		if e.Name != "MYSQL_EXTRA_FLAGS" {
			continue
		}
		for _, want := range []string{"--tmpdir=" + sv.EffectiveMountPath(), "--replica-load-tmpdir=/bitnami/mysql/"} {
			if !strings.Contains(e.Value, want) {
				return fmt.Sprintf("MYSQL_EXTRA_FLAGS of container %s lacks %q: %q", c.Name, want, e.Value)
			}
		}
		return ""
	}
	return fmt.Sprintf("container %s has no MYSQL_EXTRA_FLAGS: %+v", c.Name, c.Env)
}

// TestMariaDBOperatorSampleIsConsistent checks what can be checked of the mariadb-operator sample
// without that operator: its RAM volume is a memory emptyDir with a size limit, mounted where its
// my.cnf puts tmpdir, and its memory limit holds the volume, the buffer pool its my.cnf sets and
// the headroom the controller's Validate accounting asks for.
func TestMariaDBOperatorSampleIsConsistent(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "samples", "mariadb-operator", "mariadb.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cr struct {
		Spec struct {
			MyCnf        string                      `json:"myCnf"`
			Volumes      []corev1.Volume             `json:"volumes"`
			VolumeMounts []corev1.VolumeMount        `json:"volumeMounts"`
			Resources    corev1.ResourceRequirements `json:"resources"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &cr); err != nil {
		t.Fatalf("mariadb-operator/mariadb.yaml: %v", err)
	}
	options := myCnfOptions(cr.Spec.MyCnf)
	var size resource.Quantity
	for _, v := range cr.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit == nil {
			continue
		}
		for _, m := range cr.Spec.VolumeMounts {
			if m.Name == v.Name && m.MountPath == options["tmpdir"] {
				size = *v.EmptyDir.SizeLimit
			}
		}
	}
	if size.IsZero() {
		t.Fatalf("no memory emptyDir with a sizeLimit is mounted at tmpdir %q", options["tmpdir"])
	}
	need := size.DeepCopy()
	pool, err := resource.ParseQuantity(options["innodb_buffer_pool_size"] + "i")
	if err != nil {
		t.Fatalf("innodb_buffer_pool_size %q: %v", options["innodb_buffer_pool_size"], err)
	}
	need.Add(pool)
	need.Add(resource.MustParse(v1alpha1.DefaultMemoryHeadroom))
	if limit := cr.Spec.Resources.Limits[corev1.ResourceMemory]; limit.Cmp(need) < 0 {
		t.Errorf("the memory limit %s does not hold %s (volume %s + buffer pool %s + headroom %s)",
			limit.String(), need.String(), size.String(), pool.String(), v1alpha1.DefaultMemoryHeadroom)
	}
}

// myCnfOptions reads the name=value lines of a my.cnf.
func myCnfOptions(cnf string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(cnf, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}
