package inject_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// TestHashStable: the same input always gives the same hash, also from a deep copy, and the
// injection annotation carries it.
func TestHashStable(t *testing.T) {
	sv, sts := scratchVolume(), mysqlSTS()
	first := plan(t, sv, sts)
	for range 3 {
		if got := plan(t, sv.DeepCopy(), sts.DeepCopy()).Hash; got != first.Hash {
			t.Fatalf("hash changed between runs: %s then %s", first.Hash, got)
		}
	}
	if len(first.Hash) != 16 {
		t.Errorf("hash %q: want 16 hex digits", first.Hash)
	}
	tmpl := inject.Inject(sts.Spec.Template, []*inject.Plan{first})
	if got := tmpl.Annotations[sv.InjectionAnnotation()]; got != first.Hash {
		t.Errorf("annotation %s = %q, want the plan hash %q", sv.InjectionAnnotation(), got, first.Hash)
	}
}

// TestHashChanges: every change to what is injected changes the hash (and so rolls the pods);
// changes that inject nothing different keep it (and so roll nothing).
func TestHashChanges(t *testing.T) {
	base := plan(t, scratchVolume(), mysqlSTS()).Hash
	tests := []struct {
		name    string
		sv      *v1alpha1.ScratchVolume
		sts     *appsv1.StatefulSet
		changes bool
	}{
		{"size", scratchVolume(size("1Gi")), mysqlSTS(), true},
		{"mount path", scratchVolume(mountPath("/mnt/ram")), mysqlSTS(), true},
		{"image patch release", scratchVolume(), statefulSet("mysql:8.0.37", dataClaim, "/var/lib/mysql"), true},
		{"image across the 8.0.26 rename", scratchVolume(), statefulSet("mysql:8.0.25", dataClaim, "/var/lib/mysql"), true},
		{"image flavor", scratchVolume(), statefulSet("mariadb:11.4", dataClaim, "/var/lib/mysql"), true},
		{"image registry", scratchVolume(), statefulSet("registry.example.com/db/mysql:8.0.36", dataClaim, "/var/lib/mysql"), true},
		{"injection mode", scratchVolume(injection(v1alpha1.InjectionArgs)), mysqlSTS(), true},
		{"memory Reserve", scratchVolume(accounting(v1alpha1.MemoryReserve)), mysqlSTS(), true},
		{"innodb_tmpdir placement", scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.InnoDBTmpdir = v1alpha1.InnoDBTmpdirMemory })), mysqlSTS(), true},
		{"replica load dir", scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.ReplicaLoadDir = "/var/lib/mysql/.rl" })), mysqlSTS(), true},
		{"ScratchVolume name", scratchVolume(named("tmp2")), mysqlSTS(), true},
		{"target StatefulSet name (its ConfigMap)", scratchVolume(), withSTS(mysqlSTS(), func(s *appsv1.StatefulSet) { s.Name = "db2" }), true},
		{"data volume mount", scratchVolume(), statefulSet("mysql:8.0.36", dataClaim, "/var/lib/mysql-data"), true},
		{"data volume kind: none", scratchVolume(), statefulSet("mysql:8.0.36", dataNone, "/var/lib/mysql"), true},
		{"database security context", scratchVolume(), withSTS(mysqlSTS(), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptrTo[int64](999)}
		}), true},

		{"memory Ignore", scratchVolume(accounting(v1alpha1.MemoryIgnore)), mysqlSTS(), false},
		{"headroom", scratchVolume(headroom("1Gi")), mysqlSTS(), false},
		{"replicas", scratchVolume(), withSTS(mysqlSTS(), func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptrTo[int32](5) }), false},
		{"user args other than ours", scratchVolume(), withSTS(mysqlSTS(), dbArgs("--innodb-buffer-pool-size=2G")), false},
		{"user memory", scratchVolume(), withSTS(mysqlSTS(), dbMemory("3Gi", "6Gi")), false},
		{"sidecar image", scratchVolume(), withSTS(mysqlSTS(), sidecars(ctr("metrics", "prom/mysqld-exporter:v0.16.0"))), false},
		{"pod labels", scratchVolume(), withSTS(mysqlSTS(), func(s *appsv1.StatefulSet) { s.Spec.Template.Labels["team"] = "payments" }), false},
		{"same size, other spelling", scratchVolume(size("0.5Gi")), mysqlSTS(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan(t, tt.sv, tt.sts).Hash
			if (got != base) != tt.changes {
				t.Errorf("hash %s vs base %s: want changed=%t", got, base, tt.changes)
			}
		})
	}
}

// TestHashChangesPerMode: each injection mode and accounting gives its own hash on every image.
func TestHashChangesPerMode(t *testing.T) {
	for _, img := range images {
		sts := statefulSet(img.ref, dataClaim, img.dataMount)
		seen := map[string]string{}
		for _, sv := range []*v1alpha1.ScratchVolume{
			scratchVolume(), scratchVolume(injection(v1alpha1.InjectionArgs)),
			scratchVolume(accounting(v1alpha1.MemoryReserve)), scratchVolume(injection(v1alpha1.InjectionArgs), accounting(v1alpha1.MemoryReserve)),
		} {
			p, prob := problemOf(t, sv, sts)
			if prob != nil {
				continue
			}
			key := string(sv.Spec.MySQL.Injection) + "/" + string(sv.Spec.Memory.Accounting)
			if other, dup := seen[p.Hash]; dup {
				t.Errorf("%s: %s and %s share hash %s", img.ref, other, key, p.Hash)
			}
			seen[p.Hash] = key
		}
	}
}
