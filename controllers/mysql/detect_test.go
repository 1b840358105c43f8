package mysql

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

const testDigest = "sha256:6b7a9a3e2f2b8c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d"

// ver builds the expected Version of a row; "latest" is the floating newest release.
func ver(t *testing.T, s string) Version {
	t.Helper()
	if s == "latest" {
		return Version{Latest: true}
	}
	v, err := ParseVersion(s)
	if err != nil {
		t.Fatalf("bad test version %q: %v", s, err)
	}
	return v
}

// Expected profiles, spelled out per family so that a change in the rules shows up as a diff.
func officialMySQL(v Version, replica string, innodb bool, ignore string) Profile {
	p := Profile{Flavor: v1alpha1.FlavorMySQL, Version: v, Packaging: PackagingOfficial,
		ConfigDir: "/etc/mysql/conf.d", DataDir: "/var/lib/mysql", PersistentRoot: "/var/lib/mysql",
		ReplicaLoadOption: replica, InnoDBTmpdir: innodb, IgnoreDBDirOption: ignore}
	mysqlTempTables(&p)
	return p
}

// mysqlTempTables spells out, from the manuals' "Temporary Tablespaces" and "Internal Temporary
// Table Use in MySQL", where a MySQL release keeps its temporary tables.
func mysqlTempTables(p *Profile) {
	v := p.Version
	if v.Latest || v.Major >= 8 {
		// The TempTable engine, 8.0 and later: temptable_max_ram is 1GiB by default (at least
		// that on 8.4 and later).
		p.DefaultTempTableMaxRAM = 1 << 30
	}
	switch {
	case v.Latest || v.Major >= 9 || (v.Major == 8 && (v.Minor > 0 || !v.MinorGiven || !v.PatchGiven || v.Patch >= 13)):
		p.GlobalTempTablespace, p.SessionTempTablespaces, p.InternalTmpTables = true, true, InternalTmpTablesInSessionTablespaces
	case v.Major == 8 || (v.Major == 5 && v.Minor == 7 && (!v.PatchGiven || v.Patch >= 5)):
		p.GlobalTempTablespace, p.InternalTmpTables = true, InternalTmpTablesInGlobalTablespace
	case v.Major == 5 && v.Minor == 7 && v.Patch >= 1:
		p.GlobalTempTablespace, p.InternalTmpTables = true, InternalTmpTablesInTmpdir
	default:
		p.InternalTmpTables = InternalTmpTablesInTmpdir
	}
}

func officialMariaDB(v Version, innodb bool) Profile {
	return Profile{Flavor: v1alpha1.FlavorMariaDB, Version: v, Packaging: PackagingOfficial,
		ConfigDir: "/etc/mysql/conf.d", DataDir: "/var/lib/mysql", PersistentRoot: "/var/lib/mysql",
		ReplicaLoadOption: "slave_load_tmpdir", InnoDBTmpdir: innodb,
		IgnoreDBDirOption: "ignore-db-dirs", GaleraSST: true,
		InternalTmpTables: InternalTmpTablesInTmpdir, GlobalTempTablespace: v.Latest || v.Major > 10 || v.Minor >= 2}
}

func with(p Profile, edit func(*Profile)) Profile {
	edit(&p)
	return p
}

