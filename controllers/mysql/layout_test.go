package mysql

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

func detect(t *testing.T, image string) Profile {
	t.Helper()
	p, err := Detect(image, nil)
	if err != nil {
		t.Fatalf("Detect(%q) failed: %v", image, err)
	}
	return p
}

func TestDefaultLayout(t *testing.T) {
	const (
		ram  = "/var/lib/mysql-tmp"
		base = "/var/lib/mysql/" + PersistentDirName
	)
	tests := []struct {
		name  string
		image string
		spec  *v1alpha1.MySQLSpec
		want  Layout
	}{
		{"mysql 8.0 on disk", "mysql:8.0", nil, Layout{TmpDir: ram,
			ReplicaLoadDir: base + "/replica-load", InnoDBTmpDir: base + "/innodb-tmp",
			SessionTempDir: ram, HiddenDirs: []string{PersistentDirName}}},
		{"innodb in memory", "mysql:8.0", &v1alpha1.MySQLSpec{InnoDBTmpdir: v1alpha1.InnoDBTmpdirMemory}, Layout{
			TmpDir: ram, ReplicaLoadDir: base + "/replica-load", InnoDBTmpDir: ram,
			SessionTempDir: ram, HiddenDirs: []string{PersistentDirName}}},
		{"session temporary tablespaces kept on disk", "mysql:8.4",
			&v1alpha1.MySQLSpec{SessionTempTablespaces: v1alpha1.TempTablespacesDisk}, Layout{TmpDir: ram,
				ReplicaLoadDir: base + "/replica-load", InnoDBTmpDir: base + "/innodb-tmp",
				HiddenDirs: []string{PersistentDirName}}},
		{"first release with session temporary tablespaces", "mysql:8.0.13", nil, Layout{TmpDir: ram,
			ReplicaLoadDir: base + "/replica-load", InnoDBTmpDir: base + "/innodb-tmp",
			SessionTempDir: ram, HiddenDirs: []string{PersistentDirName}}},
		{"last release without them", "mysql:8.0.12", nil, Layout{TmpDir: ram,
			ReplicaLoadDir: base + "/replica-load", InnoDBTmpDir: base + "/innodb-tmp",
			HiddenDirs: []string{PersistentDirName}}},
		{"mariadb has none, whatever the spec says", "mariadb:11.4",
			&v1alpha1.MySQLSpec{SessionTempTablespaces: v1alpha1.TempTablespacesMemory}, Layout{TmpDir: ram,
				ReplicaLoadDir: base + "/replica-load", InnoDBTmpDir: base + "/innodb-tmp",
				SSTTmpDir: base + "/sst-tmp", HiddenDirs: []string{PersistentDirName}}},
		{"server without innodb_tmpdir", "mysql:5.7.10", nil, Layout{TmpDir: ram,
			ReplicaLoadDir: base + "/replica-load", HiddenDirs: []string{PersistentDirName}}},
		{"galera gets an sst directory", "percona/percona-xtradb-cluster:8.0", nil, Layout{TmpDir: ram,
			ReplicaLoadDir: base + "/replica-load", InnoDBTmpDir: base + "/innodb-tmp",
			SSTTmpDir: base + "/sst-tmp", SessionTempDir: ram, HiddenDirs: []string{PersistentDirName}}},
		{"replica load dir elsewhere", "mariadb:11.4", &v1alpha1.MySQLSpec{ReplicaLoadDir: "/var/lib/mysql/replica-load"},
			Layout{TmpDir: ram, ReplicaLoadDir: "/var/lib/mysql/replica-load", InnoDBTmpDir: base + "/innodb-tmp",
				SSTTmpDir: base + "/sst-tmp", HiddenDirs: []string{PersistentDirName, "replica-load"}}},
		{"replica load dir on another volume", "mariadb:11.4",
			&v1alpha1.MySQLSpec{ReplicaLoadDir: "/srv/relay", InnoDBTmpdir: v1alpha1.InnoDBTmpdirMemory},
			Layout{TmpDir: ram, ReplicaLoadDir: "/srv/relay", InnoDBTmpDir: ram,
				SSTTmpDir: base + "/sst-tmp", HiddenDirs: []string{PersistentDirName}}},
		// Beside the data directory, on the claim the chart mounts one level up: nothing to hide.
		{"bitnami data directory", "bitnami/mariadb:10.11", nil, Layout{TmpDir: ram,
			ReplicaLoadDir: "/bitnami/mariadb/" + PersistentDirName + "/replica-load",
			InnoDBTmpDir:   "/bitnami/mariadb/" + PersistentDirName + "/innodb-tmp"}},
		{"bitnami mysql 8.4", "bitnami/mysql:8.4", nil, Layout{TmpDir: ram,
			ReplicaLoadDir: "/bitnami/mysql/" + PersistentDirName + "/replica-load",
			InnoDBTmpDir:   "/bitnami/mysql/" + PersistentDirName + "/innodb-tmp", SessionTempDir: ram}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := detect(t, tt.image)
			got := DefaultLayout(p, ram, tt.spec)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DefaultLayout mismatch (-want +got):\n%s", diff)
			}
			if err := got.Validate(p); err != nil {
				t.Errorf("default layout does not validate: %v", err)
			}
		})
	}
}

func TestPersistentDirs(t *testing.T) {
	l := Layout{TmpDir: "/ram", ReplicaLoadDir: "/d/.s/rl", InnoDBTmpDir: "/ram", SSTTmpDir: "/d/.s/sst"}
	if diff := cmp.Diff([]string{"/d/.s/rl", "/d/.s/sst"}, l.PersistentDirs()); diff != "" {
		t.Errorf("PersistentDirs mismatch (-want +got):\n%s", diff)
	}
}

