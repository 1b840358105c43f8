package mysql

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const testMountPath = v1alpha1.DefaultMySQLTmpdirMountPath

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
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

func TestRenderGolden(t *testing.T) {
	images := []struct{ name, image string }{
		{"mysql-5.7", "mysql:5.7"},
		{"mysql-8.0.25", "mysql:8.0.25"},
		{"mysql-8.0.36", "mysql:8.0.36"},
		{"mysql-8.4", "mysql:8.4"},
		{"mariadb-10.11", "mariadb:10.11"},
		{"mariadb-11.4", "mariadb:11.4"},
		{"mariadb-11.8", "mariadb:11.8"},
		{"percona-server-8.0", "percona/percona-server:8.0"},
		{"percona-xtradb-cluster-8.0", "percona/percona-xtradb-cluster:8.0"},
		{"bitnami-mysql-8.0", "bitnami/mysql:8.0"},
		{"bitnami-mariadb-10.11", "bitnami/mariadb:10.11"},
		{"bitnami-mariadb-galera-11.4", "bitnami/mariadb-galera:11.4"},
	}
	placements := []v1alpha1.InnoDBTmpdirPlacement{v1alpha1.InnoDBTmpdirDisk, v1alpha1.InnoDBTmpdirMemory}
	for _, img := range images {
		for _, placement := range placements {
			name := img.name + "-innodb-" + strings.ToLower(string(placement))
			t.Run(name, func(t *testing.T) {
				p, err := Detect(img.image, nil)
				if err != nil {
					t.Fatalf("Detect(%q) failed: %v", img.image, err)
				}
				spec := &v1alpha1.MySQLSpec{InnoDBTmpdir: placement, SessionTempSpacePercent: ptr.To[int32](25)}
				l := DefaultLayout(p, testMountPath, spec)
				l.LimitTempSpace(p, 512<<20, spec)
				if err := l.Validate(p); err != nil {
					t.Fatalf("default layout does not validate: %v", err)
				}
				cnf := RenderDropIn(p, l)
				if !bytes.Equal(cnf, RenderDropIn(p, l)) {
					t.Fatal("RenderDropIn is not deterministic")
				}
				golden(t, name+".cnf", cnf)
				golden(t, name+".args", []byte(strings.Join(Args(p, l), "\n")+"\n"))
			})
		}
	}
}

// The drop-in must keep the replica load directory off the RAM volume on every flavor; this
// checks the rendered line itself rather than trusting the layout.
func TestRenderKeepsReplicaLoadDirOnDisk(t *testing.T) {
	for _, image := range []string{"mysql:5.7", "mysql:8.0", "mariadb:11.4", "percona/percona-xtradb-cluster:8.0"} {
		p, err := Detect(image, nil)
		if err != nil {
			t.Fatalf("Detect(%q) failed: %v", image, err)
		}
		cnf := string(RenderDropIn(p, DefaultLayout(p, testMountPath, nil)))
		want := p.ReplicaLoadOption + " = /var/lib/mysql/" + PersistentDirName + "/replica-load\n"
		if !strings.Contains(cnf, want) {
			t.Errorf("%s: drop-in lacks %q:\n%s", image, want, cnf)
		}
	}
}

func TestRenderSkipsHiddenDirsWithoutAnOption(t *testing.T) {
	p, err := Detect("mysql:8.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	l := Layout{TmpDir: "/tmp-ram", ReplicaLoadDir: "/var/lib/mysql/.x/rl", InnoDBTmpDir: "/var/lib/mysql/.x/it",
		HiddenDirs: []string{".x"}}
	if cnf := string(RenderDropIn(p, l)); strings.Contains(cnf, "ignore") {
		t.Errorf("MySQL 8.0 has no ignore option, yet the drop-in mentions one:\n%s", cnf)
	}
}

func TestArgsSufficient(t *testing.T) {
	tests := []struct {
		image string
		want  bool
	}{
		{"mysql:8.0", true},
		{"bitnami/mariadb:10.11", true},
		{"percona/percona-server:8.0", true},
		{"mariadb:11.4", false},
		{"bitnami/mariadb-galera:11.4", false},
		{"percona/percona-xtradb-cluster:8.0", false},
	}
	for _, tt := range tests {
		p, err := Detect(tt.image, nil)
		if err != nil {
			t.Fatalf("Detect(%q) failed: %v", tt.image, err)
		}
		if got := p.ArgsSufficient(); got != tt.want {
			t.Errorf("%s: ArgsSufficient = %v, want %v", tt.image, got, tt.want)
		}
	}
}
