package mariadb_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

// The databases a freshly initialized server shows (the installer's test database is skipped).
var systemDatabases = []string{"information_schema", "mysql", "performance_schema", "sys"}

// TestInjectedConfiguration starts mariadbd from the injected template in each injection mode and
// checks that every directory the server uses is where the design puts it: tmpdir on a tmpfs of
// the ScratchVolume's size, the replica load directory (and innodb_tmpdir unless Memory is asked
// for) on the persistent data volume, and nothing of ours listed as a database.
func TestInjectedConfiguration(t *testing.T) {
	t.Parallel()
	h := newHost(t)
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
			plan := pod.Plans[0]
			checkDelivery(t, pod, tc.mode)

			db := pod.DB()
			want := map[string]string{
				"tmpdir":            plan.Layout.TmpDir,
				"slave_load_tmpdir": plan.Layout.ReplicaLoadDir,
				"innodb_tmpdir":     plan.Layout.InnoDBTmpDir,
				"ignore_db_dirs":    strings.Join(plan.Layout.HiddenDirs, ","),
			}
			for name, value := range want {
				if got := queryString(t, db, "SELECT @@"+name); got != value {
					t.Errorf("@@%s = %q, want %q", name, got, value)
				}
			}
			if tc.innodb == v1alpha1.InnoDBTmpdirMemory && plan.Layout.InnoDBTmpDir != plan.Layout.TmpDir {
				t.Errorf("innodbTmpdir: Memory placed innodb_tmpdir at %s, not on the scratch volume %s", plan.Layout.InnoDBTmpDir, plan.Layout.TmpDir)
			}

			checkTmpfs(t, pod, queryString(t, db, "SELECT @@tmpdir"), plan.Volume.EmptyDir.SizeLimit.Value())
			checkOnDataVolume(t, pod, queryString(t, db, "SELECT @@slave_load_tmpdir"))
			if innodbTmp := queryString(t, db, "SELECT @@innodb_tmpdir"); tc.innodb == v1alpha1.InnoDBTmpdirMemory {
				checkTmpfs(t, pod, innodbTmp, plan.Volume.EmptyDir.SizeLimit.Value())
			} else {
				checkOnDataVolume(t, pod, innodbTmp)
			}
			checkDatabases(t, pod, systemDatabases)
		})
	}
	// Without ignore-db-dirs (an empty value clears the list the drop-in set) MariaDB lists the
	// operator's directory as a database; this is what makes the assertion above worth making.
	t.Run("WithoutIgnoreDBDirs", func(t *testing.T) {
		t.Parallel()
		sts := statefulSet(h, "db-unhidden", "--skip-networking")
		pod := newPod(t, h, sts, scratchVolume(sts.Name, "64Mi", v1alpha1.InjectionConfigFile, v1alpha1.InnoDBTmpdirDisk))
		c := pod.DatabaseContainer()
		c.Args = append(c.Args, "--ignore-db-dirs=")
		start(t, pod)
		checkDatabases(t, pod, append([]string{"#mysql50#" + mysql.PersistentDirName}, systemDatabases...))
	})
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
