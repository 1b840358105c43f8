package mariadb_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

// The databases a freshly initialized server shows (the installer's test database is skipped).
var systemDatabases = []string{"information_schema", "mysql", "performance_schema", "sys"}

// TestInjectedConfiguration starts each server (this machine's MariaDB, and the MariaDB 11.8 and
// MySQL 9.7 images) from the injected template in each injection mode, reading the drop-in through
// the image's own option files, and checks that every directory the server uses is where the
// design puts it: tmpdir (and on MySQL the session temporary tablespaces) on a tmpfs of the
// ScratchVolume's size, the replica load directory (and innodb_tmpdir unless Memory is asked for)
// on the persistent data volume, and nothing of ours listed as a database.
func TestInjectedConfiguration(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, h *mariadb.Host) {
		for _, tc := range []struct {
			name   string
			mode   v1alpha1.InjectionMode
			innodb v1alpha1.InnoDBTmpdirPlacement
		}{
			{"ConfigFile", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk},
			{"Args", v1alpha1.InjectionArgs, v1alpha1.InnoDBTmpdirDisk},
			{"ConfigFileInnoDBTmpdirInMemory", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirMemory},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				sts := statefulSet(h, "db-"+strings.ToLower(tc.name), "--skip-networking")
				pod := startPod(t, h, sts, scratchVolume(sts.Name, "64Mi", tc.mode, tc.innodb))
				checkDelivery(t, pod, tc.mode)
				checkPlacement(t, pod, tc.innodb)
				checkDatabases(t, pod, systemDatabases)
			})
		}
		if isMySQL(h) {
			return
		}
		// Without ignore-db-dirs (an empty value clears the list the drop-in set) MariaDB 10.11
		// and 11.8 list the operator's directory as a database, #mysql50#.dbtune-scratch.sst; this
		// is what makes the assertion above worth making. MySQL 8.0 and later list only
		// directories that hold a schema.
		t.Run("WithoutIgnoreDBDirs", func(t *testing.T) {
			t.Parallel()
			sts := statefulSet(h, "db-unhidden", "--skip-networking")
			pod := newPod(t, h, sts, scratchVolume(sts.Name, "64Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
			c := pod.DatabaseContainer()
			c.Args = append(c.Args, "--ignore-db-dirs=")
			start(t, pod)
			checkDatabases(t, pod, append([]string{"#mysql50#" + mysql.PersistentDirName}, systemDatabases...))
		})
	})
}

// checkPlacement asks the running server where each directory is and checks it against the plan's
// layout and the volumes: the option names are the server's own (slave_load_tmpdir on MariaDB,
// replica_load_tmpdir on MySQL 8.0.26 and later).
func checkPlacement(t *testing.T, pod *mariadb.Pod, innodb v1alpha1.InnoDBTmpdirPlacement) {
	t.Helper()
	plan := pod.Plans[0]
	db := pod.DB()
	size := plan.Volume.EmptyDir.SizeLimit.Value()
	replicaLoad := plan.Profile.ReplicaLoadOption
	want := map[string]string{
		"tmpdir":        plan.Layout.TmpDir,
		replicaLoad:     plan.Layout.ReplicaLoadDir,
		"innodb_tmpdir": plan.Layout.InnoDBTmpDir,
	}
	if plan.Profile.IgnoreDBDirOption != "" {
		want["ignore_db_dirs"] = strings.Join(plan.Layout.HiddenDirs, ",")
	}
	if plan.Profile.SessionTempTablespaces {
		if plan.Layout.SessionTempDir == "" {
			t.Errorf("the plan leaves the session temporary tablespaces of %s %s in the data directory", plan.Profile.Flavor, plan.Profile.Version)
		}
		// The server reports the directory with a trailing slash.
		want["innodb_temp_tablespaces_dir"] = strings.TrimSuffix(plan.Layout.SessionTempDir, "/") + "/"
	}
	for name, value := range want {
		got := queryString(t, db, "SELECT @@"+name)
		if name == "innodb_temp_tablespaces_dir" && !strings.HasSuffix(got, "/") {
			got += "/"
		}
		if got != value {
			t.Errorf("@@%s = %q, want %q", name, got, value)
		}
	}
	if innodb == v1alpha1.InnoDBTmpdirMemory && plan.Layout.InnoDBTmpDir != plan.Layout.TmpDir {
		t.Errorf("innodbTmpdir: Memory placed innodb_tmpdir at %s, not on the scratch volume %s", plan.Layout.InnoDBTmpDir, plan.Layout.TmpDir)
	}
	checkTmpfs(t, pod, queryString(t, db, "SELECT @@tmpdir"), size)
	checkOnDataVolume(t, pod, queryString(t, db, "SELECT @@"+replicaLoad))
	if innodbTmp := queryString(t, db, "SELECT @@innodb_tmpdir"); innodb == v1alpha1.InnoDBTmpdirMemory {
		checkTmpfs(t, pod, innodbTmp, size)
	} else {
		checkOnDataVolume(t, pod, innodbTmp)
	}
	if plan.Profile.SessionTempTablespaces {
		dir := strings.TrimSuffix(queryString(t, db, "SELECT @@innodb_temp_tablespaces_dir"), "/")
		checkTmpfs(t, pod, dir, size)
		checkSessionTablespaces(t, pod, dir)
	}
}

