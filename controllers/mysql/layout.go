package mysql

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// PersistentDirName is the directory, inside the data directory, that holds every directory the
// operator keeps on the persistent volume. Both ends of the name matter:
//
//   - The leading dot: mysqld --initialize refuses a non-empty data directory but ignores
//     entries starting with '.', so a first start on an empty volume still initializes.
//   - The ".sst" suffix: a Galera joiner empties the data directory before a state transfer but
//     keeps entries matching its default keep-pattern, which includes ".*\.sst$" in both the
//     Percona XtraDB Cluster and the MariaDB scripts. Without it a transfer would delete its own
//     temporary directory halfway and leave the running server without its replica-load and
//     innodb_tmpdir directories.
//
// MariaDB and MySQL before 8.0 would list it as a database; the drop-in hides it.
const PersistentDirName = ".dbtune-scratch.sst"

// Sub-directories of PersistentDirName.
const (
	replicaLoadSubdir = "replica-load"
	innoDBTmpSubdir   = "innodb-tmp"
	sstTmpSubdir      = "sst-tmp"
)

// Layout is where each kind of temporary file goes, as absolute paths inside the container.
// Empty fields are left to the server's defaults.
type Layout struct {
	// TmpDir is on the RAM volume: sort files, internal on-disk temporary tables.
	TmpDir string
	// ReplicaLoadDir holds a replica's SQL_LOAD-* files; persistent.
	ReplicaLoadDir string
	// InnoDBTmpDir holds online ALTER TABLE sort files; persistent unless the user chose Memory.
	InnoDBTmpDir string
	// SSTTmpDir is the Galera state-transfer staging area; persistent.
	SSTTmpDir string
	// SessionTempDir is innodb_temp_tablespaces_dir on the RAM volume; empty leaves the session
	// temporary tablespaces in #innodb_temp in the data directory. It is the volume's root, which
	// exists before the server starts: the server refuses to start when an explicit
	// innodb_temp_tablespaces_dir does not exist or lies inside the data directory, and creates
	// only its default #innodb_temp itself.
	SessionTempDir string
	// HiddenDirs are names of directories inside the data directory to hide from SHOW DATABASES.
	HiddenDirs []string
	// TempSpaceLimit and SessionTempSpaceLimit are the server's own limits on temporary space in
	// bytes (max_tmp_total_space_usage, max_tmp_session_space_usage); 0 leaves the server's
	// default. See LimitTempSpace.
	TempSpaceLimit, SessionTempSpaceLimit int64
}

// DefaultLayout places everything for a profile: tmpDir (the RAM volume's mount path) for
// tmpdir and, unless spec.mysql.sessionTempTablespaces says Disk, the session temporary
// tablespaces; the persistent directories under PersistentRoot/PersistentDirName unless spec
// overrides them. It fills only what the profile's server reads.
func DefaultLayout(p Profile, tmpDir string, spec *v1alpha1.MySQLSpec) Layout {
	if spec == nil {
		spec = &v1alpha1.MySQLSpec{}
	}
	root := p.PersistentRoot
	if root == "" {
		root = p.DataDir
	}
	base := path.Join(root, PersistentDirName)
	l := Layout{TmpDir: tmpDir, ReplicaLoadDir: path.Join(base, replicaLoadSubdir)}
	if spec.ReplicaLoadDir != "" {
		l.ReplicaLoadDir = string(spec.ReplicaLoadDir)
	}
	if p.InnoDBTmpdir {
		l.InnoDBTmpDir = path.Join(base, innoDBTmpSubdir)
		if spec.InnoDBTmpdir == v1alpha1.InnoDBTmpdirMemory {
			l.InnoDBTmpDir = tmpDir
		}
	}
	if p.GaleraSST {
		l.SSTTmpDir = path.Join(base, sstTmpSubdir)
	}
	if p.SessionTempTablespaces && spec.SessionTempTablespaces != v1alpha1.TempTablespacesDisk {
		l.SessionTempDir = tmpDir
	}
	l.HiddenDirs = topLevelEntries(p.DataDir, l.PersistentDirs())
	return l
}

