package mysql

import (
	"errors"
	"fmt"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Packaging names who built an image; it decides where the image reads drop-in option files and
// keeps its data.
type Packaging string

const (
	// PackagingOfficial is a Docker Official Image (mysql, mariadb, percona) or a mirror of one.
	PackagingOfficial Packaging = "Official"
	// PackagingOracle is Oracle's own build: mysql/mysql-server, container-registry.oracle.com.
	PackagingOracle Packaging = "Oracle"
	// PackagingPercona is Percona's own build: percona/percona-server, percona/percona-xtradb-cluster.
	PackagingPercona Packaging = "Percona"
	// PackagingBitnami is a Bitnami build (bitnami/mysql, bitnami/mariadb, bitnami/mariadb-galera).
	PackagingBitnami Packaging = "Bitnami"
	// PackagingCustom is an image this package does not know, described by spec.mysql instead.
	PackagingCustom Packaging = "Custom"
)

// Profile is everything the operator needs to know about one database container.
type Profile struct {
	// Flavor and Version come from spec.mysql when set there, else from the image reference.
	Flavor  v1alpha1.MySQLFlavor
	Version Version
	// Packaging is who built the image; PackagingCustom when spec.mysql named a flavor the
	// image's name does not show.
	Packaging Packaging

	// ConfigDir is the directory the image's main option file reads with !includedir. Empty
	// means the image reads no drop-in directory: use Args, or spec.mysql.configDir when the
	// user's own my.cnf includes one.
	ConfigDir string
	// DataDir is the server's data directory, normally the persistent volume's mount point.
	DataDir string

	// ReplicaLoadOption is replica_load_tmpdir or slave_load_tmpdir.
	ReplicaLoadOption string
	// InnoDBTmpdir is true when the server has innodb_tmpdir. Without it, online ALTER TABLE
	// sort files go to tmpdir and nothing can move them.
	InnoDBTmpdir bool
	// IgnoreDBDirOption hides a directory inside the data directory from SHOW DATABASES
	// (ignore-db-dirs on MariaDB, ignore-db-dir on MySQL 5.6/5.7); empty where the server has no
	// such option, as on MySQL 8.0 and later, which no longer show directories as databases.
	IgnoreDBDirOption string
	// GaleraSST is true when a Galera state transfer may run in this container and looks up its
	// temporary directory in [sst] (and [xtrabackup]) before falling back to [mysqld] tmpdir.
	GaleraSST bool

	// SessionTempTablespaces is true when the server keeps InnoDB temporary tables in session
	// temporary tablespaces whose directory innodb_temp_tablespaces_dir sets (MySQL and Percona
	// 8.0.13 and later).
	SessionTempTablespaces bool
	// GlobalTempTablespace is true when the server has the global temporary tablespace ibtmp1
	// (innodb_temp_data_file_path): MySQL 5.7 and later, MariaDB 10.2 and later.
	GlobalTempTablespace bool
	// InternalTmpTables says where on-disk internal temporary tables go with the server's
	// defaults; see InternalTmpTablesIn.
	InternalTmpTables InternalTmpTablesIn
	// DefaultTempTableMaxRAM is temptable_max_ram when nothing sets it: the memory the TempTable
	// engine (MySQL and Percona 8.0 and later) may take for in-memory internal temporary tables,
	// in bytes; 0 for a server without the engine.
	DefaultTempTableMaxRAM int64
	// TempSpaceLimit is true when the server has its own limits on temporary space,
	// max_tmp_total_space_usage and max_tmp_session_space_usage (MariaDB 11.5.1 and later): they
	// count SQL temporary files (sorts, binary log caches) and on-disk internal temporary tables,
	// and a query that would pass them fails with the server's error.
	TempSpaceLimit bool

	// PersistentRoot is the directory under which the operator keeps the directories that must
	// survive a restart: the data directory, or for Bitnami the claim's mount point one level above
	// it, so that nothing of ours appears inside the data directory the image's scripts manage.
	PersistentRoot string
	// ExtraFlagsEnv is the environment variable whose words the image's start script appends to
	// the server's command line (Bitnami only), empty otherwise.
	ExtraFlagsEnv string
	// ReservedDirs are directories of the image that must stay as the image has them: Bitnami's
	// /opt/bitnami/<db>/tmp holds the socket and the pid file besides the chart's tmpdir.
	ReservedDirs []string
}

// InternalTmpTablesIn says which temporary storage holds a server's on-disk internal temporary
// tables (GROUP BY, DISTINCT, UNION, derived tables that outgrow memory) by default.
type InternalTmpTablesIn string

const (
	// InternalTmpTablesInTmpdir: Aria or MyISAM files in tmpdir (MariaDB; MySQL before 5.7.5).
	InternalTmpTablesInTmpdir InternalTmpTablesIn = "tmpdir"
	// InternalTmpTablesInGlobalTablespace: InnoDB tables in ibtmp1 (MySQL 5.7.5 to 8.0.12, where
	// internal_tmp_disk_storage_engine defaults to InnoDB; MYISAM would put them in tmpdir).
	InternalTmpTablesInGlobalTablespace InternalTmpTablesIn = "ibtmp1"
	// InternalTmpTablesInSessionTablespaces: InnoDB tables in the session temporary tablespaces
	// (MySQL 8.0.13 and later; always from 8.0.16, when internal_tmp_disk_storage_engine went).
	InternalTmpTablesInSessionTablespaces InternalTmpTablesIn = "session temporary tablespaces"
)

// UnknownImageError says that the flavor or version of an image cannot be told from its
// reference. The operator never guesses them: option names depend on both.
type UnknownImageError struct {
	Image  string
	Reason string
	// Err is the underlying parse error, if any.
	Err error
}

func (e *UnknownImageError) Error() string {
	return fmt.Sprintf("cannot tell the database flavor and version of image %q: %s; "+
		"set spec.mysql.flavor and spec.mysql.version", e.Image, e.Reason)
}

func (e *UnknownImageError) Unwrap() error { return e.Err }

// SpecError is a spec.mysql value the API refuses today, stored before its rule existed. Message
// is the rule's own message, so that the controller says what admission says.
type SpecError struct {
	Field, Value, Message string
	// Err is the underlying parse error, if any.
	Err error
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("%s: %q: %s", e.Field, e.Value, e.Message)
}

func (e *SpecError) Unwrap() error { return e.Err }

// imageClass is what a repository name alone tells.
type imageClass struct {
	flavor    v1alpha1.MySQLFlavor
	packaging Packaging
	// withoutGalera marks an image known to ship no Galera provider.
	withoutGalera bool
}

// Detect works out the profile of a database container from its image reference. Flavor and
// version in override win over the image; configDir and dataDir in override replace the
// image's paths. The image's tag gives the version: "8.0.36" exactly, "8.0" or "latest" as the
// newest release of that line (see Version). A reference with a digest and no version tag
// cannot be placed and gives an *UnknownImageError.
func Detect(image string, override *v1alpha1.MySQLSpec) (Profile, error) {
	if override == nil {
		override = &v1alpha1.MySQLSpec{}
	}
	class, version, err := identify(image, override)
	if err != nil {
		return Profile{}, err
	}
	p := newProfile(class, version)
	if override.ConfigDir != "" {
		p.ConfigDir = string(override.ConfigDir)
	}
	if override.DataDir != "" {
		p.DataDir = string(override.DataDir)
		p.PersistentRoot = p.DataDir
	}
	return p, nil
}

// identify settles flavor, version and packaging, taking each from the override when given.
// The image's packaging only counts when the image runs the flavor the override names.
func identify(image string, o *v1alpha1.MySQLSpec) (imageClass, Version, error) {
	ref, refErr := ParseImageRef(image)
	class, known := imageClass{}, false
	if refErr == nil {
		class, known = classify(ref)
	}
	if o.Flavor == "" && !known {
		return imageClass{}, Version{}, unknownImage(image, ref, refErr)
	}
	if o.Flavor != "" && (!known || class.flavor != o.Flavor) {
		class = imageClass{flavor: o.Flavor, packaging: PackagingCustom}
	}
	if !validFlavor(class.flavor) {
		return imageClass{}, Version{}, &SpecError{Field: "spec.mysql.flavor", Value: string(class.flavor),
			Message: "spec.mysql.flavor must be one of MySQL, MariaDB, PerconaServer, PerconaXtraDBCluster"}
	}
	version, err := resolveVersion(image, ref, refErr, class.flavor, o.Version)
	return class, version, err
}

func unknownImage(image string, ref ImageRef, refErr error) error {
	if refErr != nil {
		return &UnknownImageError{Image: image, Reason: "it is not a valid image reference", Err: refErr}
	}
	return &UnknownImageError{Image: image,
		Reason: fmt.Sprintf("repository %q is not a MySQL, MariaDB or Percona image this operator knows", ref.Path)}
}

// resolveVersion takes the override, else the image tag, and checks the result belongs to the
// flavor, so that a private image called "mysql" with its own numbering is not mistaken for
// MySQL 1.2.
func resolveVersion(image string, ref ImageRef, refErr error, f v1alpha1.MySQLFlavor, override string) (Version, error) {
	if override != "" {
		v, err := ParseVersion(override)
		if err != nil {
			msg := v1alpha1.VersionShapeMessage
			if errors.Is(err, errComponentRange) {
				msg = v1alpha1.VersionBoundsMessage
			}
			return Version{}, &SpecError{Field: "spec.mysql.version", Value: override, Message: msg, Err: err}
		}
		return v, nil
	}
	if refErr != nil {
		return Version{}, &UnknownImageError{Image: image, Reason: "it is not a valid image reference", Err: refErr}
	}
	if ref.Tag == "" && ref.Digest != "" {
		return Version{}, &UnknownImageError{Image: image,
			Reason: "it is pinned by digest without a version tag, and the version decides option names"}
	}
	v, ok := versionFromTag(ref.Tag)
	if !ok || !plausible(f, v) {
		return Version{}, &UnknownImageError{Image: image,
			Reason: fmt.Sprintf("tag %q is not a %s version", ref.Tag, f)}
	}
	return v, nil
}

// plausible rejects majors the flavor never released.
func plausible(f v1alpha1.MySQLFlavor, v Version) bool {
	if v.Latest {
		return true
	}
	if f == v1alpha1.FlavorMariaDB {
		return v.Major == 5 || (v.Major >= 10 && v.Major <= 99)
	}
	return v.Major == 5 || (v.Major >= 8 && v.Major <= 99)
}

func validFlavor(f v1alpha1.MySQLFlavor) bool {
	switch f {
	case v1alpha1.FlavorMySQL, v1alpha1.FlavorMariaDB,
		v1alpha1.FlavorPerconaServer, v1alpha1.FlavorPerconaXtraDBCluster:
		return true
	}
	return false
}

// IsDatabaseImage reports whether image runs a MySQL-compatible server, by repository name
// alone, so that the database container can be picked among sidecars (mysqld-exporter,
// percona-xtrabackup, mysql-router, busybox …). It is true even when Detect would still need
// a version.
func IsDatabaseImage(image string) bool {
	ref, err := ParseImageRef(image)
	if err != nil {
		return false
	}
	_, ok := classify(ref)
	return ok
}

// classify recognizes a repository by its last path element and, where the name alone is
// ambiguous, the vendor namespace before it. Registry and mirror prefixes do not matter.
func classify(ref ImageRef) (imageClass, bool) {
	owner, name := ref.pathElements()
	bitnami := owner == "bitnami" || owner == "bitnamilegacy"
	switch {
	case name == "mysql" && bitnami:
		return imageClass{flavor: v1alpha1.FlavorMySQL, packaging: PackagingBitnami}, true
	case name == "mysql":
		return imageClass{flavor: v1alpha1.FlavorMySQL, packaging: PackagingOfficial}, true
	case (name == "mysql-server" || name == "community-server") && owner == "mysql":
		return imageClass{flavor: v1alpha1.FlavorMySQL, packaging: PackagingOracle}, true
	case name == "mariadb" && bitnami:
		return imageClass{flavor: v1alpha1.FlavorMariaDB, packaging: PackagingBitnami, withoutGalera: true}, true
	case name == "mariadb-galera" && bitnami:
		return imageClass{flavor: v1alpha1.FlavorMariaDB, packaging: PackagingBitnami}, true
	case name == "mariadb":
		return imageClass{flavor: v1alpha1.FlavorMariaDB, packaging: PackagingOfficial}, true
	case name == "percona":
		return imageClass{flavor: v1alpha1.FlavorPerconaServer, packaging: PackagingOfficial}, true
	case name == "percona-server":
		return imageClass{flavor: v1alpha1.FlavorPerconaServer, packaging: PackagingPercona}, true
	case name == "percona-xtradb-cluster":
		return imageClass{flavor: v1alpha1.FlavorPerconaXtraDBCluster, packaging: PackagingPercona}, true
	}
	return imageClass{}, false
}

// IsUnknownImage reports whether err, or an error it wraps, is an *UnknownImageError.
func IsUnknownImage(err error) bool {
	var u *UnknownImageError
	return errors.As(err, &u)
}