// checkSessionTablespaces asserts that the server made its session temporary tablespaces in dir
// when it started, as INFORMATION_SCHEMA.INNODB_SESSION_TEMP_TABLESPACES names them.
func checkSessionTablespaces(t *testing.T, pod *mariadb.Pod, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(mustPath(t, pod, dir), "temp_*.ibt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Errorf("%s holds no session temporary tablespace (temp_*.ibt)", dir)
	}
	for _, row := range queryMaps(t, pod.DB(), "SELECT PATH FROM INFORMATION_SCHEMA.INNODB_SESSION_TEMP_TABLESPACES") {
		if p := row["PATH"]; !paths.Within(p, dir) {
			t.Errorf("session temporary tablespace %s is outside %s", p, dir)
		}
	}
	t.Logf("%d session temporary tablespaces in %s", len(files), dir)
}

// checkDelivery makes sure the settings reached the server the way the mode says, so each case
// tests its own path: a drop-in file in the include directory and no flags, or flags and no file.
func checkDelivery(t *testing.T, pod *mariadb.Pod, mode v1alpha1.InjectionMode) {
	t.Helper()
	plan := pod.Plans[0]
	args := pod.DatabaseContainer().Args
	_, flagged := mysql.FindOption(args, "tmpdir")
	dropIn, err := pod.Path(filepath.Join(plan.Profile.ConfigDir, mysql.DropInFileName))
	if err != nil {
		t.Fatal(err)
	}
	content, readErr := os.ReadFile(dropIn)
	switch mode {
	case v1alpha1.InjectionConfigFile:
		if flagged {
			t.Errorf("ConfigFile injection passed --tmpdir on the command line: %q", args)
		}
		if readErr != nil || string(content) != plan.ConfigData {
			t.Errorf("the container's %s is %q (%v), want the rendered drop-in %q", dropIn, content, readErr, plan.ConfigData)
		}
	case v1alpha1.InjectionArgs:
		if !flagged || len(plan.Args) == 0 {
			t.Errorf("Args injection did not pass --tmpdir: %q", args)
		}
		if readErr == nil {
			t.Errorf("Args injection left a drop-in in the container: %q", content)
		}
	}
}

// checkTmpfs asserts that dir, in the container, is on a tmpfs of exactly size bytes.
func checkTmpfs(t *testing.T, pod *mariadb.Pod, dir string, size int64) {
	t.Helper()
	st := statfs(t, pod, dir)
	if st.Type != unix.TMPFS_MAGIC {
		t.Errorf("%s is on a filesystem of type %#x, not a tmpfs", dir, st.Type)
	}
	if total := int64(st.Blocks) * st.Bsize; total != size {
		t.Errorf("the tmpfs at %s holds %d bytes, want the sizeLimit %d", dir, total, size)
	}
}

