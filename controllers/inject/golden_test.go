package inject_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatalf("failed to create testdata: %v", err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatalf("failed to write golden file %s: %v", file, err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("failed to read golden file %s (run go test -update to create it): %v", file, err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", file, diff)
	}
}

// injectionCase is one StatefulSet and one ScratchVolume of the golden matrix.
type injectionCase struct {
	name string
	sts  *appsv1.StatefulSet
	sv   *v1alpha1.ScratchVolume
}

// image is a database image and where its data volume is mounted.
type image struct {
	name, ref, dataMount string
}

// images are the references the matrix covers: each supported flavor and packaging, a digest with
// and without a version tag, private registries and floating tags.
var images = []image{
	{"mysql-8.0.36", "mysql:8.0.36", "/var/lib/mysql"},
	{"mysql-5.7", "mysql:5.7", "/var/lib/mysql"},
	{"mysql-8.4", "mysql:8.4", "/var/lib/mysql"},
	{"mariadb-10.11", "mariadb:10.11", "/var/lib/mysql"},
	{"mariadb-11.4", "mariadb:11.4", "/var/lib/mysql"},
	{"percona-server-8.0", "percona/percona-server:8.0", "/var/lib/mysql"},
	{"percona-xtradb-cluster-8.0", "percona/percona-xtradb-cluster:8.0", "/var/lib/mysql"},
	// Bitnami keeps its data in /bitnami/mysql/data and mounts the claim one level up.
	{"bitnami-mysql-8.0", "bitnami/mysql:8.0", "/bitnami/mysql"},
	{"mysql-8.0.36-digest", "mysql:8.0.36@" + testDigest, "/var/lib/mysql"},
	{"mysql-digest-only", "mysql@" + testDigest, "/var/lib/mysql"},
	{"private-registry-mysql", "registry.example.com:5000/db/mysql:8.0.36", "/var/lib/mysql"},
	{"private-mirror-mariadb", "harbor.example.internal/dockerhub/library/mariadb:11.4.2-jammy", "/var/lib/mysql"},
	{"mysql-latest", "mysql:latest", "/var/lib/mysql"},
	{"mysql-untagged", "mysql", "/var/lib/mysql"},
	{"mariadb-latest", "mariadb:latest", "/var/lib/mysql"},
}

var modes = []v1alpha1.InjectionMode{v1alpha1.InjectionConfigFile, v1alpha1.InjectionArgs}

func lower[T ~string](s T) string { return strings.ToLower(string(s)) }

// injectionCases is the golden matrix: every image in both injection modes; every way of storing
// the data directory and every memory accounting in both modes; a Generic volume; a custom mount
// path; and each spec.mysql override.
func injectionCases() []injectionCase {
	var cases []injectionCase
	for _, img := range images {
		for _, m := range modes {
			cases = append(cases, injectionCase{
				name: img.name + "-" + lower(m),
				sts:  statefulSet(img.ref, dataClaim, img.dataMount),
				sv:   scratchVolume(injection(m)),
			})
		}
	}
	for _, m := range modes {
		for _, d := range []dataKind{dataEmptyDir, dataNone, dataMemory} {
			cases = append(cases, injectionCase{
				name: "mysql-8.0.36-" + lower(m) + "-data-" + string(d),
				sts:  statefulSet("mysql:8.0.36", d, "/var/lib/mysql"),
				sv:   scratchVolume(injection(m)),
			})
		}
		for _, a := range []v1alpha1.MemoryAccounting{v1alpha1.MemoryReserve, v1alpha1.MemoryIgnore} {
			cases = append(cases, injectionCase{
				name: "mysql-8.0.36-" + lower(m) + "-memory-" + lower(a),
				sts:  mysqlSTS(),
				sv:   scratchVolume(injection(m), accounting(a)),
			})
		}
	}
	cases = append(cases, specialCases()...)
	cases = append(cases, tempTableCases()...)
	return append(cases, bitnamiCases()...)
}

// tempTableCases cover where MySQL keeps its temporary tables: the session temporary tablespaces
// from 8.0.13 (on the RAM volume unless kept on disk), none before.
func tempTableCases() []injectionCase {
	return []injectionCase{{
		name: "mysql-8.4-configfile-session-temp-tablespaces-disk",
		sts:  statefulSet("mysql:8.4", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.SessionTempTablespaces = v1alpha1.TempTablespacesDisk })),
	}, {
		name: "mysql-8.0.12-configfile",
		sts:  statefulSet("mysql:8.0.12", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(),
	}, {
		name: "mysql-8.0.16-args",
		sts:  statefulSet("mysql:8.0.16", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(injection(v1alpha1.InjectionArgs)),
	}, {
		// Asked for on a server that has none: a note, and the rest goes ahead.
		name: "mariadb-11.4-configfile-session-temp-tablespaces-memory",
		sts:  statefulSet("mariadb:11.4", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.SessionTempTablespaces = v1alpha1.TempTablespacesMemory })),
	}, {
		// A per-session share of a limit the server does not have: a note, and the rest goes ahead.
		name: "mysql-8.4-configfile-session-temp-space-percent",
		sts:  statefulSet("mysql:8.4", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.SessionTempSpacePercent = ptr.To[int32](25) })),
	}, {
		name: "mariadb-11.8-configfile-session-temp-space-percent-limit-none",
		sts:  statefulSet("mariadb:11.8", dataClaim, "/var/lib/mysql"),
		sv: scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) {
			m.SessionTempSpacePercent, m.TempSpaceLimit = ptr.To[int32](25), v1alpha1.TempSpaceLimitNone
		})),
	}, {
		name: "mysql-8.4-args-temptable-max-ram",
		sts:  withSTS(statefulSet("mysql:8.4", dataClaim, "/var/lib/mysql"), dbArgs("--innodb-buffer-pool-size=2G", "--temptable-max-ram=1G")),
		sv:   scratchVolume(injection(v1alpha1.InjectionArgs)),
	}, {
		name: "percona-server-8.0-configfile-overridden-temp-tablespaces-dir",
		sts:  withSTS(statefulSet("percona/percona-server:8.0", dataClaim, "/var/lib/mysql"), dbArgs("--innodb-temp-tablespaces-dir=/tmp/tt")),
		sv:   scratchVolume(),
	}}
}

