package controllers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func TestInjectsMariaDBStatefulSet(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	sv := scratchVolume(ns, "tmp", "db")
	create(t, e, sts, sv)

	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	got := getSTS(t, e, ns, "db")
	pod := &got.Spec.Template.Spec

	vol := findVolume(pod, sv.VolumeName())
	if vol == nil || vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory ||
		vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Cmp(resource.MustParse("512Mi")) != 0 {
		t.Fatalf("want a 512Mi memory emptyDir named %s, got %+v", sv.VolumeName(), vol)
	}
	db := findContainer(pod.Containers, "mariadb")
	if m := findMount(db, "/var/lib/mysql-tmp"); m == nil || m.Name != sv.VolumeName() {
		t.Errorf("mariadb container does not mount the scratch volume at /var/lib/mysql-tmp: %+v", db.VolumeMounts)
	}
	cnf := findMount(db, "/etc/mysql/conf.d/"+mysql.DropInFileName)
	if cnf == nil || cnf.SubPath != mysql.DropInFileName || !cnf.ReadOnly {
		t.Errorf("want the drop-in mounted as a single read-only file in /etc/mysql/conf.d, got %+v", db.VolumeMounts)
	}
	cfgVol := findVolume(pod, sv.ConfigVolumeName())
	if cfgVol == nil || cfgVol.ConfigMap == nil || cfgVol.ConfigMap.Optional == nil || !*cfgVol.ConfigMap.Optional {
		t.Errorf("want an optional ConfigMap volume, got %+v", cfgVol)
	}
	if len(findContainer(pod.Containers, "metrics").VolumeMounts) != 0 {
		t.Errorf("the metrics sidecar must be left alone")
	}
	if !equality.Semantic.DeepEqual(db.Args, []string{"--innodb-buffer-pool-size=512M"}) {
		t.Errorf("ConfigFile injection must not touch the args, got %q", db.Args)
	}
	init := findContainer(pod.InitContainers, sv.InitContainerName())
	if init == nil || init.Image != "mariadb:11.4" || len(init.Args) == 0 {
		t.Fatalf("want an init container running mariadb:11.4 that creates the persistent directories, got %+v", init)
	}
	for _, d := range init.Args {
		if !strings.HasPrefix(d, "/var/lib/mysql/") {
			t.Errorf("init container creates %s, which is not on the data volume", d)
		}
	}
	if got.Spec.Template.Annotations[sv.InjectionAnnotation()] == "" {
		t.Errorf("want the config hash annotation %s", sv.InjectionAnnotation())
	}

	cm := &corev1.ConfigMap{}
	if err := e.Client.Get(ctxFor(t), client.ObjectKey{Namespace: ns, Name: cfgVol.ConfigMap.Name}, cm); err != nil {
		t.Fatalf("the drop-in ConfigMap: %v", err)
	}
	data := cm.Data[mysql.DropInFileName]
	for _, want := range []string{"tmpdir", "/var/lib/mysql-tmp", "slave_load_tmpdir", "/var/lib/mysql/.dbtune-scratch.sst/replica-load", "innodb_tmpdir"} {
		if !strings.Contains(data, want) {
			t.Errorf("the drop-in lacks %q:\n%s", want, data)
		}
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Name != "tmp" {
		t.Errorf("the ConfigMap must be owned by the ScratchVolume, got %+v", cm.OwnerReferences)
	}
	for _, c := range []string{v1alpha1.ConditionTargetFound, v1alpha1.ConditionMemoryBudget} {
		if why := conditionIs(t, e, ns, "tmp", c, metav1.ConditionTrue, ""); why != "" {
			t.Error(why)
		}
	}
	if why := conditionIs(t, e, ns, "tmp", v1alpha1.ConditionConflict, metav1.ConditionFalse, ""); why != "" {
		t.Error(why)
	}
	status := getSV(t, e, ns, "tmp").Status
	if status.InjectedTargets != 1 || len(status.Targets) != 1 || status.Targets[0].Flavor != v1alpha1.FlavorMariaDB ||
		status.Targets[0].Container != "mariadb" || status.Targets[0].ConfigHash == "" {
		t.Errorf("unexpected target status %+v", status)
	}
}

func TestTargetCreatedAfterTheScratchVolume(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, scratchVolume(ns, "early", "later"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "early", v1alpha1.ConditionTargetFound, metav1.ConditionFalse, "TargetNotFound")
	})
	if c := condition(t, e, ns, "early", v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "as soon as it appears") {
		t.Errorf("Ready should say the target will be injected when it appears, got %+v", c)
	}
	create(t, e, mariadbStatefulSet(ns, "later"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "early", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
}

func TestSelectorPicksUpNewStatefulSets(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sv := scratchVolume(ns, "fleet", "")
	sv.Spec.Target = v1alpha1.ScratchTarget{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "db"}}}
	create(t, e, mariadbStatefulSet(ns, "a"), sv)
	testenv.Eventually(t, waitTimeout, func() string { return injectedCount(t, e, ns, 1) })
	create(t, e, mariadbStatefulSet(ns, "b"))
	testenv.Eventually(t, waitTimeout, func() string { return injectedCount(t, e, ns, 2) })

	// Relabelling a StatefulSet out of the selector reverts it.
	updateSTS(t, e, ns, "b", func(b *appsv1.StatefulSet) { b.Labels["tier"] = "cache" })
	testenv.Eventually(t, waitTimeout, func() string {
		if _, ok := getSTS(t, e, ns, "b").Spec.Template.Annotations[sv.InjectionAnnotation()]; ok {
			return "b still carries the injection after leaving the selector"
		}
		return injectedCount(t, e, ns, 1)
	})
}