func TestDetect(t *testing.T) {
	const (
		replica = "replica_load_tmpdir"
		slave   = "slave_load_tmpdir"
		ignore  = "ignore-db-dir"
	)
	// bitnami is the chart's layout: the claim at /bitnami/<db>, the data directory below it, the
	// start script's extra-flags variable, and the directory holding tmpdir, socket and pid file.
	bitnami := func(db string) func(p *Profile) {
		return func(p *Profile) {
			p.Packaging, p.ConfigDir = PackagingBitnami, ""
			p.DataDir, p.PersistentRoot = "/bitnami/"+db+"/data", "/bitnami/"+db
			p.ExtraFlagsEnv, p.ReservedDirs = strings.ToUpper(db)+"_EXTRA_FLAGS", []string{"/opt/bitnami/" + db + "/tmp"}
		}
	}
	tests := []struct {
		name     string
		image    string
		override *v1alpha1.MySQLSpec
		want     func(t *testing.T) Profile
	}{
		{"exact 8.0 patch", "mysql:8.0.36", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.0.36"), replica, true, "")
		}},
		{"5.7 line", "mysql:5.7", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "5.7"), slave, true, ignore)
		}},
		{"8.4 line", "mysql:8.4", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.4"), replica, true, "")
		}},
		{"no tag is latest", "mysql", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "latest"), replica, true, "")
		}},
		{"latest tag", "mysql:latest", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "latest"), replica, true, "")
		}},
		{"last release before the rename", "mysql:8.0.25", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.0.25"), slave, true, "")
		}},
		{"first release with the rename", "mysql:8.0.26", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.0.26"), replica, true, "")
		}},
		{"8.0 floats to the newest patch", "mysql:8.0", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.0"), replica, true, "")
		}},
		{"5.7 before innodb_tmpdir", "mysql:5.7.10", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "5.7.10"), slave, false, ignore)
		}},
		{"5.7 with innodb_tmpdir", "mysql:5.7.11", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "5.7.11"), slave, true, ignore)
		}},
		{"5.6 line", "mysql:5.6", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "5.6"), slave, true, ignore)
		}},
		{"major-only tag", "mysql:8", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8"), replica, true, "")
		}},
		{"oracle variant suffix", "mysql:8.0-oracle", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.0"), replica, true, "")
		}},
		{"lts alias", "mysql:lts", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "latest"), replica, true, "")
		}},
		{"innovation 9.x", "mysql:9.1.0", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "9.1.0"), replica, true, "")
		}},
		{"explicit docker hub", "docker.io/library/mysql:8.0", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.0"), replica, true, "")
		}},
		{"private registry with port", "registry.example.com:5000/db/mysql:8.0.36", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.0.36"), replica, true, "")
		}},
		{"localhost registry", "localhost:5000/mysql:5.7", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "5.7"), slave, true, ignore)
		}},
		{"ecr mirror", "public.ecr.aws/docker/library/mysql:8.4.2", nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.4.2"), replica, true, "")
		}},
		{"tag and digest", "mysql:8.0@" + testDigest, nil, func(t *testing.T) Profile {
			return officialMySQL(ver(t, "8.0"), replica, true, "")
		}},
		{"oracle registry", "container-registry.oracle.com/mysql/community-server:8.0", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "8.0"), replica, true, ""), func(p *Profile) {
				p.Packaging, p.ConfigDir = PackagingOracle, ""
			})
		}},
		{"oracle on docker hub", "mysql/mysql-server:5.7.44", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "5.7.44"), slave, true, ignore), func(p *Profile) {
				p.Packaging, p.ConfigDir = PackagingOracle, ""
			})
		}},
		{"mariadb 10.11", "mariadb:10.11", nil, func(t *testing.T) Profile {
			return officialMariaDB(ver(t, "10.11"), true)
		}},
		{"mariadb 11.4", "mariadb:11.4", nil, func(t *testing.T) Profile {
			return officialMariaDB(ver(t, "11.4"), true)
		}},
		{"mariadb distro suffix", "mariadb:10.11.6-jammy", nil, func(t *testing.T) Profile {
			return officialMariaDB(ver(t, "10.11.6"), true)
		}},
		{"mariadb before innodb_tmpdir", "mariadb:10.1", nil, func(t *testing.T) Profile {
			return officialMariaDB(ver(t, "10.1"), false)
		}},
		{"mariadb mirror", "mirror.gcr.io/library/mariadb:11.4", nil, func(t *testing.T) Profile {
			return officialMariaDB(ver(t, "11.4"), true)
		}},
		{"mariadb ubi variant", "mariadb:11.4-ubi", nil, func(t *testing.T) Profile {
			return officialMariaDB(ver(t, "11.4"), true)
		}},
		{"percona server", "percona/percona-server:8.0", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "8.0"), replica, true, ""), func(p *Profile) {
				p.Flavor, p.Packaging, p.ConfigDir = v1alpha1.FlavorPerconaServer, PackagingPercona, "/etc/my.cnf.d"
			})
		}},
		{"percona server build suffix", "percona/percona-server:8.0.35-27", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "8.0.35"), replica, true, ""), func(p *Profile) {
				p.Flavor, p.Packaging, p.ConfigDir = v1alpha1.FlavorPerconaServer, PackagingPercona, "/etc/my.cnf.d"
			})
		}},
		{"percona official image", "percona:5.7", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "5.7"), slave, true, ignore), func(p *Profile) {
				p.Flavor, p.ConfigDir = v1alpha1.FlavorPerconaServer, "/etc/my.cnf.d"
			})
		}},
		{"xtradb cluster", "percona/percona-xtradb-cluster:8.0", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "8.0"), replica, true, ""), func(p *Profile) {
				p.Flavor, p.Packaging, p.ConfigDir = v1alpha1.FlavorPerconaXtraDBCluster, PackagingPercona, "/etc/my.cnf.d"
				p.GaleraSST = true
			})
		}},
		{"xtradb cluster 5.7", "percona/percona-xtradb-cluster:5.7.44-31.65", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "5.7.44"), slave, true, ignore), func(p *Profile) {
				p.Flavor, p.Packaging, p.ConfigDir = v1alpha1.FlavorPerconaXtraDBCluster, PackagingPercona, "/etc/my.cnf.d"
				p.GaleraSST = true
			})
		}},
		{"bitnami mysql", "bitnami/mysql:8.0", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "8.0"), replica, true, ""), func(p *Profile) {
				bitnami("mysql")(p)
			})
		}},
		{"bitnami mysql long tag", "docker.io/bitnami/mysql:8.0.36-debian-12-r8", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "8.0.36"), replica, true, ""), func(p *Profile) {
				bitnami("mysql")(p)
			})
		}},
		{"bitnami legacy namespace", "bitnamilegacy/mysql:5.7", nil, func(t *testing.T) Profile {
			return with(officialMySQL(ver(t, "5.7"), slave, true, ignore), func(p *Profile) {
				bitnami("mysql")(p)
			})
		}},
		{"bitnami mariadb has no galera", "bitnami/mariadb:10.11", nil, func(t *testing.T) Profile {
			return with(officialMariaDB(ver(t, "10.11"), true), func(p *Profile) {
				bitnami("mariadb")(p)
				p.GaleraSST = false
			})
		}},
		{"bitnami mariadb galera", "bitnami/mariadb-galera:11.4", nil, func(t *testing.T) Profile {
			return with(officialMariaDB(ver(t, "11.4"), true), func(p *Profile) {
				bitnami("mariadb")(p)
			})
		}},
		{"override for an unknown image", "mycorp/db:1.2",
			&v1alpha1.MySQLSpec{Flavor: v1alpha1.FlavorMariaDB, Version: "10.11"}, func(t *testing.T) Profile {
				return with(officialMariaDB(ver(t, "10.11"), true), func(p *Profile) { p.Packaging = PackagingCustom })
			}},
		{"override version for a digest", "mysql@" + testDigest,
			&v1alpha1.MySQLSpec{Version: "8.0.36"}, func(t *testing.T) Profile {
				return officialMySQL(ver(t, "8.0.36"), replica, true, "")
			}},
		{"override version wins over the tag", "mysql:8.0",
			&v1alpha1.MySQLSpec{Version: "8.0.25"}, func(t *testing.T) Profile {
				return officialMySQL(ver(t, "8.0.25"), slave, true, "")
			}},
		{"override flavor matching the image keeps its packaging", "bitnami/mariadb:10.11",
			&v1alpha1.MySQLSpec{Flavor: v1alpha1.FlavorMariaDB}, func(t *testing.T) Profile {
				return with(officialMariaDB(ver(t, "10.11"), true), func(p *Profile) {
					bitnami("mariadb")(p)
					p.GaleraSST = false
				})
			}},
		{"override flavor unlike the image drops its packaging", "mysql:8.0",
			&v1alpha1.MySQLSpec{Flavor: v1alpha1.FlavorPerconaServer}, func(t *testing.T) Profile {
				return with(officialMySQL(ver(t, "8.0"), replica, true, ""), func(p *Profile) {
					p.Flavor, p.Packaging, p.ConfigDir = v1alpha1.FlavorPerconaServer, PackagingCustom, "/etc/my.cnf.d"
				})
			}},
		{"override paths", "bitnami/mysql:8.0",
			&v1alpha1.MySQLSpec{ConfigDir: "/opt/bitnami/mysql/conf/extra.d", DataDir: "/data/mysql"}, func(t *testing.T) Profile {
				return with(officialMySQL(ver(t, "8.0"), replica, true, ""), func(p *Profile) {
					bitnami("mysql")(p)
					p.ConfigDir, p.DataDir, p.PersistentRoot = "/opt/bitnami/mysql/conf/extra.d", "/data/mysql", "/data/mysql"
				})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(tt.image, tt.override)
			if err != nil {
				t.Fatalf("Detect(%q) failed: %v", tt.image, err)
			}
			if diff := cmp.Diff(tt.want(t), got); diff != "" {
				t.Errorf("Detect(%q) mismatch (-want +got):\n%s", tt.image, diff)
			}
		})
	}
}