// bitnamiCases are the Bitnami charts' StatefulSets, in the injection mode chosen for them
// (ExtraFlags) and the ones they refuse, with and without a chart extraFlags value.
func bitnamiCases() []injectionCase {
	auto := func(sv *v1alpha1.ScratchVolume) { sv.Spec.MySQL = nil }
	return []injectionCase{{
		name: "bitnami-chart-mariadb-11.4-extraflags",
		sts:  bitnamiStatefulSet("mariadb", "docker.io/bitnami/mariadb:11.4.5-debian-12-r2", nil),
		sv:   scratchVolume(auto),
	}, {
		name: "bitnami-chart-mysql-8.4-extraflags",
		sts:  bitnamiStatefulSet("mysql", "docker.io/bitnami/mysql:8.4.4-debian-12-r4", nil),
		sv:   scratchVolume(auto),
	}, {
		// The chart's extraFlags stay in front of ours, and come back alone on revert.
		name: "bitnami-chart-mysql-8.0-extraflags-merged",
		sts: bitnamiStatefulSet("mysql", "bitnamilegacy/mysql:8.0.40-debian-12-r1",
			chartExtraFlags("mysql", "--max-connect-errors=1000 --max_connections=500")),
		sv: scratchVolume(auto, accounting(v1alpha1.MemoryReserve)),
	}, {
		name: "bitnami-chart-mariadb-10.11-extraflags-tmpdir-conflict",
		sts: bitnamiStatefulSet("mariadb", "bitnami/mariadb:10.11",
			chartExtraFlags("mariadb", "--tmpdir=/bitnami/mariadb/tmp --max-connections=200")),
		sv: scratchVolume(auto),
	}, {
		name: "bitnami-chart-mariadb-10.11-extraflags-value-from",
		sts: bitnamiStatefulSet("mariadb", "bitnami/mariadb:10.11", &corev1.EnvVar{Name: "MARIADB_EXTRA_FLAGS",
			ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db-flags"}, Key: "flags"}}}),
		sv: scratchVolume(auto),
	}, {
		name: "bitnami-chart-mariadb-11.4-configfile",
		sts:  bitnamiStatefulSet("mariadb", "bitnami/mariadb:11.4", nil),
		sv:   scratchVolume(),
	}, {
		name: "bitnami-chart-mariadb-11.4-mountpath-over-socket-dir",
		sts:  bitnamiStatefulSet("mariadb", "bitnami/mariadb:11.4", nil),
		sv:   scratchVolume(auto, mountPath("/opt/bitnami/mariadb")),
	}, {
		// ExtraFlags names a variable only Bitnami's start script reads.
		name: "mysql-8.4-extraflags",
		sts:  statefulSet("mysql:8.4", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(injection(v1alpha1.InjectionExtraFlags)),
	}}
}

func specialCases() []injectionCase {
	return []injectionCase{{
		name: "mysql-8.0.36-memory-validate-limit-too-low",
		sts:  withSTS(mysqlSTS(), dbMemory("1Gi", "1Gi")),
		sv:   scratchVolume(),
	}, {
		name: "mysql-8.0.36-memory-validate-no-limit",
		sts:  withSTS(mysqlSTS(), dbMemory("2Gi", "")),
		sv:   scratchVolume(),
	}, {
		name: "mariadb-11.4-args-memory-reserve",
		sts:  statefulSet("mariadb:11.4", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(injection(v1alpha1.InjectionArgs), accounting(v1alpha1.MemoryReserve)),
	}, {
		// A Generic volume in a single-container pod: mounted, nothing else.
		name: "generic-single-container",
		sts: withSTS(statefulSet("redis:7.2", dataClaim, "/data"),
			onlyContainers(corev1.Container{Name: "redis", Image: "redis:7.2",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}})),
		sv: scratchVolume(generic()),
	}, {
		// A Generic volume on a sidecar, with its memory reserved there.
		name: "generic-sidecar-memory-reserve",
		sts: withSTS(mysqlSTS(), sidecars(corev1.Container{
			Name: "backup", Image: "percona/percona-xtrabackup:8.0",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resourceQ("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resourceQ("1Gi")},
			},
		})),
		sv: scratchVolume(generic(), container("backup"), mountPath("/backup-tmp"), accounting(v1alpha1.MemoryReserve)),
	}, {
		name: "mysql-8.0.36-configfile-custom-mountpath",
		sts:  mysqlSTS(),
		sv:   scratchVolume(mountPath("/mnt/ram")),
	}, {
		name: "mariadb-11.4-args-custom-mountpath",
		sts:  statefulSet("mariadb:11.4", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(injection(v1alpha1.InjectionArgs), mountPath("/run/mysql-tmp")),
	}, {
		// Bitnami reads no include directory by default; a user whose my.cnf includes one says so.
		name: "bitnami-mysql-8.0-configfile-configdir",
		sts:  statefulSet("bitnami/mysql:8.0", dataClaim, "/bitnami/mysql"),
		sv: scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) {
			m.ConfigDir = "/opt/bitnami/mysql/conf/conf.d"
		})),
	}, {
		name: "mysql-8.0.36-configfile-replicaloaddir",
		sts:  mysqlSTS(),
		sv: scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) {
			m.ReplicaLoadDir = "/var/lib/mysql/.replica-load"
		})),
	}, {
		// The replica load directory is on no volume at all. NewPlan accepts it today: see the
		// golden file, where the init container creates the directory in its own filesystem only.
		name: "mysql-8.0.36-configfile-replicaloaddir-off-volume",
		sts:  mysqlSTS(),
		sv: scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) {
			m.ReplicaLoadDir = "/var/lib/mysql-replica"
		})),
	}, {
		// No data volume, so the must-survive directories go to a disk emptyDir of ours, but the
		// user's replica load directory stays where they put it: in the container's filesystem.
		name: "mysql-8.0.36-configfile-data-none-replicaloaddir",
		sts:  statefulSet("mysql:8.0.36", dataNone, "/var/lib/mysql"),
		sv: scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) {
			m.ReplicaLoadDir = "/var/lib/mysql/.replica-load"
		})),
	}, {
		// A name inside the data directory that does not start with '.' would stop mysqld
		// --initialize on a new replica.
		name: "mysql-8.0.36-configfile-replicaloaddir-visible",
		sts:  mysqlSTS(),
		sv: scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) {
			m.ReplicaLoadDir = "/var/lib/mysql/replica-load"
		})),
	}, {
		name: "mysql-8.0.36-configfile-innodb-memory",
		sts:  mysqlSTS(),
		sv:   scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.InnoDBTmpdir = v1alpha1.InnoDBTmpdirMemory })),
	}, {
		name: "mariadb-10.11-args-innodb-memory",
		sts:  statefulSet("mariadb:10.11", dataClaim, "/var/lib/mysql"),
		sv: scratchVolume(injection(v1alpha1.InjectionArgs),
			mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.InnoDBTmpdir = v1alpha1.InnoDBTmpdirMemory })),
	}, {
		name: "percona-xtradb-cluster-8.0-configfile-innodb-memory",
		sts:  statefulSet("percona/percona-xtradb-cluster:8.0", dataClaim, "/var/lib/mysql"),
		sv:   scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.InnoDBTmpdir = v1alpha1.InnoDBTmpdirMemory })),
	}, {
		// A company build the image name does not reveal, described by flavor and version, with
		// its data directory one level below the claim.
		name: "custom-image-flavor-version-datadir",
		sts:  statefulSet("registry.example.com/acme/db-server:2024.1", dataClaim, "/data"),
		sv: scratchVolume(container(dbContainer), mysqlSpec(func(m *v1alpha1.MySQLSpec) {
			m.Flavor, m.Version, m.DataDir = v1alpha1.FlavorMySQL, "8.0.36", "/data/mysql"
		})),
	}}
}