// injectedCount tells how the ScratchVolume "fleet" of ns misses want injected targets.
func injectedCount(t *testing.T, e *testenv.Env, ns string, want int32) string {
	sv := getSV(t, e, ns, "fleet")
	if sv.Status.InjectedTargets != want {
		return fmt.Sprintf("%d targets injected, want %d", sv.Status.InjectedTargets, want)
	}
	return ""
}

// TestBlockedInjectionsLeaveTheStatefulSetUntouched covers every problem the user can cause: the
// StatefulSet must stay byte-identical and a condition must say what to change.
func TestBlockedInjectionsLeaveTheStatefulSetUntouched(t *testing.T) {
	e := startManager(t)
	cases := []struct {
		name      string
		mutateSTS func(*appsv1.StatefulSet)
		mutateSV  func(*v1alpha1.ScratchVolume)
		condition string
		reason    string
		message   string
	}{
		{"mount path in use", func(s *appsv1.StatefulSet) {
			c := &s.Spec.Template.Spec.Containers[0]
			s.Spec.Template.Spec.Volumes = append(s.Spec.Template.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/var/lib/mysql-tmp"})
		}, nil, v1alpha1.ConditionConflict, "MountPathInUse", "already mounts volume \"tmp\" at /var/lib/mysql-tmp"},
		{"volume name in use", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Volumes = append(s.Spec.Template.Spec.Volumes, corev1.Volume{Name: "dbtune-scratch-sv", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}, nil, v1alpha1.ConditionConflict, "VolumeNameInUse", "already has a volume named"},
		{"tmpdir already in args", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Args = append(s.Spec.Template.Spec.Containers[0].Args, "--tmpdir=/tmp")
		}, nil, v1alpha1.ConditionConflict, "OverriddenByArgs", "--tmpdir"},
		{"memory limit too low", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
		}, nil, v1alpha1.ConditionMemoryBudget, "MemoryLimitTooLow", "raise the limit by 256Mi"},
		{"unknown image", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Image = "registry.example.com/acme/db:7"
		}, func(sv *v1alpha1.ScratchVolume) { sv.Spec.Container = "mariadb" }, v1alpha1.ConditionInjected, "UnknownImage", "spec.mysql.flavor"},
		{"container not found", nil, func(sv *v1alpha1.ScratchVolume) { sv.Spec.Container = "mysql" },
			v1alpha1.ConditionInjected, "ContainerNotFound", `no container "mysql"`},
		{"no database container", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Image = "busybox:1.36"
		}, nil, v1alpha1.ConditionInjected, "ContainerNotFound", "no container runs a MySQL-compatible image"},
		{"config dir is a mount", func(s *appsv1.StatefulSet) {
			c := &s.Spec.Template.Spec.Containers[0]
			s.Spec.Template.Spec.Volumes = append(s.Spec.Template.Spec.Volumes, corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "my-conf"}}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "conf", MountPath: "/etc/mysql/conf.d"})
		}, nil, v1alpha1.ConditionConflict, "ConfigDirUnusable", "mounts volume \"conf\" at /etc/mysql/conf.d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := e.Namespace(t)
			sts := mariadbStatefulSet(ns, "db")
			if tc.mutateSTS != nil {
				tc.mutateSTS(sts)
			}
			sv := scratchVolume(ns, "sv", "db")
			if tc.mutateSV != nil {
				tc.mutateSV(sv)
			}
			create(t, e, sts)
			before := getSTS(t, e, ns, "db")
			create(t, e, sv)
			testenv.Eventually(t, waitTimeout, func() string {
				return conditionIs(t, e, ns, "sv", tc.condition, conditionStatus(tc.condition), tc.reason)
			})
			if c := condition(t, e, ns, "sv", tc.condition); !strings.Contains(c.Message, tc.message) {
				t.Errorf("the %s message should mention %q: %q", tc.condition, tc.message, c.Message)
			}
			if why := conditionIs(t, e, ns, "sv", v1alpha1.ConditionReady, metav1.ConditionFalse, ""); why != "" {
				t.Error(why)
			}
			after := getSTS(t, e, ns, "db")
			if after.ResourceVersion != before.ResourceVersion || !equality.Semantic.DeepEqual(before.Spec, after.Spec) {
				t.Errorf("the StatefulSet was modified")
			}
			if n := writes.get(ns); n != 0 {
				t.Errorf("the controller wrote the StatefulSet %d times", n)
			}
			assertEvent(t, ns, "sv", "InjectionBlocked")
		})
	}
}

