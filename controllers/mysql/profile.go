package mysql

import (
	"path"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Option names as the server manuals spell them in option files. Those that are system
// variables use underscores; the ignore options exist only as startup options and are documented
// with dashes.
const (
	optTmpdir            = "tmpdir"
	optReplicaLoadTmpdir = "replica_load_tmpdir"
	optSlaveLoadTmpdir   = "slave_load_tmpdir"
	optInnoDBTmpdir      = "innodb_tmpdir"
	optIgnoreDBDir       = "ignore-db-dir"  // MySQL 5.6.3 to 5.7, removed in 8.0.0
	optIgnoreDBDirs      = "ignore-db-dirs" // MariaDB
	optBufferPoolSize    = "innodb_buffer_pool_size"
	optTempTablespaces   = "innodb_temp_tablespaces_dir" // MySQL 8.0.13
	optTempDataFilePath  = "innodb_temp_data_file_path"  // MySQL 5.7.1, MariaDB 10.2
	optTempTableMaxRAM   = "temptable_max_ram"           // MySQL 8.0
	optMaxTmpTotal       = "max_tmp_total_space_usage"   // MariaDB 11.5.1
	optMaxTmpSession     = "max_tmp_session_space_usage" // MariaDB 11.5.1
)

// Paths inside the images, as their Dockerfiles and entrypoints set them up (see imagePaths).
const (
	officialDataDir      = "/var/lib/mysql"
	debianStyleConfigDir = "/etc/mysql/conf.d"
	redHatStyleConfigDir = "/etc/my.cnf.d"
	bitnamiMySQLDataDir  = "/bitnami/mysql/data"
	bitnamiMariaDataDir  = "/bitnami/mariadb/data"
	// The Bitnami start scripts' variables for extra server flags, and the directory that holds
	// the chart's tmpdir, the socket and the pid file.
	bitnamiMySQLExtraFlags = "MYSQL_EXTRA_FLAGS"
	bitnamiMariaExtraFlags = "MARIADB_EXTRA_FLAGS"
	bitnamiMySQLTmpDir     = "/opt/bitnami/mysql/tmp"
	bitnamiMariaTmpDir     = "/opt/bitnami/mariadb/tmp"
)

// newProfile derives option names and paths from the image's class and the server version.
func newProfile(c imageClass, v Version) Profile {
	p := Profile{Flavor: c.flavor, Version: v, Packaging: c.packaging}
	p.ConfigDir, p.DataDir = imagePaths(c.flavor, c.packaging)
	p.PersistentRoot = p.DataDir
	if c.flavor == v1alpha1.FlavorMariaDB {
		p.fillMariaDB(c.withoutGalera)
	} else {
		p.fillMySQLFamily()
	}
	if c.packaging == PackagingBitnami {
		p.fillBitnami()
	}
	return p
}

// fillBitnami covers the Bitnami images and charts: the claim is mounted at /bitnami/<db> and the
// data directory is its data/ subdirectory, which the image's scripts initialize and own, so the
// operator's directories go beside it on the claim. The start script (run.sh) runs mysqld with
// --defaults-file=/opt/bitnami/<db>/conf/my.cnf and then the words of <DB>_EXTRA_FLAGS; the
// chart's my.cnf sets tmpdir, socket and pid-file in /opt/bitnami/<db>/tmp.
func (p *Profile) fillBitnami() {
	p.PersistentRoot = path.Dir(p.DataDir)
	if p.Flavor == v1alpha1.FlavorMariaDB {
		p.ExtraFlagsEnv, p.ReservedDirs = bitnamiMariaExtraFlags, []string{bitnamiMariaTmpDir}
		return
	}
	p.ExtraFlagsEnv, p.ReservedDirs = bitnamiMySQLExtraFlags, []string{bitnamiMySQLTmpDir}
}

// fillMySQLFamily covers Oracle MySQL and the Percona builds, which follow its option names.
//
// MySQL 8.0.26 renamed slave_load_tmpdir to replica_load_tmpdir (the old name stays a deprecated
// alias). innodb_tmpdir arrived in 5.6.29 and 5.7.11. ignore-db-dir existed from 5.6.3 until 8.0
// removed it together with the practice of listing data-directory subdirectories as databases.
func (p *Profile) fillMySQLFamily() {
	v := p.Version
	p.ReplicaLoadOption = optSlaveLoadTmpdir
	if v.AtLeast(8, 0, 26) {
		p.ReplicaLoadOption = optReplicaLoadTmpdir
	}
	p.InnoDBTmpdir = v.AtLeast(5, 7, 11) || (v.AtLeast(5, 6, 29) && !v.AtLeast(5, 7, 0))
	if v.AtLeast(5, 6, 3) && !v.AtLeast(8, 0, 0) {
		p.IgnoreDBDirOption = optIgnoreDBDir
	}
	p.GaleraSST = p.Flavor == v1alpha1.FlavorPerconaXtraDBCluster
	p.fillMySQLTempTables()
}

// fillMySQLTempTables follows the MySQL manuals' "Internal Temporary Table Use in MySQL" and
// "Temporary Tablespaces" (InnoDB): 5.7.1 moved InnoDB temporary tables into the global temporary
// tablespace ibtmp1, and 5.7.5 made InnoDB the default engine for on-disk internal temporary
// tables (internal_tmp_disk_storage_engine), so they went there too. 8.0.13 added the session
// temporary tablespaces under innodb_temp_tablespaces_dir for user-created and internal temporary
// tables, leaving ibtmp1 with the rollback segments of user-created ones; 8.0.16 removed
// internal_tmp_disk_storage_engine: on-disk internal temporary tables are always InnoDB, in the
// session temporary tablespaces.
//
// The TempTable engine (8.0) keeps in-memory internal temporary tables, all together up to
// temptable_max_ram: 1GiB by default on 8.0; from 8.4 3% of the machine's memory within 1GiB and
// 4GiB, so never less than 1GiB (1GiB seen on MySQL 9.7.4 with 24GiB). Its memory is the server's
// own, charged to the container beside the RAM volume (measured: test/mariadb
// TestMySQLMemoryCharges).
func (p *Profile) fillMySQLTempTables() {
	v := p.Version
	if v.AtLeast(8, 0, 0) {
		p.DefaultTempTableMaxRAM = 1 << 30
	}
	p.GlobalTempTablespace = v.AtLeast(5, 7, 1)
	p.SessionTempTablespaces = v.AtLeast(8, 0, 13)
	switch {
	case p.SessionTempTablespaces:
		p.InternalTmpTables = InternalTmpTablesInSessionTablespaces
	case v.AtLeast(5, 7, 5):
		p.InternalTmpTables = InternalTmpTablesInGlobalTablespace
	default:
		p.InternalTmpTables = InternalTmpTablesInTmpdir
	}
}

// fillMariaDB covers MariaDB, which never adopted replica_load_tmpdir: every release reads
// slave_load_tmpdir. innodb_tmpdir is documented from 10.2.1; ignore-db-dirs is a startup
// option of every 10.x and 11.x release.
//
// GaleraSST is set for every MariaDB image that can run Galera (all but bitnami/mariadb): the
// official image ships Galera and mariabackup, and the mariabackup SST script takes its
// temporary directory from the [mysqld], [sst] and [xtrabackup] groups, so without an [sst]
// tmpdir a donor would stage a dataset-sized backup on the RAM volume. Nothing but the SST
// scripts reads [sst], so writing it is harmless on a server that never joins a cluster.
func (p *Profile) fillMariaDB(withoutGalera bool) {
	v := p.Version
	p.ReplicaLoadOption = optSlaveLoadTmpdir
	p.InnoDBTmpdir = v.AtLeast(10, 2, 1)
	if v.AtLeast(10, 0, 0) {
		p.IgnoreDBDirOption = optIgnoreDBDirs
	}
	p.GaleraSST = !withoutGalera
	// MariaDB's on-disk internal temporary tables are Aria (or MyISAM) files in tmpdir
	// (aria_used_for_temp_tables); InnoDB temporary tables a user creates go to ibtmp1 from 10.2
	// ("InnoDB Temporary Tablespaces" in the MariaDB documentation).
	p.InternalTmpTables = InternalTmpTablesInTmpdir
	p.GlobalTempTablespace = v.AtLeast(10, 2, 0)
	// 11.5.0 spelled them max_total_tmp_space_usage and max_tmp_space_usage; 11.5.1 renamed them
	// for good ("Limiting Size of Created Disk Temporary Files and Tables" in the MariaDB
	// documentation). A floating "11.5" tag pulls a later release.
	p.TempSpaceLimit = v.AtLeast(11, 5, 1)
}

// imagePaths returns the drop-in directory and data directory of each packaging, as their
// Dockerfiles set them up:
//
//   - Official mysql (Oracle Linux and Debian variants, 5.7 to 9.x) appends
//     "!includedir /etc/mysql/conf.d/" to its my.cnf.
//   - Official mariadb includes /etc/mysql/conf.d/ and reorders the includes so that it is read
//     after mariadb.conf.d, making it the last word.
//   - percona/percona-server and the percona official image append "!includedir /etc/my.cnf.d"
//     to /etc/my.cnf; percona-xtradb-cluster's /etc/my.cnf includes /etc/my.cnf.d/, a link to
//     /etc/mysql/conf.d.
//   - Oracle's mysql/mysql-server and container-registry.oracle.com images use the RPM's
//     /etc/my.cnf, which includes no directory in current releases.
//   - Bitnami starts mysqld with --defaults-file=/opt/bitnami/<flavor>/conf/my.cnf and no
//     include directory; its data lives under /bitnami/<flavor>/data.
//
// A custom image gets the layout of the flavor's official image, which is what an image built
// FROM it keeps; spec.mysql.configDir and spec.mysql.dataDir correct it.
func imagePaths(f v1alpha1.MySQLFlavor, pkg Packaging) (configDir, dataDir string) {
	switch {
	case pkg == PackagingBitnami && f == v1alpha1.FlavorMariaDB:
		return "", bitnamiMariaDataDir
	case pkg == PackagingBitnami:
		return "", bitnamiMySQLDataDir
	case pkg == PackagingOracle:
		return "", officialDataDir
	case f == v1alpha1.FlavorPerconaServer, f == v1alpha1.FlavorPerconaXtraDBCluster:
		return redHatStyleConfigDir, officialDataDir
	default:
		return debianStyleConfigDir, officialDataDir
	}
}