// checkOnDataVolume asserts that dir, in the container, is the directory of that name on the
// claim, created world-writable with the sticky bit before the server started.
func checkOnDataVolume(t *testing.T, pod *mariadb.Pod, dir string) {
	t.Helper()
	rel, err := filepath.Rel(pod.DataDir, dir)
	if err != nil || !filepath.IsLocal(rel) {
		t.Errorf("%s is not inside the data directory %s", dir, pod.DataDir)
		return
	}
	inPod, err := pod.Path(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := os.Stat(inPod)
	if err != nil {
		t.Errorf("the server's %s does not exist in the container: %v", dir, err)
		return
	}
	onClaim, err := os.Stat(filepath.Join(pod.ClaimDir("data"), rel))
	if err != nil || !os.SameFile(seen, onClaim) {
		t.Errorf("the container's %s is not the directory on the data volume's claim (%v)", dir, err)
	}
	if st := statfs(t, pod, dir); st.Type == unix.TMPFS_MAGIC {
		t.Errorf("%s is on a tmpfs", dir)
	}
	if mode := seen.Mode(); mode.Perm() != 0o777 || mode&os.ModeSticky == 0 {
		t.Errorf("%s has mode %v, want drwxrwxrwt as the init container makes it", dir, mode)
	}
}

func statfs(t *testing.T, pod *mariadb.Pod, dir string) unix.Statfs_t {
	t.Helper()
	p, err := pod.Path(dir)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	return st
}

// checkDatabases asserts SHOW DATABASES, after making sure the operator's directory is really in
// the data directory for the server to list.
func checkDatabases(t *testing.T, pod *mariadb.Pod, want []string) {
	t.Helper()
	if st, err := os.Stat(filepath.Join(pod.ClaimDir("data"), mysql.PersistentDirName)); err != nil || !st.IsDir() {
		t.Fatalf("%s is missing from the data volume: %v", mysql.PersistentDirName, err)
	}
	rows, err := pod.DB().QueryContext(ctx(t), "SHOW DATABASES")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var got []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("SHOW DATABASES = %q, want %q", got, want)
	}
}

// TestRevertRestoresServerDefaults starts each server injected, writes data, then restarts it from
// the template as the controller leaves it after the ScratchVolume is deleted (inject.Strip: every
// entry of ours gone) on the same data volume: the server is back on its own defaults for every
// directory the drop-in had moved, and the data written while it was injected is intact.
func TestRevertRestoresServerDefaults(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, h *mariadb.Host) {
		sts := statefulSet(h, "reverted", "--skip-networking")
		pod := startPod(t, h, sts, scratchVolume(sts.Name, "64Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
		plan := pod.Plans[0]
		mustExec(t, pod.DB(), "CREATE DATABASE app")
		want := keep(t, pod.DB(), 1000)
		moved := []string{"tmpdir", plan.Profile.ReplicaLoadOption, "innodb_tmpdir"}
		if plan.Profile.SessionTempTablespaces {
			moved = append(moved, "innodb_temp_tablespaces_dir")
		}

		reverted := inject.Strip(pod.Template)
		if diff := cmp.Diff(sts.Spec.Template, reverted, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the reverted template differs from the StatefulSet's own (-own +reverted):\n%s", diff)
		}
		pod.Template, pod.Plans, pod.ConfigMaps = reverted, nil, map[string]map[string]string{}
		if err := pod.Restart(ctx(t)); err != nil {
			t.Fatal(err)
		}
		db := pod.DB()
		for _, name := range moved {
			got := queryString(t, db, "SELECT @@"+name)
			def := serverDefault(t, db, name)
			if got != def {
				t.Errorf("after the revert @@%s = %q, want the server's default %q", name, got, def)
			}
			if got != "" && (paths.Within(got, plan.Layout.TmpDir) || strings.Contains(got, mysql.PersistentDirName)) {
				t.Errorf("after the revert @@%s = %q still names a directory of the injection", name, got)
			}
		}
		if got := checksumKept(t, db); got != want {
			t.Errorf("the data written while injected changed across the revert: %s, want %s", got, want)
		}
	})
}

// serverDefault checks that no option file or argument set the variable, by the server's own record
// of where each value came from (performance_schema.variables_info on MySQL,
// information_schema.SYSTEM_VARIABLES on MariaDB), and returns its value.
func serverDefault(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var source string
	q := "SELECT VARIABLE_SOURCE FROM performance_schema.variables_info WHERE VARIABLE_NAME = ?"
	want := []string{"COMPILED"}
	if err := db.QueryRowContext(ctx(t), q, name).Scan(&source); err != nil {
		q = "SELECT GLOBAL_VALUE_ORIGIN FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = ?"
		want = []string{"COMPILE-TIME", "AUTO"}
		if err := db.QueryRowContext(ctx(t), q, strings.ToUpper(name)).Scan(&source); err != nil {
			t.Fatalf("where @@%s comes from: %v", name, err)
		}
	}
	if !slices.Contains(want, source) {
		t.Errorf("@@%s comes from %s after the revert, not from the server's own default (%s)", name, source, strings.Join(want, ", "))
	}
	return queryString(t, db, "SELECT @@"+name)
}