func conditionStatus(typ string) metav1.ConditionStatus {
	if typ == v1alpha1.ConditionConflict {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func TestOlderScratchVolumeWinsAConflict(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "first", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "first", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	before := getSTS(t, e, ns, "db")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have a one-second resolution
	second := scratchVolume(ns, "second", "db")
	second.Spec.Size = resource.MustParse("256Mi")
	create(t, e, second)
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "second", v1alpha1.ConditionConflict, metav1.ConditionTrue, "ScratchVolumeConflict")
	})
	if c := condition(t, e, ns, "second", v1alpha1.ConditionConflict); !strings.Contains(c.Message, "ScratchVolume first, which is older") {
		t.Errorf("the conflict should name the winner: %q", c.Message)
	}
	after := getSTS(t, e, ns, "db")
	if !equality.Semantic.DeepEqual(before.Spec, after.Spec) {
		t.Errorf("the losing ScratchVolume changed the StatefulSet")
	}
	if why := conditionIs(t, e, ns, "first", v1alpha1.ConditionConflict, metav1.ConditionFalse, ""); why != "" {
		t.Error(why)
	}
}

func TestDeletingTheScratchVolumeRestoresTheOriginalTemplate(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"))
	original := getSTS(t, e, ns, "db").Spec.Template
	sv := scratchVolume(ns, "tmp", "db")
	create(t, e, sv)
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	if equality.Semantic.DeepEqual(original, getSTS(t, e, ns, "db").Spec.Template) {
		t.Fatal("the template did not change on injection")
	}
	if err := e.Client.Delete(ctxFor(t), sv); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		err := e.Client.Get(ctxFor(t), client.ObjectKeyFromObject(sv), &v1alpha1.ScratchVolume{})
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("the ScratchVolume is still there (%v)", err)
		}
		return ""
	})
	got := getSTS(t, e, ns, "db").Spec.Template
	if !equality.Semantic.DeepEqual(original, got) {
		t.Errorf("the reverted template differs from the original:\noriginal: %+v\ngot:      %+v", original, got)
	}
	cms := &corev1.ConfigMapList{}
	if err := e.Client.List(ctxFor(t), cms, client.InNamespace(ns), client.MatchingLabels{v1alpha1.ScratchVolumeLabel: "tmp"}); err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 {
		t.Errorf("the drop-in ConfigMap was not removed")
	}
}