// PersistentDirs lists the directories that must exist on the persistent volume before mysqld
// starts, in a stable order. The RAM-backed InnoDBTmpDir of the Memory placement is not one.
func (l Layout) PersistentDirs() []string {
	var dirs []string
	for _, d := range []string{l.ReplicaLoadDir, l.InnoDBTmpDir, l.SSTTmpDir} {
		if d != "" && !paths.Within(d, l.TmpDir) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// topLevelEntries returns, sorted and without duplicates, the names directly under dataDir
// through which the given directories pass.
func topLevelEntries(dataDir string, dirs []string) []string {
	seen := map[string]bool{}
	var names []string
	for _, d := range dirs {
		if dataDir == "" || d == dataDir || !paths.Within(d, dataDir) {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(d, dataDir+"/"), "/")
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Validate checks that the layout can be rendered safely for p: every path absolute, clean and
// free of characters an option file or mysqld would read differently, the persistent
// directories off the RAM volume, every directory the profile's server reads present, and
// nothing in the data directory that a first start or a Galera state transfer would trip over.
func (l Layout) Validate(p Profile) error {
	fields := []struct {
		name, value string
		required    bool
	}{
		{"tmpdir", l.TmpDir, true},
		{p.ReplicaLoadOption, l.ReplicaLoadDir, true},
		{optInnoDBTmpdir, l.InnoDBTmpDir, p.InnoDBTmpdir},
		{"sst tmpdir", l.SSTTmpDir, p.GaleraSST},
		{optTempTablespaces, l.SessionTempDir, false},
	}
	var errs []error
	for _, f := range fields {
		if err := checkDir(f.value, f.required); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
		}
	}
	for _, d := range []string{l.ReplicaLoadDir, l.SSTTmpDir} {
		if d != "" && paths.Within(d, l.TmpDir) {
			errs = append(errs, fmt.Errorf("%s is on the RAM volume %s; it must survive a restart", d, l.TmpDir))
		}
	}
	if l.SessionTempDir != "" && !p.SessionTempTablespaces {
		errs = append(errs, fmt.Errorf("%s: %s %d.%d has no session temporary tablespaces", optTempTablespaces, p.Flavor, p.Version.Major, p.Version.Minor))
	}
	if l.SessionTempDir != "" && paths.Within(l.SessionTempDir, p.DataDir) {
		errs = append(errs, fmt.Errorf("%s %s lies in the data directory %s, where the server refuses it", optTempTablespaces, l.SessionTempDir, p.DataDir))
	}
	for _, h := range l.HiddenDirs {
		if h == "" || h == "." || h == ".." || strings.ContainsRune(h, '/') || !v1alpha1.IsSafePath(h) {
			errs = append(errs, fmt.Errorf("hidden directory %q: must be a plain directory name", h))
		}
	}
	errs = append(errs, l.checkInitialize(p)...)
	if p.GaleraSST && paths.Within(l.SSTTmpDir, p.DataDir) {
		if name := topLevelEntries(p.DataDir, []string{l.SSTTmpDir}); len(name) == 1 && !strings.HasSuffix(name[0], ".sst") {
			errs = append(errs, fmt.Errorf("%s/%s would be deleted by a Galera joiner emptying the data directory "+
				"during the state transfer it stages; its name must end in .sst", p.DataDir, name[0]))
		}
	}
	return errors.Join(errs...)
}

// checkInitialize guards the first start on a new, empty volume (a new replica): MySQL 5.7 and
// later run mysqld --initialize, which refuses a data directory holding anything but entries
// starting with '.' (and, on 5.7, directories named by ignore-db-dir). MariaDB's installer does
// not mind.
func (l Layout) checkInitialize(p Profile) []error {
	if p.Flavor == v1alpha1.FlavorMariaDB {
		return nil
	}
	var errs []error
	for _, name := range topLevelEntries(p.DataDir, l.PersistentDirs()) {
		if strings.HasPrefix(name, ".") || (p.IgnoreDBDirOption != "" && slices.Contains(l.HiddenDirs, name)) {
			continue
		}
		errs = append(errs, fmt.Errorf("%s/%s would make mysqld --initialize refuse a new, empty data "+
			"directory; choose a directory whose name inside %s starts with '.'", p.DataDir, name, p.DataDir))
	}
	return errs
}

func checkDir(dir string, required bool) error {
	switch {
	case dir == "" && required:
		return errors.New("no directory given")
	case dir == "":
		return nil
	case !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/":
		return fmt.Errorf("%q must be a clean absolute path other than /", dir)
	case !v1alpha1.IsSafePath(dir):
		return fmt.Errorf("%q contains whitespace, quotes, ':', '#', ';', '\\' or control characters", dir)
	}
	return nil
}