// outcome is what a golden file holds: the plan's essentials and the injected pod template, or the
// problem that blocks the injection.
type outcome struct {
	Problem  *problem                `json:"problem,omitempty"`
	Plan     *planSummary            `json:"plan,omitempty"`
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`
}

type problem struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type planSummary struct {
	Container     string                  `json:"container"`
	Hash          string                  `json:"hash"`
	Profile       string                  `json:"profile,omitempty"`
	Injection     string                  `json:"injection,omitempty"`
	TempLocations []v1alpha1.TempLocation `json:"tempLocations,omitempty"`
	Notes         []problem               `json:"notes,omitempty"`
	ConfigMap     map[string]string       `json:"configMap,omitempty"`
}

func render(t *testing.T, c injectionCase) []byte {
	t.Helper()
	var out outcome
	p, prob := problemOf(t, c.sv, c.sts)
	if prob != nil {
		out.Problem = &problem{prob.Reason, prob.Message}
	} else {
		s := &planSummary{Container: p.Container, Hash: p.Hash, Injection: string(p.Injection), TempLocations: p.Locations}
		if p.Profile != nil {
			s.Profile = strings.Join([]string{string(p.Profile.Flavor), p.Profile.Version.String(), string(p.Profile.Packaging)}, " ")
		}
		for _, n := range p.Notes {
			s.Notes = append(s.Notes, problem{n.Reason, n.Message})
		}
		if p.ConfigVolume != nil {
			s.ConfigMap = map[string]string{"name": p.ConfigVolume.ConfigMap.Name, p.ConfigKey: p.ConfigData}
		}
		tmpl := inject.Inject(c.sts.Spec.Template, []*inject.Plan{p})
		out.Plan, out.Template = s, &tmpl
	}
	raw, err := yaml.Marshal(out)
	if err != nil {
		t.Fatalf("failed to render %s: %v", c.name, err)
	}
	return raw
}

func TestInjectGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range injectionCases() {
		if seen[c.name] {
			t.Fatalf("duplicate case name %s", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			golden(t, c.name+".yaml", render(t, c))
		})
	}
}

// TestInjectGoldenLayout checks, for every case of the matrix that injects, the rules an expert
// looks for in the golden files, so that a regenerated file cannot quietly break them: tmpdir on the
// RAM volume; the replica load directory, the SST tmpdir and (unless Memory is chosen) innodb_tmpdir
// on a disk the database container mounts, created before it starts; the drop-in one read-only file
// from an optional ConfigMap in the include directory.
func TestInjectGoldenLayout(t *testing.T) {
	for _, c := range injectionCases() {
		p, prob := problemOf(t, c.sv, c.sts)
		if prob != nil || p.Layout == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			l := p.Layout
			spec := c.sv.Spec.MySQL
			if spec == nil {
				spec = &v1alpha1.MySQLSpec{}
			}
			tmpl := inject.Inject(c.sts.Spec.Template, []*inject.Plan{p})
			db := containerIn(&tmpl, p.Container)
			if got := volumeAt(c.sts, &tmpl, db, l.TmpDir); got == nil || got.Name != p.Volume.Name {
				t.Errorf("tmpdir %s is not on the scratch volume %s", l.TmpDir, p.Volume.Name)
			}
			memory := spec.InnoDBTmpdir == v1alpha1.InnoDBTmpdirMemory
			if l.InnoDBTmpDir != "" && (l.InnoDBTmpDir == l.TmpDir) != memory {
				t.Errorf("innodb_tmpdir %s with placement %q", l.InnoDBTmpDir, spec.InnoDBTmpdir)
			}
			wantSession := p.Profile.SessionTempTablespaces && spec.SessionTempTablespaces != v1alpha1.TempTablespacesDisk
			if (l.SessionTempDir == l.TmpDir) != wantSession || (l.SessionTempDir != "" && !wantSession) {
				t.Errorf("innodb_temp_tablespaces_dir %q on a %s %s with placement %q", l.SessionTempDir,
					p.Profile.Flavor, p.Profile.Version, spec.SessionTempTablespaces)
			}
			for _, d := range l.PersistentDirs() {
				checkOnDisk(t, c.sts, &tmpl, db, p, d)
			}
			checkLocations(t, c.sts, &tmpl, db, p)
			if p.ExtraFlags != nil {
				checkExtraFlags(t, c, p, db)
			}
			if p.Profile.GaleraSST && p.Injection == v1alpha1.InjectionConfigFile &&
				!strings.Contains(p.ConfigData, "[sst]\ntmpdir = "+l.SSTTmpDir+"\n") {
				t.Errorf("Galera-capable server without an [sst] tmpdir on disk:\n%s", p.ConfigData)
			}
			if p.ConfigMount != nil {
				checkDropInMount(t, c, p)
			}
		})
	}
}

// checkOnDisk fails unless dir lies on a disk-backed volume of db and exists before mysqld starts:
// either it is the root of a volume, or an init container mounting that volume creates it.
func checkOnDisk(t *testing.T, sts *appsv1.StatefulSet, tmpl *corev1.PodTemplateSpec, db *corev1.Container, p *inject.Plan, dir string) {
	t.Helper()
	v := volumeAt(sts, tmpl, db, dir)
	switch {
	case v == nil:
		t.Errorf("%s is on no volume of container %s", dir, db.Name)
		return
	case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
		t.Errorf("%s is on the memory-backed volume %s", dir, v.Name)
		return
	}
	m := mountAt(db, dir)
	if m.MountPath == dir && m.SubPath == "" {
		return // the volume's root exists before the container starts
	}
	if p.Init == nil || !slices.Contains(p.Init.Args, dir) {
		t.Errorf("no init container creates %s", dir)
		return
	}
	if !slices.ContainsFunc(p.Init.VolumeMounts, func(im corev1.VolumeMount) bool {
		return im.Name == m.Name && im.MountPath == m.MountPath && im.SubPath == m.SubPath
	}) {
		t.Errorf("the init container creates %s without mounting %+v", dir, m)
	}
}

// checkLocations fails unless every location reported in RAM is on the scratch volume and every
// location reported on disk is on no memory volume, and tmpdir is among them.
func checkLocations(t *testing.T, sts *appsv1.StatefulSet, tmpl *corev1.PodTemplateSpec, db *corev1.Container, p *inject.Plan) {
	t.Helper()
	if len(p.Locations) == 0 || p.Locations[0].Data != v1alpha1.TempDataTmpdir {
		t.Errorf("the locations do not start with tmpdir: %+v", p.Locations)
	}
	for _, loc := range p.Locations {
		v := volumeAt(sts, tmpl, db, loc.Path)
		onScratch := v != nil && v.Name == p.Volume.Name
		inRAM := v != nil && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory
		switch loc.Medium {
		case v1alpha1.TempMediumMemory:
			if !onScratch {
				t.Errorf("%s is reported in RAM at %s, which is not on the scratch volume", loc.Data, loc.Path)
			}
		case v1alpha1.TempMediumDisk:
			// The server's own defaults live in the data directory, wherever that is.
			inDataDir := loc.Data == v1alpha1.TempDataGlobalTempTablespace || loc.Data == v1alpha1.TempDataSessionTempTablespaces
			if inRAM && !inDataDir {
				t.Errorf("%s is reported on disk at %s, which is on the memory volume %s", loc.Data, loc.Path, v.Name)
			}
		default:
			t.Errorf("%s has medium %q", loc.Data, loc.Medium)
		}
	}
}

// checkExtraFlags fails unless the extra-flags variable holds the user's words, then exactly the
// planned flags, and the container's args are untouched.
func checkExtraFlags(t *testing.T, c injectionCase, p *inject.Plan, db *corev1.Container) {
	t.Helper()
	var user string
	for _, e := range containerIn(&c.sts.Spec.Template, p.Container).Env {
		if e.Name == p.ExtraFlags.Env {
			user = e.Value
		}
	}
	var got []string
	for _, e := range db.Env {
		if e.Name == p.ExtraFlags.Env {
			got = append(got, e.Value)
		}
	}
	want := strings.TrimSpace(user + " " + strings.Join(p.ExtraFlags.Flags, " "))
	if len(got) != 1 || got[0] != want {
		t.Errorf("%s = %q, want exactly one %q", p.ExtraFlags.Env, got, want)
	}
	if !slices.Equal(db.Args, containerIn(&c.sts.Spec.Template, p.Container).Args) {
		t.Errorf("ExtraFlags injection changed the args: %q", db.Args)
	}
}

// checkDropInMount fails unless the drop-in is one read-only file, from an optional ConfigMap, in
// the include directory.
func checkDropInMount(t *testing.T, c injectionCase, p *inject.Plan) {
	t.Helper()
	m := *p.ConfigMount
	dir := p.Profile.ConfigDir
	if m := c.sv.Spec.MySQL; m != nil && m.ConfigDir != "" {
		dir = string(m.ConfigDir)
	}
	if !m.ReadOnly || m.SubPath == "" || m.MountPath != dir+"/"+m.SubPath || !strings.HasSuffix(m.SubPath, ".cnf") {
		t.Errorf("drop-in mount %+v: want one read-only .cnf file in %s", m, dir)
	}
	if cm := p.ConfigVolume.ConfigMap; cm == nil || cm.Optional == nil || !*cm.Optional ||
		len(cm.Items) != 1 || cm.Items[0].Path != m.SubPath {
		t.Errorf("drop-in volume %+v: want an optional ConfigMap projecting exactly %s", p.ConfigVolume, m.SubPath)
	}
}

// mountAt is the container's deepest mount holding dir.
func mountAt(c *corev1.Container, dir string) *corev1.VolumeMount {
	var best *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		if (dir == m.MountPath || strings.HasPrefix(dir, m.MountPath+"/")) && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = m
		}
	}
	return best
}

// volumeAt is the volume behind mountAt. A volumeClaimTemplate is returned as a volume with no
// source: a disk that outlives the pod.
func volumeAt(sts *appsv1.StatefulSet, tmpl *corev1.PodTemplateSpec, c *corev1.Container, dir string) *corev1.Volume {
	m := mountAt(c, dir)
	if m == nil {
		return nil
	}
	for i := range tmpl.Spec.Volumes {
		if tmpl.Spec.Volumes[i].Name == m.Name {
			return &tmpl.Spec.Volumes[i]
		}
	}
	for _, claim := range sts.Spec.VolumeClaimTemplates {
		if claim.Name == m.Name {
			return &corev1.Volume{Name: m.Name}
		}
	}
	return nil
}