func TestNoWritesWhenNothingChanged(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	time.Sleep(time.Second)
	settled := writes.get(ns)
	if settled != 1 {
		t.Errorf("the injection took %d StatefulSet writes, want 1", settled)
	}
	// Provoke reconciles: StatefulSet edits elsewhere, ScratchVolume label changes.
	for i := range 5 {
		updateSTS(t, e, ns, "db", func(sts *appsv1.StatefulSet) { sts.Labels[fmt.Sprintf("touch-%d", i)] = "x" })
		updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Labels = map[string]string{"touch": fmt.Sprint(i)} })
	}
	testenv.Consistently(t, 2*time.Second, func() string {
		if n := writes.get(ns); n != settled {
			return fmt.Sprintf("%d StatefulSet writes after reconciles of an unchanged object", n-settled)
		}
		return ""
	})
}

func TestSizeChangeRollsThePods(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sv := scratchVolume(ns, "tmp", "db")
	create(t, e, mariadbStatefulSet(ns, "db"), sv)
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	hash := getSTS(t, e, ns, "db").Spec.Template.Annotations[sv.InjectionAnnotation()]
	updateSV(t, e, ns, func(cur *v1alpha1.ScratchVolume) { cur.Spec.Size = resource.MustParse("768Mi") })
	testenv.Eventually(t, waitTimeout, func() string {
		sts := getSTS(t, e, ns, "db")
		v := findVolume(&sts.Spec.Template.Spec, sv.VolumeName())
		if v == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse("768Mi")) != 0 {
			return "sizeLimit not updated"
		}
		if sts.Spec.Template.Annotations[sv.InjectionAnnotation()] == hash {
			return "the config hash did not change, so the pods would not roll"
		}
		return ""
	})
}

// TestDataDirectoryOnNoVolume: without a persistent volume the replica load directory must still not
// land on the RAM volume (it would default to tmpdir); a disk-backed emptyDir takes it, and the
// Injected condition says so.
func TestDataDirectoryOnNoVolume(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	sts.Spec.Template.Spec.Containers[0].VolumeMounts = nil
	sts.Spec.VolumeClaimTemplates = nil
	sv := scratchVolume(ns, "tmp", "db")
	create(t, e, sts, sv)
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	if c := condition(t, e, ns, "tmp", v1alpha1.ConditionInjected); !strings.Contains(c.Message, "mount a volumeClaimTemplate at /var/lib/mysql") {
		t.Errorf("the Injected condition should warn about the missing volume: %q", c.Message)
	}
	got := getSTS(t, e, ns, "db")
	disk := findVolume(&got.Spec.Template.Spec, sv.DiskVolumeName())
	if disk == nil || disk.EmptyDir == nil || disk.EmptyDir.Medium != corev1.StorageMediumDefault {
		t.Fatalf("want a disk-backed emptyDir %s, got %+v", sv.DiskVolumeName(), disk)
	}
	cm := &corev1.ConfigMap{}
	if err := e.Client.Get(ctxFor(t), client.ObjectKey{Namespace: ns, Name: sv.ConfigMapName("db")}, cm); err != nil {
		t.Fatal(err)
	}
	if data := cm.Data[mysql.DropInFileName]; !strings.Contains(data, "slave_load_tmpdir = "+v1alpha1.DiskFallbackMountPath) &&
		!strings.Contains(data, "slave_load_tmpdir="+v1alpha1.DiskFallbackMountPath) {
		t.Errorf("the replica load directory must be on the disk-backed volume:\n%s", data)
	}
}
