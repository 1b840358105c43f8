package inject_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

func TestCollisions(t *testing.T) {
	args := injection(v1alpha1.InjectionArgs)
	emptyDir := func(name string) *corev1.Volume {
		return &corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	overridden := func(flags string) result {
		return result{Problem: &inject.Problem{Reason: v1alpha1.ReasonOverriddenByArgs, Message: "container db passes " + flags +
			" on its command line, which would override the drop-in file: remove it, or set spec.mysql.injection: Args"}}
	}
	alreadyPasses := func(flag string) result {
		return result{Problem: &inject.Problem{Reason: v1alpha1.ReasonOverriddenByArgs,
			Message: "container db already passes --" + flag + ": remove it from the args, the ScratchVolume sets it"}}
	}
	ok := result{Container: dbContainer}
	tests := []struct {
		name string
		sv   *v1alpha1.ScratchVolume
		sts  []stsOption
		want result
	}{{
		name: "volume name taken",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "dbtune-scratch-tmp", MountPath: "/cache"}, emptyDir("dbtune-scratch-tmp"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonVolumeNameInUse,
			Message: `the pod template already has a volume named "dbtune-scratch-tmp": rename it, or rename the ScratchVolume`}},
	}, {
		name: "volume name taken by a volume no container mounts",
		sv:   scratchVolume(),
		sts: []stsOption{func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Volumes = append(s.Spec.Template.Spec.Volumes, *emptyDir("dbtune-scratch-tmp"))
		}},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonVolumeNameInUse,
			Message: `the pod template already has a volume named "dbtune-scratch-tmp": rename it, or rename the ScratchVolume`}},
	}, {
		name: "mount path taken",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "cache", MountPath: "/var/lib/mysql-tmp"}, emptyDir("cache"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonMountPathInUse,
			Message: `container db already mounts volume "cache" at /var/lib/mysql-tmp: set spec.mountPath to a free directory`}},
	}, {
		name: "mount path taken, spelled with a trailing slash",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "cache", MountPath: "/var/lib/mysql-tmp/"}, emptyDir("cache"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonMountPathInUse,
			Message: `container db already mounts volume "cache" at /var/lib/mysql-tmp: set spec.mountPath to a free directory`}},
	}, {
		name: "custom mount path taken",
		sv:   scratchVolume(mountPath("/cache")),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "cache", MountPath: "/cache"}, emptyDir("cache"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonMountPathInUse,
			Message: `container db already mounts volume "cache" at /cache: set spec.mountPath to a free directory`}},
	}, {
		name: "mount path used in another container only",
		sv:   scratchVolume(),
		sts: []stsOption{func(s *appsv1.StatefulSet) {
			m := &s.Spec.Template.Spec.Containers[1]
			m.VolumeMounts = append(m.VolumeMounts, corev1.VolumeMount{Name: "cache", MountPath: "/var/lib/mysql-tmp"})
			s.Spec.Template.Spec.Volumes = append(s.Spec.Template.Spec.Volumes, *emptyDir("cache"))
		}},
		want: ok,
	}, {
		name: "include directory mounted by the user",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "my-cnf", MountPath: "/etc/mysql/conf.d"}, configMapVolume("my-cnf"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonConfigDirUnusable,
			Message: `container db mounts volume "my-cnf" at /etc/mysql/conf.d, a configMap volume, which kubelet always mounts read-only, so the drop-in's mount point cannot be created in /etc/mysql/conf.d: add the drop-in to that volume yourself, set spec.mysql.configDir to another included directory, or set spec.mysql.injection: Args`}},
	}, {
		name: "parent of the include directory mounted by the user",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "etc-mysql", MountPath: "/etc/mysql"}, configMapVolume("etc-mysql"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonConfigDirUnusable,
			Message: `container db mounts volume "etc-mysql" at /etc/mysql, a configMap volume, which kubelet always mounts read-only, so the drop-in's mount point cannot be created in /etc/mysql/conf.d: add the drop-in to that volume yourself, set spec.mysql.configDir to another included directory, or set spec.mysql.injection: Args`}},
	}, {
		name: "include directory in a writable emptyDir an init container fills",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "conf", MountPath: "/etc/mysql/conf.d"}, emptyDir("conf"))},
		want: ok,
	}, {
		name: "include directory in a RAM emptyDir",
		sv:   scratchVolume(),
		sts: []stsOption{dbMount(corev1.VolumeMount{Name: "conf", MountPath: "/etc/mysql/conf.d"},
			&corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})},
		want: ok,
	}, {
		name: "include directory in a subPath of an emptyDir",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "conf", MountPath: "/etc/mysql/conf.d", SubPath: "conf.d"}, emptyDir("conf"))},
		want: ok,
	}, {
		name: "parent of the include directory in an emptyDir",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "etc-mysql", MountPath: "/etc/mysql"}, emptyDir("etc-mysql"))},
		want: ok,
	}, {
		name: "an emptyDir at the include directory inside a ConfigMap at its parent",
		sv:   scratchVolume(),
		sts: []stsOption{
			dbMount(corev1.VolumeMount{Name: "etc-mysql", MountPath: "/etc/mysql"}, configMapVolume("etc-mysql")),
			dbMount(corev1.VolumeMount{Name: "conf", MountPath: "/etc/mysql/conf.d"}, emptyDir("conf")),
		},
		want: ok,
	}, {
		name: "include directory in an emptyDir mounted read-only",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "conf", MountPath: "/etc/mysql/conf.d", ReadOnly: true}, emptyDir("conf"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonConfigDirUnusable,
			Message: `container db mounts volume "conf" read-only at /etc/mysql/conf.d, so the drop-in's mount point cannot be created in /etc/mysql/conf.d: add the drop-in to that volume yourself, set spec.mysql.configDir to another included directory, or set spec.mysql.injection: Args`}},
	}, {
		name: "include directory in a Secret",
		sv:   scratchVolume(),
		sts: []stsOption{dbMount(corev1.VolumeMount{Name: "conf", MountPath: "/etc/mysql/conf.d"},
			&corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "conf"}}})},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonConfigDirUnusable,
			Message: `container db mounts volume "conf" at /etc/mysql/conf.d, a secret volume, which kubelet always mounts read-only, so the drop-in's mount point cannot be created in /etc/mysql/conf.d: add the drop-in to that volume yourself, set spec.mysql.configDir to another included directory, or set spec.mysql.injection: Args`}},
	}, {
		name: "include directory on a claim",
		sv:   scratchVolume(),
		sts: []stsOption{dbMount(corev1.VolumeMount{Name: "conf", MountPath: "/etc/mysql/conf.d"},
			&corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "conf"}}})},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonConfigDirUnusable,
			Message: `container db mounts volume "conf" at /etc/mysql/conf.d, a persistentVolumeClaim volume: the drop-in's mount point, an empty file, would be created on that storage and stay there after the pod and the ScratchVolume are gone (only an emptyDir is written into): add the drop-in to that volume yourself, set spec.mysql.configDir to another included directory, or set spec.mysql.injection: Args`}},
	}, {
		name: "include directory mounted by the user, Args mode does not need it",
		sv:   scratchVolume(args),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "my-cnf", MountPath: "/etc/mysql/conf.d"}, configMapVolume("my-cnf"))},
		want: ok,
	}, {
		name: "one user file in the include directory is fine",
		sv:   scratchVolume(),
		sts: []stsOption{dbMount(corev1.VolumeMount{Name: "my-cnf", MountPath: "/etc/mysql/conf.d/tuning.cnf", SubPath: "tuning.cnf"},
			configMapVolume("my-cnf"))},
		want: ok,
	}, {
		name: "ConfigFile with --tmpdir in args",
		sv:   scratchVolume(),
		sts:  []stsOption{dbArgs("--tmpdir=/tmp")},
		want: overridden("--tmpdir"),
	}, {
		name: "ConfigFile with --tmpdir as two args in the command",
		sv:   scratchVolume(),
		sts: []stsOption{dbArgs(), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Command = []string{"mysqld", "--tmpdir", "/tmp"}
		}},
		want: overridden("--tmpdir"),
	}, {
		name: "ConfigFile with --loose-innodb_tmpdir in args",
		sv:   scratchVolume(),
		sts:  []stsOption{dbArgs("--loose-innodb_tmpdir=/tmp")},
		want: overridden("--innodb-tmpdir"),
	}, {
		name: "ConfigFile with both replica load names and --defaults-file",
		sv:   scratchVolume(),
		sts:  []stsOption{dbArgs("--defaults-file=/etc/my-own.cnf", "--slave-load-tmpdir=/x", "--replica_load_tmpdir=/y")},
		want: overridden("--replica-load-tmpdir, --slave-load-tmpdir, --defaults-file"),
	}, {
		name: "ConfigFile with --defaults-file",
		sv:   scratchVolume(),
		sts:  []stsOption{dbArgs("--defaults-file=/etc/my-own.cnf")},
		want: overridden("--defaults-file"),
	}, {
		name: "ConfigFile with --no-defaults",
		sv:   scratchVolume(),
		sts:  []stsOption{dbArgs("--no-defaults")},
		want: overridden("--no-defaults"),
	}, {
		name: "ConfigFile with --defaults-extra-file still reads the include directory",
		sv:   scratchVolume(),
		sts:  []stsOption{dbArgs("--defaults-extra-file=/etc/extra.cnf")},
		want: ok,
	}, {
		name: "Args with --tmpdir already passed",
		sv:   scratchVolume(args),
		sts:  []stsOption{dbArgs("--tmpdir=/tmp")},
		want: alreadyPasses("tmpdir"),
	}, {
		name: "Args with --replica-load-tmpdir already passed, underscores and a separate value",
		sv:   scratchVolume(args),
		sts:  []stsOption{dbArgs("--replica_load_tmpdir", "/var/lib/mysql/rl")},
		want: alreadyPasses("replica-load-tmpdir"),
	}, {
		name: "Args with --innodb-tmpdir already passed",
		sv:   scratchVolume(args),
		sts:  []stsOption{dbArgs("--innodb-tmpdir=/var/lib/mysql/ddl")},
		want: alreadyPasses("innodb-tmpdir"),
	}, {
		name: "Args with --defaults-file is fine: flags beat every option file",
		sv:   scratchVolume(args),
		sts:  []stsOption{dbArgs("--defaults-file=/etc/my-own.cnf")},
		want: ok,
	}, {
		name: "drop-in file path taken by a user mount",
		sv:   scratchVolume(),
		sts: []stsOption{dbMount(corev1.VolumeMount{Name: "my-cnf", MountPath: "/etc/mysql/conf.d/zz-dbtune-scratch.cnf", SubPath: "x.cnf"},
			configMapVolume("my-cnf"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonMountPathInUse}},
	}, {
		name: "drop-in volume name taken",
		sv:   scratchVolume(),
		sts:  []stsOption{dbMount(corev1.VolumeMount{Name: "dbtune-mycnf-tmp", MountPath: "/extra"}, emptyDir("dbtune-mycnf-tmp"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonVolumeNameInUse}},
	}, {
		name: "init container name taken",
		sv:   scratchVolume(),
		sts: []stsOption{func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.InitContainers = append(s.Spec.Template.Spec.InitContainers, ctr("dbtune-init-tmp", "busybox:1.36"))
		}},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonVolumeNameInUse}},
	}, {
		name: "disk fallback volume name taken",
		sv:   scratchVolume(),
		sts:  []stsOption{noData(), dbMount(corev1.VolumeMount{Name: "dbtune-disk-tmp", MountPath: "/extra"}, emptyDir("dbtune-disk-tmp"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonVolumeNameInUse}},
	}, {
		name: "disk fallback mount path taken",
		sv:   scratchVolume(),
		sts:  []stsOption{noData(), dbMount(corev1.VolumeMount{Name: "spill", MountPath: v1alpha1.DiskFallbackMountPath}, emptyDir("spill"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonMountPathInUse,
			Message: `container db already mounts volume "spill" at /var/lib/mysql-disk-tmp: mount the data directory on a volumeClaimTemplate`}},
	}, {
		name: "custom mount path on the disk fallback path",
		sv:   scratchVolume(mountPath(v1alpha1.DiskFallbackMountPath)),
		sts:  []stsOption{noData()},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonMountPathInUse,
			Message: "spec.mountPath /var/lib/mysql-disk-tmp is where the disk-backed directories go when the data directory is on no volume: choose another"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planResult(t, tt.sv, tt.sts...)
			if w := tt.want.Problem; w != nil && w.Message == "" {
				// Only the kind of outcome is stated: a Problem, with this reason when one is given.
				if got.Problem == nil || (w.Reason != "" && got.Problem.Reason != w.Reason) {
					t.Errorf("NewPlan = %+v, want a %q problem", got, w.Reason)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NewPlan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCollisionLeavesNothing: a blocked ScratchVolume yields no plan, so nothing of it can reach the
// StatefulSet.
func TestCollisionLeavesNothing(t *testing.T) {
	sts := withSTS(mysqlSTS(), dbArgs("--tmpdir=/tmp"))
	p, err := inject.NewPlan(scratchVolume(), sts, inject.Namespace{})
	if err == nil || p != nil {
		t.Fatalf("NewPlan = %v, %v; want no plan and a problem", p, err)
	}
}
