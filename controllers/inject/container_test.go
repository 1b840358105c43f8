package inject_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// result is what NewPlan decided, reduced to what a table compares.
type result struct {
	Container string
	Problem   *inject.Problem
}

func planResult(t *testing.T, sv *v1alpha1.ScratchVolume, opts ...stsOption) result {
	t.Helper()
	p, prob := problemOf(t, sv, withSTS(mysqlSTS(), opts...))
	if prob != nil {
		return result{Problem: prob}
	}
	return result{Container: p.Container}
}

func ctr(name, image string) corev1.Container { return corev1.Container{Name: name, Image: image} }

func TestContainerSelection(t *testing.T) {
	exporter := ctr("metrics", "prom/mysqld-exporter:v0.15.1")
	xtrabackup := ctr("xtrabackup", "percona/percona-xtrabackup:8.0")
	router := ctr("router", "container-registry.oracle.com/mysql/community-router:8.0")
	busybox := ctr("shell", "busybox:1.36")
	ignore := accounting(v1alpha1.MemoryIgnore)
	tests := []struct {
		name string
		sv   *v1alpha1.ScratchVolume
		sts  []stsOption
		want result
	}{{
		name: "spec.container names the database",
		sv:   scratchVolume(ignore, container(dbContainer)),
		sts:  []stsOption{sidecars(exporter, busybox)},
		want: result{Container: dbContainer},
	}, {
		// spec.container wins over detection, even for an image detection would not pick.
		name: "spec.container names a sidecar for MySQLTmpdir",
		sv:   scratchVolume(ignore, container("metrics")),
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonUnknownImage, Message: `container metrics: cannot tell the database flavor and version of image "prom/mysqld-exporter:v0.15.1": repository "prom/mysqld-exporter" is not a MySQL, MariaDB or Percona image this operator knows; set spec.mysql.flavor and spec.mysql.version`}},
	}, {
		name: "spec.container names no container",
		sv:   scratchVolume(ignore, container("mysqld")),
		sts:  []stsOption{sidecars(exporter, busybox)},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonContainerNotFound,
			Message: `the pod template has no container "mysqld" (it has db, metrics, shell): fix spec.container`}},
	}, {
		name: "spec.container does not pick an init container",
		sv:   scratchVolume(ignore, container("wait-for-dns")),
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonContainerNotFound,
			Message: `the pod template has no container "wait-for-dns" (it has db, metrics): fix spec.container`}},
	}, {
		name: "detected among exporter, backup, router and shell sidecars",
		sv:   scratchVolume(ignore),
		sts:  []stsOption{sidecars(exporter, xtrabackup, router, busybox)},
		want: result{Container: dbContainer},
	}, {
		name: "detected when the database is not the first container",
		sv:   scratchVolume(ignore),
		sts: []stsOption{func(s *appsv1.StatefulSet) {
			cs := s.Spec.Template.Spec.Containers
			s.Spec.Template.Spec.Containers = []corev1.Container{cs[1], cs[0]}
		}},
		want: result{Container: dbContainer},
	}, {
		name: "two database containers are ambiguous",
		sv:   scratchVolume(ignore),
		sts:  []stsOption{sidecars(exporter, ctr("legacy", "mariadb:10.11"))},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonContainerAmbiguous,
			Message: "several containers run a MySQL-compatible image (db=mysql:8.0.36, legacy=mariadb:10.11): set spec.container"}},
	}, {
		name: "spec.container settles the ambiguity",
		sv:   scratchVolume(ignore, container("legacy")),
		sts:  []stsOption{sidecars(exporter, ctr("legacy", "mariadb:10.11"))},
		want: result{Container: "legacy"},
	}, {
		name: "no database container",
		sv:   scratchVolume(ignore),
		sts:  []stsOption{onlyContainers(ctr("app", "registry.example.com/acme/db-server:2024.1"), exporter)},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonContainerNotFound,
			Message: "no container runs a MySQL-compatible image (containers: app=registry.example.com/acme/db-server:2024.1, metrics=prom/mysqld-exporter:v0.15.1): set spec.container, and spec.mysql.flavor and version for a custom image"}},
	}, {
		name: "a database image in an init container only is not detected",
		sv:   scratchVolume(ignore),
		sts: []stsOption{onlyContainers(busybox), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.InitContainers = []corev1.Container{ctr("restore", "mysql:8.0.36")}
		}},
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonContainerNotFound,
			Message: "no container runs a MySQL-compatible image (containers: shell=busybox:1.36): set spec.container, and spec.mysql.flavor and version for a custom image"}},
	}, {
		name: "Generic with one container takes it",
		sv:   scratchVolume(ignore, generic()),
		sts:  []stsOption{onlyContainers(busybox)},
		want: result{Container: "shell"},
	}, {
		name: "Generic with two containers is ambiguous, even with one database",
		sv:   scratchVolume(ignore, generic()),
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonContainerAmbiguous,
			Message: "the pod template has 2 containers (db, metrics): set spec.container to the one that gets the volume"}},
	}, {
		name: "Generic with two containers and spec.container",
		sv:   scratchVolume(ignore, generic(), container("metrics")),
		want: result{Container: "metrics"},
	}, {
		name: "Generic with spec.container naming no container",
		sv:   scratchVolume(ignore, generic(), container("sidecar")),
		want: result{Problem: &inject.Problem{Reason: v1alpha1.ReasonContainerNotFound,
			Message: `the pod template has no container "sidecar" (it has db, metrics): fix spec.container`}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, planResult(t, tt.sv, tt.sts...)); diff != "" {
				t.Errorf("NewPlan (-want +got):\n%s", diff)
			}
		})
	}
}