func TestLayoutValidate(t *testing.T) {
	mysql57 := detect(t, "mysql:5.7")
	pxc := detect(t, "percona/percona-xtradb-cluster:8.0")
	mariadb := detect(t, "mariadb:11.4")
	good := Layout{TmpDir: "/ram", ReplicaLoadDir: "/var/lib/mysql/.s.sst/rl", InnoDBTmpDir: "/var/lib/mysql/.s.sst/it",
		SSTTmpDir: "/var/lib/mysql/.s.sst/sst", HiddenDirs: []string{".s.sst"}}
	tests := []struct {
		name string
		p    Profile
		edit func(*Layout)
		want []string // substrings of the error; none means valid
	}{
		{"valid", pxc, func(*Layout) {}, nil},
		{"no tmpdir", mysql57, func(l *Layout) { l.TmpDir = "" }, []string{"tmpdir: no directory given"}},
		{"relative path", mysql57, func(l *Layout) { l.ReplicaLoadDir = "var/rl" },
			[]string{`slave_load_tmpdir: "var/rl" must be a clean absolute path`}},
		{"unclean path", mysql57, func(l *Layout) { l.InnoDBTmpDir = "/var/lib/../it" },
			[]string{`innodb_tmpdir: "/var/lib/../it" must be a clean absolute path`}},
		{"colon would split tmpdir", mysql57, func(l *Layout) { l.TmpDir = "/ram:/disk" },
			[]string{`tmpdir: "/ram:/disk" contains`}},
		{"comment character", mysql57, func(l *Layout) { l.ReplicaLoadDir = "/var/#rl" },
			[]string{`slave_load_tmpdir: "/var/#rl" contains`}},
		{"space", mysql57, func(l *Layout) { l.ReplicaLoadDir = "/var/r l" }, []string{`"/var/r l" contains`}},
		{"replica load on the RAM volume", mysql57, func(l *Layout) { l.ReplicaLoadDir = "/ram/rl" },
			[]string{"/ram/rl is on the RAM volume /ram; it must survive a restart"}},
		{"sst on the RAM volume", pxc, func(l *Layout) { l.SSTTmpDir = "/ram" },
			[]string{"/ram is on the RAM volume /ram"}},
		{"missing innodb dir", mysql57, func(l *Layout) { l.InnoDBTmpDir = "" },
			[]string{"innodb_tmpdir: no directory given"}},
		{"missing sst dir on galera", pxc, func(l *Layout) { l.SSTTmpDir = "" },
			[]string{"sst tmpdir: no directory given"}},
		{"hidden dir with a slash", mysql57, func(l *Layout) { l.HiddenDirs = []string{"a/b"} },
			[]string{`hidden directory "a/b": must be a plain directory name`}},
		{"visible directory in a mysql 8 data directory", pxc, func(l *Layout) { l.ReplicaLoadDir = "/var/lib/mysql/rl" },
			[]string{"/var/lib/mysql/rl would make mysqld --initialize refuse a new, empty data directory"}},
		{"visible but ignored directory on mysql 5.7", mysql57, func(l *Layout) {
			l.ReplicaLoadDir, l.HiddenDirs = "/var/lib/mysql/rl", []string{".s.sst", "rl"}
		}, nil},
		{"visible directory on mysql 5.7 left unhidden", mysql57, func(l *Layout) { l.ReplicaLoadDir = "/var/lib/mysql/rl" },
			[]string{"/var/lib/mysql/rl would make mysqld --initialize refuse"}},
		{"visible directory on mariadb", mariadb, func(l *Layout) { l.ReplicaLoadDir = "/var/lib/mysql/rl" }, nil},
		{"sst directory the joiner would delete", pxc, func(l *Layout) { l.SSTTmpDir = "/var/lib/mysql/.sst-tmp/x" },
			[]string{"/var/lib/mysql/.sst-tmp would be deleted by a Galera joiner"}},
		{"sst directory outside the data directory", pxc, func(l *Layout) { l.SSTTmpDir = "/srv/sst" }, nil},
		{"session temporary tablespaces on the RAM volume", pxc, func(l *Layout) { l.SessionTempDir = "/ram" }, nil},
		{"session temporary tablespaces in the data directory", pxc, func(l *Layout) { l.SessionTempDir = "/var/lib/mysql/tt" },
			[]string{"innodb_temp_tablespaces_dir /var/lib/mysql/tt lies in the data directory /var/lib/mysql, where the server refuses it"}},
		{"session temporary tablespaces on a server without them", mysql57, func(l *Layout) { l.SessionTempDir = "/ram" },
			[]string{"innodb_temp_tablespaces_dir: MySQL 5.7 has no session temporary tablespaces"}},
		{"session temporary tablespaces path with a semicolon", pxc, func(l *Layout) { l.SessionTempDir = "/ram;x" },
			[]string{`innodb_temp_tablespaces_dir: "/ram;x" contains`}},
		{"two problems at once", mysql57, func(l *Layout) { l.TmpDir, l.ReplicaLoadDir = "", "" },
			[]string{"tmpdir: no directory given", "slave_load_tmpdir: no directory given"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := good
			l.HiddenDirs = append([]string(nil), good.HiddenDirs...)
			tt.edit(&l)
			err := l.Validate(tt.p)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate failed: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate passed, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
