package mysql

import (
	"path"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// defaultSessionTempDir is where MySQL keeps the session temporary tablespaces unless
// innodb_temp_tablespaces_dir says otherwise: #innodb_temp in the data directory.
const defaultSessionTempDir = "#innodb_temp"

// Locations lists, for every kind of temporary data the profile's server writes, where l puts it:
// on the RAM volume (l.TmpDir) or on disk. sstConfigured says whether the [sst] groups reach the
// server (ConfigFile injection); without them a Galera state transfer stages in tmpdir.
//
// The global temporary tablespace ibtmp1 always stays where the server puts it, in the InnoDB
// data home directory (the data directory unless innodb_data_home_dir moves it): its location is
// innodb_temp_data_file_path relative to that directory, shared with the system tablespace, and no
// option moves it alone. It holds the rollback segments of user-created temporary tables from MySQL
// 8.0.13; before that, and on MariaDB, also the InnoDB temporary tables users create (and, on MySQL
// 5.7.5 to 8.0.12 with the default internal_tmp_disk_storage_engine=InnoDB, the on-disk internal
// temporary tables). It grows without bound by default and only shrinks at a restart, so a tmpfs
// would be the wrong place for it anyway.
func Locations(p Profile, l Layout, sstConfigured bool) []v1alpha1.TempLocation {
	medium := func(dir string) v1alpha1.TempMedium {
		if dir != "" && paths.Within(dir, l.TmpDir) {
			return v1alpha1.TempMediumMemory
		}
		return v1alpha1.TempMediumDisk
	}
	at := func(data v1alpha1.TempData, option, dir string) v1alpha1.TempLocation {
		return v1alpha1.TempLocation{Data: data, Medium: medium(dir), Option: option, Path: dir}
	}
	locs := []v1alpha1.TempLocation{at(v1alpha1.TempDataTmpdir, optTmpdir, l.TmpDir)}
	if p.SessionTempTablespaces {
		dir := l.SessionTempDir
		if dir == "" {
			dir = path.Join(p.DataDir, defaultSessionTempDir)
		}
		locs = append(locs, at(v1alpha1.TempDataSessionTempTablespaces, optTempTablespaces, dir))
	}
	if p.GlobalTempTablespace {
		locs = append(locs, at(v1alpha1.TempDataGlobalTempTablespace, optTempDataFilePath, p.DataDir))
	}
	if p.InnoDBTmpdir {
		locs = append(locs, at(v1alpha1.TempDataInnoDBTmpdir, optInnoDBTmpdir, l.InnoDBTmpDir))
	}
	locs = append(locs, at(v1alpha1.TempDataReplicaLoad, p.ReplicaLoadOption, l.ReplicaLoadDir))
	switch {
	case p.GaleraSST && sstConfigured:
		locs = append(locs, at(v1alpha1.TempDataSST, "[sst] "+optTmpdir, l.SSTTmpDir))
	case p.GaleraSST:
		locs = append(locs, at(v1alpha1.TempDataSST, optTmpdir, l.TmpDir))
	}
	return locs
}
