package mysql

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// TestLocations: each server reports the temporary data it has, in RAM exactly where the layout
// puts it on the volume.
func TestLocations(t *testing.T) {
	const ram = "/var/lib/mysql-tmp"
	base := "/var/lib/mysql/" + PersistentDirName
	mem, disk := v1alpha1.TempMediumMemory, v1alpha1.TempMediumDisk
	loc := func(d v1alpha1.TempData, m v1alpha1.TempMedium, opt, path string) v1alpha1.TempLocation {
		return v1alpha1.TempLocation{Data: d, Medium: m, Option: opt, Path: path}
	}
	tmpdir := loc(v1alpha1.TempDataTmpdir, mem, "tmpdir", ram)
	innodb := loc(v1alpha1.TempDataInnoDBTmpdir, disk, "innodb_tmpdir", base+"/innodb-tmp")
	global := loc(v1alpha1.TempDataGlobalTempTablespace, disk, "innodb_temp_data_file_path", "/var/lib/mysql")
	tests := []struct {
		name          string
		image         string
		spec          *v1alpha1.MySQLSpec
		sstConfigured bool
		want          []v1alpha1.TempLocation
	}{
		{"mysql 8.4", "mysql:8.4", nil, true, []v1alpha1.TempLocation{tmpdir,
			loc(v1alpha1.TempDataSessionTempTablespaces, mem, "innodb_temp_tablespaces_dir", ram), global, innodb,
			loc(v1alpha1.TempDataReplicaLoad, disk, "replica_load_tmpdir", base+"/replica-load")}},
		{"mysql 8.4 with the session tablespaces kept", "mysql:8.4",
			&v1alpha1.MySQLSpec{SessionTempTablespaces: v1alpha1.TempTablespacesDisk}, true, []v1alpha1.TempLocation{tmpdir,
				loc(v1alpha1.TempDataSessionTempTablespaces, disk, "innodb_temp_tablespaces_dir", "/var/lib/mysql/#innodb_temp"), global, innodb,
				loc(v1alpha1.TempDataReplicaLoad, disk, "replica_load_tmpdir", base+"/replica-load")}},
		{"mysql 5.7 keeps its temporary tables in ibtmp1", "mysql:5.7", nil, true, []v1alpha1.TempLocation{tmpdir, global, innodb,
			loc(v1alpha1.TempDataReplicaLoad, disk, "slave_load_tmpdir", base+"/replica-load")}},
		{"mariadb with galera and the [sst] group", "mariadb:11.4", nil, true, []v1alpha1.TempLocation{tmpdir, global, innodb,
			loc(v1alpha1.TempDataReplicaLoad, disk, "slave_load_tmpdir", base+"/replica-load"),
			loc(v1alpha1.TempDataSST, disk, "[sst] tmpdir", base+"/sst-tmp")}},
		{"mariadb with galera and flags only", "mariadb:11.4", &v1alpha1.MySQLSpec{InnoDBTmpdir: v1alpha1.InnoDBTmpdirMemory}, false,
			[]v1alpha1.TempLocation{tmpdir, global, loc(v1alpha1.TempDataInnoDBTmpdir, mem, "innodb_tmpdir", ram),
				loc(v1alpha1.TempDataReplicaLoad, disk, "slave_load_tmpdir", base+"/replica-load"),
				loc(v1alpha1.TempDataSST, mem, "tmpdir", ram)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := detect(t, tt.image)
			got := Locations(p, DefaultLayout(p, ram, tt.spec), tt.sstConfigured)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Locations mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