func TestDetectErrors(t *testing.T) {
	const advice = "; set spec.mysql.flavor and spec.mysql.version"
	tests := []struct {
		name     string
		image    string
		override *v1alpha1.MySQLSpec
		unknown  bool
		want     string
	}{
		{"unknown repository", "mycorp/db:1.2", nil, true,
			`cannot tell the database flavor and version of image "mycorp/db:1.2": repository "mycorp/db" is not a MySQL, MariaDB or Percona image this operator knows` + advice},
		{"digest without a tag", "mysql@" + testDigest, nil, true,
			`cannot tell the database flavor and version of image "mysql@` + testDigest + `": it is pinned by digest without a version tag, and the version decides option names` + advice},
		{"mariadb digest without a tag", "mariadb@" + testDigest, nil, true,
			`cannot tell the database flavor and version of image "mariadb@` + testDigest + `": it is pinned by digest without a version tag, and the version decides option names` + advice},
		{"private image named mysql", "mycorp/mysql:1.2", nil, true,
			`cannot tell the database flavor and version of image "mycorp/mysql:1.2": tag "1.2" is not a MySQL version` + advice},
		{"word tag", "mysql:stable", nil, true,
			`cannot tell the database flavor and version of image "mysql:stable": tag "stable" is not a MySQL version` + advice},
		{"mariadb with a mysql number", "mariadb:8.0", nil, true,
			`cannot tell the database flavor and version of image "mariadb:8.0": tag "8.0" is not a MariaDB version` + advice},
		{"flavor alone for an unknown image", "mycorp/db:1.2", &v1alpha1.MySQLSpec{Flavor: v1alpha1.FlavorMySQL}, true,
			`cannot tell the database flavor and version of image "mycorp/db:1.2": tag "1.2" is not a MySQL version` + advice},
		{"version alone for an unknown image", "mycorp/db:1.2", &v1alpha1.MySQLSpec{Version: "8.0"}, true,
			`cannot tell the database flavor and version of image "mycorp/db:1.2": repository "mycorp/db" is not a MySQL, MariaDB or Percona image this operator knows` + advice},
		{"upper-case repository", "MySQL:8.0", nil, true,
			`cannot tell the database flavor and version of image "MySQL:8.0": it is not a valid image reference` + advice},
		{"empty image", "", nil, true,
			`cannot tell the database flavor and version of image "": it is not a valid image reference` + advice},
		{"bad override version", "mysql:8.0", &v1alpha1.MySQLSpec{Version: "8.x"}, false,
			`spec.mysql.version: "8.x": spec.mysql.version must look like 8.0 or 8.0.36`},
		{"override version above the bound", "mysql:8.0", &v1alpha1.MySQLSpec{Flavor: v1alpha1.FlavorMySQL, Version: "12345.1"}, false,
			`spec.mysql.version: "12345.1": spec.mysql.version must have no number above 9999, such as 8.0 or 8.0.36`},
		{"bad override flavor", "mysql:8.0", &v1alpha1.MySQLSpec{Flavor: "Postgres"}, false,
			`spec.mysql.flavor: "Postgres": spec.mysql.flavor must be one of MySQL, MariaDB, PerconaServer, PerconaXtraDBCluster`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Detect(tt.image, tt.override)
			if err == nil {
				t.Fatalf("Detect(%q) succeeded, want error %q", tt.image, tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if got := IsUnknownImage(err); got != tt.unknown {
				t.Errorf("IsUnknownImage = %v, want %v", got, tt.unknown)
			}
		})
	}
}

func TestUnknownImageErrorUnwrapsTheParseError(t *testing.T) {
	_, err := Detect("mysql:bad tag", nil)
	var u *UnknownImageError
	if !errors.As(err, &u) {
		t.Fatalf("want *UnknownImageError, got %v", err)
	}
	if u.Err == nil || !strings.Contains(u.Err.Error(), `malformed tag "bad tag"`) {
		t.Errorf("Err = %v, want the parse error naming the tag", u.Err)
	}
}

func TestIsDatabaseImage(t *testing.T) {
	tests := []struct {
		image string
		want  bool
	}{
		{"mysql:8.0", true},
		{"mariadb", true},
		{"mysql@" + testDigest, true},
		{"percona/percona-xtradb-cluster:8.0.36-28.1", true},
		{"percona/percona-server:8.4", true},
		{"percona:8.0", true},
		{"bitnami/mariadb-galera:11.4", true},
		{"bitnami/mysql:8.0", true},
		{"container-registry.oracle.com/mysql/community-server:8.4", true},
		{"registry.example.com:5000/db/mariadb:11.4", true},
		{"prom/mysqld-exporter:v0.15.1", false},
		{"bitnami/mysqld-exporter:0.15.1", false},
		{"percona/percona-xtrabackup:8.0", false},
		{"percona/percona-toolkit:3.6", false},
		{"percona/pmm-client:2", false},
		{"mysql/mysql-router:8.0", false},
		{"mysql/mysql-cluster:8.0", false},
		{"proxysql/proxysql:2.6.2", false},
		{"bitnami/os-shell:12", false},
		{"busybox:1.36", false},
		{"mycorp/db:1.2", false},
		{"", false},
		{"not a reference", false},
	}
	for _, tt := range tests {
		if got := IsDatabaseImage(tt.image); got != tt.want {
			t.Errorf("IsDatabaseImage(%q) = %v, want %v", tt.image, got, tt.want)
		}
	}
}
