package main

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// database is one database test image: a server from a Debian suite's packages, installed by
// mmdebstrap, shaped like the official image of its flavor in everything the operator relies on.
type database struct {
	// name selects the image (-database NAME) and names its files: <out>/<name>.tar, the
	// reference in <out>/<name>.ref and the unpacked root in <out>/root/<name>.
	name string
	// repository is the image's repository under localhost/dbtune; its tag is the server's
	// major.minor version and "-debian", which the operator reads as the official image's.
	repository string
	// suite is the Debian suite to install from; empty means this machine's own release.
	suite string
	// packages are installed on top of the minbase variant; the first one's version is the
	// server's and names the image.
	packages []string
	// title describes the image in its labels and in the build's output.
	title string
	// config is the image's own option files, as the official image ships them.
	config []entry
	// hooks run inside the new root file system: after the essential packages (before the
	// server's, so that its maintainer scripts find the mysql user) and at the end.
	essentialHooks, customizeHooks []string
}

// mysqlUser gives the root file system the official images' mysql user and group, 999:999, before
// the server's packages are installed: MariaDB's maintainer scripts then keep it, and MySQL's
// server-core package creates none of its own. The files are edited directly: the development
// suite's essential set has no groupadd or useradd.
const mysqlUser = `grep -q '^mysql:' "$1/etc/group" || echo 'mysql:x:999:' >>"$1/etc/group"; ` +
	`grep -q '^mysql:' "$1/etc/passwd" || echo 'mysql:x:999:999:MySQL Server:/nonexistent:/bin/false' >>"$1/etc/passwd"; ` +
	`if [ -f "$1/etc/shadow" ] && ! grep -q '^mysql:' "$1/etc/shadow"; then echo 'mysql:!:1::::::' >>"$1/etc/shadow"; fi; ` +
	`if [ -f "$1/etc/gshadow" ] && ! grep -q '^mysql:' "$1/etc/gshadow"; then echo 'mysql:!::' >>"$1/etc/gshadow"; fi`

// serverDirs are the directories the official images create for the mysql user: an empty data
// directory (Debian's maintainer scripts initialize one, in /var/lib/mariadb from MariaDB 11.8),
// the socket's directory and MySQL's secure_file_priv.
const serverDirs = `chroot "$1" sh -c 'rm -rf /var/lib/mysql /var/lib/mariadb && mkdir -p /var/lib/mysql /run/mysqld /var/lib/mysql-files /etc/mysql/conf.d && ` +
	`chown mysql:mysql /var/lib/mysql /run/mysqld /var/lib/mysql-files && chmod 0750 /var/lib/mysql-files'`

// mariadbIncludeOrder makes /etc/mysql/conf.d the last directory MariaDB reads, as the official
// mariadb image does (Debian's mariadb.cnf reads it before mariadb.conf.d), and comments out
// Debian's loopback-only bind-address.
const mariadbIncludeOrder = `sed -i -e '/^!includedir \/etc\/mysql\/conf.d/d' -e '$a !includedir /etc/mysql/conf.d/' "$1/etc/mysql/mariadb.cnf" && ` +
	`sed -i -E 's/^(bind-address|user[[:space:]])/#&/' "$1"/etc/mysql/mariadb.conf.d/*.cnf`

// mysqlOwnLayout removes what Debian's packages put where the official mysql image has nothing:
// its /etc/my.cnf is the only option file, and it includes /etc/mysql/conf.d.
const mysqlOwnLayout = `rm -f "$1/etc/mysql/my.cnf" "$1/etc/alternatives/my.cnf"`

// officialMySQLConf is /etc/my.cnf of the official mysql image (8.4 and 9.x): datadir, socket,
// secure_file_priv and the server's user, then conf.d, which therefore has the last word.
const officialMySQLConf = `# dbtune MySQL test image (hack/images): the official mysql image's /etc/my.cnf.
[mysqld]
host-cache-size=0
skip-name-resolve
datadir=/var/lib/mysql
socket=/var/run/mysqld/mysqld.sock
secure-file-priv=/var/lib/mysql-files
user=mysql
pid-file=/var/run/mysqld/mysqld.pid

[client]
socket=/var/run/mysqld/mysqld.sock

!includedir /etc/mysql/conf.d/
`

// mariadbImageConf is the MariaDB images' own settings, in mariadb.conf.d, as the official image
// has them: a server in a container listens on the pod's address and does not resolve client
// names.
// Debian's MariaDB 11.8 moved the data directory to /var/lib/mariadb and the socket and pid file
// to /run/mariadbd; the official image keeps them in /var/lib/mysql and /run/mysqld.
const mariadbImageConf = `# dbtune MariaDB test image (hack/images): the official mariadb image's data directory, socket
# and pid file, listening on every address of the pod.
[client-server]
socket = /run/mysqld/mysqld.sock

[mariadbd]
datadir = /var/lib/mysql
pid-file = /run/mysqld/mysqld.pid
bind-address = 0.0.0.0
host-cache-size = 0
skip-name-resolve
`

var databases = []database{
	{
		name: "mariadb", repository: "mariadb", packages: []string{"mariadb-server", "mariadb-client"},
		title:          "MariaDB from this machine's Debian release",
		essentialHooks: []string{mysqlUser},
		customizeHooks: []string{serverDirs, mariadbIncludeOrder},
		config:         mariadbConfig(),
	},
	{
		name: "mariadb-sid", repository: "mariadb", suite: "sid", packages: []string{"mariadb-server", "mariadb-client"},
		title:          "MariaDB from Debian's development suite",
		essentialHooks: []string{mysqlUser},
		customizeHooks: []string{serverDirs, mariadbIncludeOrder},
		config:         mariadbConfig(),
	},
	{
		name: "mysql-sid", repository: "mysql", suite: "sid", packages: []string{"mysql-server-core", "mysql-client-core"},
		title:          "MySQL from Debian's development suite",
		essentialHooks: []string{mysqlUser},
		customizeHooks: []string{serverDirs, mysqlOwnLayout},
		config: []entry{
			{path: "etc/", mode: 0o755, dir: true},
			{path: "etc/my.cnf", mode: 0o644, contents: []byte(officialMySQLConf)},
		},
	},
}

func mariadbConfig() []entry {
	return []entry{
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/mysql/", mode: 0o755, dir: true},
		{path: "etc/mysql/mariadb.conf.d/", mode: 0o755, dir: true},
		{path: "etc/mysql/mariadb.conf.d/90-dbtune-image.cnf", mode: 0o644, contents: []byte(mariadbImageConf)},
	}
}

func findDatabase(n string) (database, error) {
	var names []string
	for _, d := range databases {
		if d.name == n {
			return d, nil
		}
		names = append(names, d.name)
	}
	return database{}, fmt.Errorf("-database %q: want one of %s", n, strings.Join(names, ", "))
}

// startPath is the images' entrypoint.
const startPath = "usr/local/bin/dbtune-db-start"

// startScript is the entrypoint of every database image, in POSIX sh: the project's own, shaped
// like the official images' docker-entrypoint.sh in what the operator relies on. Arguments that
// start with '-' are the server's; the data directory is whatever the option files and those
// arguments make it (as the server itself reports); an empty one is initialized with the same
// arguments, so that a first start already uses the directories a drop-in or the arguments name;
// the root password comes from MYSQL_ROOT_PASSWORD or MARIADB_ROOT_PASSWORD, is generated and
// printed with MYSQL_RANDOM_ROOT_PASSWORD or MARIADB_RANDOM_ROOT_PASSWORD, or is left empty with
// MYSQL_ALLOW_EMPTY_PASSWORD or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, and without any of them an
// empty data directory is refused, as the official images do; the server runs as mysql.
const startScript = `#!/bin/sh
# dbtune-db-start: the entrypoint of the dbtune database test images (hack/images).
set -eu
me=dbtune-db-start
if command -v mariadbd >/dev/null 2>&1; then server=mariadbd; else server=mysqld; fi
case "${1:-}" in
-* | "") set -- "$server" "$@" ;;
esac
case "$1" in
mysqld | mariadbd) shift ;;
*) exec "$@" ;;
esac

datadir=$("$server" "$@" --verbose --help 2>/dev/null | awk '$1 == "datadir" { print $2; exit }')
datadir=${datadir%/}
if [ -z "$datadir" ]; then
	echo "$me: $server $* --verbose --help names no datadir; the server's options are wrong:" >&2
	"$server" "$@" --verbose --help >/dev/null
	exit 1
fi
user=
if [ "$(id -u)" = 0 ]; then
	user=--user=mysql
	mkdir -p "$datadir" /run/mysqld
	chown mysql:mysql "$datadir" /run/mysqld
fi

if [ ! -d "$datadir/mysql" ]; then
	password=${MARIADB_ROOT_PASSWORD:-${MYSQL_ROOT_PASSWORD:-}}
	empty=${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:-${MYSQL_ALLOW_EMPTY_PASSWORD:-}}
	if [ -z "$password" ] && [ -n "${MARIADB_RANDOM_ROOT_PASSWORD:-${MYSQL_RANDOM_ROOT_PASSWORD:-}}" ]; then
		password=$(head -c 18 /dev/urandom | base64)
		echo "$me: GENERATED ROOT PASSWORD: $password" >&2
	fi
	if [ -z "$password" ] && [ -z "$empty" ]; then
		echo "$me: $datadir is empty and no root password is set: set MYSQL_ROOT_PASSWORD (or MARIADB_ROOT_PASSWORD), MYSQL_RANDOM_ROOT_PASSWORD=1, or MYSQL_ALLOW_EMPTY_PASSWORD=1 for a root without one" >&2
		exit 1
	fi
	sql=
	if [ -n "$password" ]; then
		quoted=$(printf '%s' "$password" | sed "s/\\\\/\\\\\\\\/g; s/'/\\\\'/g")
		sql="ALTER USER 'root'@'localhost' IDENTIFIED BY '$quoted';"
	fi
	init=$(mktemp)
	echo "$me: initializing the empty data directory $datadir" >&2
	if [ "$server" = mariadbd ]; then
		# Only root@localhost stays: mariadb-install-db also makes root@127.0.0.1, ::1 and the
		# host name, without a password.
		printf "DELETE FROM mysql.global_priv WHERE User='root' AND Host<>'localhost';\nFLUSH PRIVILEGES;\n%s\n" "$sql" >"$init"
		mariadb-install-db $user --datadir="$datadir" --auth-root-authentication-method=normal --skip-test-db "$@" >&2
		mariadbd $user --datadir="$datadir" "$@" --bootstrap --skip-networking <"$init" >&2
	else
		printf '%s\n' "$sql" >"$init"
		chmod 0644 "$init"
		mysqld $user "$@" --initialize-insecure --init-file="$init" >&2
	fi
	rm -f "$init"
fi

exec "$server" $user "$@"
`

// buildDatabase writes <out>/<name>.tar, the image reference beside it in <out>/<name>.ref, and,
// with unpack, the image's whole file system in <out>/root/<name> for tests that run the server
// without a container runtime.
func buildDatabase(ctx context.Context, o *options, d database) error {
	suite := d.suite
	if suite == "" {
		var err error
		if suite, err = debianSuite("/etc/os-release"); err != nil {
			return err
		}
	}
	versions, err := d.versions(ctx, filepath.Join(o.cache, "apt"), suite)
	if err != nil {
		return err
	}
	server, err := upstreamVersion(versions[0])
	if err != nil {
		return err
	}
	tag, err := name.NewTag(fmt.Sprintf("localhost/dbtune/%s:%s-debian", d.repository, server.majorMinor()))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "images: %s: %s\n", d.name, packageList(d.packages, versions))
	rootfs, err := d.rootfs(ctx, filepath.Join(o.cache, "rootfs"), suite, versions)
	if err != nil {
		return err
	}
	// The image is a function of the root file system and this file's entries: when neither
	// changed since the last build, its outputs stand.
	stamp := filepath.Join(o.out, d.name+".stamp")
	key := d.stampKey(o, rootfs, tag.String())
	if d.built(o, stamp, key) {
		fmt.Fprintf(os.Stderr, "images: %s is current (%s %s)\n", tag, d.packages[0], versions[0])
		return nil
	}
	start := time.Now()
	img, err := d.image(o, suite, rootfs, versions)
	if err != nil {
		return err
	}
	if err := writeTarball(filepath.Join(o.out, d.name+".tar"), tag, img); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, d.name+".ref"), []byte(tag.String()+"\n"), 0o644); err != nil {
		return err
	}
	if o.unpack {
		if err := unpack(img, tag.String(), filepath.Join(o.out, "root", d.name)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(stamp, []byte(key+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "images: %s (%s %s) in %s\n", tag, d.packages[0], versions[0], time.Since(start).Round(time.Millisecond))
	return nil
}

// stampKey hashes everything an image is made of besides the packages (which name the root file
// system): the root file system's file, the entries of the image's own layer, its reference and
// the timestamps.
func (d database) stampKey(o *options, rootfs, ref string) string {
	h := sha256.New()
	fmt.Fprintln(h, rootfs, ref, o.created.Unix(), startScript, d.title)
	for _, e := range d.config {
		fmt.Fprintln(h, e.path, e.mode, string(e.contents))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// built reports whether the outputs of an earlier build with the same key are all there.
func (d database) built(o *options, stamp, key string) bool {
	raw, err := os.ReadFile(stamp)
	if err != nil || strings.TrimSpace(string(raw)) != key {
		return false
	}
	want := []string{filepath.Join(o.out, d.name+".tar"), filepath.Join(o.out, d.name+".ref")}
	if o.unpack {
		want = append(want, filepath.Join(o.out, "root", d.name, configFile))
	}
	for _, f := range want {
		if _, err := os.Stat(f); err != nil {
			return false
		}
	}
	return true
}

func (d database) image(o *options, suite, rootfs string, versions []string) (v1.Image, error) {
	base, err := tarball.LayerFromFile(rootfs, tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, err
	}
	versionsFile := []byte(packageList(d.packages, versions) + "\n")
	own, err := newLayer(append(append([]entry{}, d.config...),
		entry{path: "usr/", mode: 0o755, dir: true},
		entry{path: "usr/local/", mode: 0o755, dir: true},
		entry{path: "usr/local/bin/", mode: 0o755, dir: true},
		entry{path: startPath, mode: 0o755, contents: []byte(startScript)},
		entry{path: "usr/local/share/", mode: 0o755, dir: true},
		entry{path: "usr/local/share/dbtune-image-packages", mode: 0o644, contents: versionsFile},
	), o.created)
	if err != nil {
		return nil, err
	}
	return localImage(o, v1.Config{
		Entrypoint:   []string{"/" + startPath},
		Cmd:          []string{d.serverProgram()},
		WorkingDir:   "/",
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		ExposedPorts: map[string]struct{}{"3306/tcp": {}},
		Volumes:      map[string]struct{}{"/var/lib/mysql": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       d.repository,
			"org.opencontainers.image.description": "test image: " + d.title + " (" + suite + ") with dbtune's start script (not the official " + d.repository + " image)",
			"org.opencontainers.image.source":      sourceURL,
			"org.opencontainers.image.version":     versions[0],
			"org.opencontainers.image.base.name":   "debian:" + suite + " (mmdebstrap minbase)",
			"io.dbtune.image.packages":             packageList(d.packages, versions),
		},
	},
		mutate.Addendum{Layer: base, History: history(o.created, "mmdebstrap "+strings.Join(d.mmdebstrapArgs(), " ")+" "+suite)},
		mutate.Addendum{Layer: own, History: history(o.created, "/"+startPath+", the image's option files, /usr/local/share/dbtune-image-packages")},
	)
}

func (d database) serverProgram() string {
	if d.repository == "mysql" {
		return "mysqld"
	}
	return "mariadbd"
}

// packageList is "pkg=version pkg=version", as apt-get install takes them.
func packageList(pkgs, versions []string) string {
	parts := make([]string, len(pkgs))
	for i := range pkgs {
		parts[i] = pkgs[i] + "=" + versions[i]
	}
	return strings.Join(parts, " ")
}

// mmdebstrapArgs are the arguments before the suite, the output and the mirror: part of the cache
// key, so that changing them rebuilds the root file system.
func (d database) mmdebstrapArgs() []string {
	args := make([]string, 0, 6+len(d.essentialHooks)+len(d.customizeHooks))
	args = append(args,
		"--variant=minbase",
		"--include="+strings.Join(d.packages, ","),
		"--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-exclude=/usr/share/man/*",
		// The development suite's Release file outlives its Valid-Until date between uploads.
		`--aptopt=Acquire::Check-Valid-Until "false"`,
		// No device nodes in the layer: the runtime gives every container its own /dev.
		"--skip=output/dev",
	)
	for _, h := range d.essentialHooks {
		args = append(args, "--essential-hook="+h)
	}
	for _, h := range d.customizeHooks {
		args = append(args, "--customize-hook="+h)
	}
	return args
}

// debianMirror is the archive both apt and mmdebstrap use for a suite other than this machine's;
// DBTUNE_DEBIAN_MIRROR overrides it.
func debianMirror() string {
	if m := os.Getenv("DBTUNE_DEBIAN_MIRROR"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

// rootfs returns the cached root file system tar for these package versions, running mmdebstrap
// when there is none. The key is every package's version and a hash of the arguments: a new
// upload to the suite, a point release or a security update builds a new one, and says so.
func (d database) rootfs(ctx context.Context, dir, suite string, versions []string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, suite, strings.Join(d.mmdebstrapArgs(), "\x00"), strings.Join(versions, "\x00"))
	server := strings.ReplaceAll(versions[0], ":", "_")
	stem := fmt.Sprintf("%s-%s-", d.name, suite)
	path := filepath.Join(dir, fmt.Sprintf("%s%s-%s.tar", stem, server, hex.EncodeToString(h.Sum(nil))[:12]))
	if _, err := os.Stat(path); err == nil {
		fmt.Fprintf(os.Stderr, "images: using the cached root file system %s\n", path)
		return path, nil
	}
	if older, _ := filepath.Glob(filepath.Join(dir, stem+"*.tar")); len(older) > 0 {
		sort.Strings(older)
		why := "this build's mmdebstrap arguments changed"
		if !slices.ContainsFunc(older, func(f string) bool { return strings.HasPrefix(filepath.Base(f), stem+server+"-") }) {
			why = fmt.Sprintf("%s now installs %s %s", suite, d.packages[0], versions[0])
		}
		fmt.Fprintf(os.Stderr, "images: %s; the cached root file systems (%s) are for other versions or arguments: building a new one\n",
			why, strings.Join(baseNames(older), ", "))
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return "", errors.New("mmdebstrap is not installed: apt-get install mmdebstrap")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// mmdebstrap picks the output format from the file name, so the partial file ends in .tar too.
	tmp := strings.TrimSuffix(path, ".tar") + ".partial.tar"
	args := append(append([]string{}, d.mmdebstrapArgs()...), suite, tmp)
	if d.suite != "" {
		args = append(args, debianMirror())
	}
	fmt.Fprintf(os.Stderr, "images: mmdebstrap %s (a few minutes)\n", strings.Join(args, " "))
	start := time.Now()
	cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("mmdebstrap: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "images: wrote %s in %s\n", path, time.Since(start).Round(time.Second))
	// The ones it replaces are for versions or arguments no build asks for any more.
	older, _ := filepath.Glob(filepath.Join(dir, stem+"*.tar"))
	for _, f := range older {
		if f != path && !strings.HasSuffix(f, ".partial.tar") {
			if err := os.Remove(f); err == nil {
				fmt.Fprintf(os.Stderr, "images: removed the replaced %s\n", f)
			}
		}
	}
	return path, nil
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// versions asks apt which version of each package an install from suite would take: this
// machine's apt for its own release, a private apt index under aptDir for another suite (this
// machine's sources stay as they are).
func (d database) versions(ctx context.Context, aptDir, suite string) ([]string, error) {
	var opts []string
	if d.suite != "" {
		var err error
		if opts, err = suiteIndex(ctx, filepath.Join(aptDir, suite), suite); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(d.packages))
	for _, p := range d.packages {
		b, err := exec.CommandContext(ctx, "apt-cache", append(append([]string{}, opts...), "show", "--no-all-versions", p)...).Output()
		var version string
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Version: "); ok {
				version = strings.TrimSpace(v)
				break
			}
		}
		if err != nil || version == "" {
			return nil, missingPackage(d, suite, p, err)
		}
		out = append(out, version)
	}
	return out, nil
}

// missingPackage says what to do when a suite no longer carries a package an image needs.
func missingPackage(d database, suite, pkg string, err error) error {
	if err == nil {
		err = errors.New("apt-cache shows no version")
	}
	if d.suite == "" {
		return fmt.Errorf("apt knows no version of %s in this machine's %s (%w): run apt-get update; if %s is gone from %s, the %s image must move to a package that replaced it",
			pkg, suite, err, pkg, suite, d.name)
	}
	return fmt.Errorf("the Debian archive at %s no longer carries %s in %s (%w), so the %s image cannot be built: find the suite or package that carries %s now "+
		"(apt-cache policy, or https://packages.debian.org/search?keywords=%s) and change the %q entry of hack/images/database.go, or set DBTUNE_DEBIAN_MIRROR to an archive or snapshot that still has it",
		debianMirror(), pkg, suite, err, d.name, d.title, pkg, d.name)
}

// suiteIndex fetches suite's package index into dir with this machine's apt and keys, and returns
// the apt options that read it instead of the machine's own sources.
func suiteIndex(ctx context.Context, dir, suite string) ([]string, error) {
	// apt reads relative paths below /etc/apt.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"lists/partial", "cache/archives/partial", "sources.list.d"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	list := filepath.Join(dir, "sources.list")
	line := fmt.Sprintf("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n", debianMirror(), suite)
	if err := os.WriteFile(list, []byte(line), 0o644); err != nil {
		return nil, err
	}
	opts := []string{
		"-o", "Dir::Etc::SourceList=" + list,
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(dir, "sources.list.d"),
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "Dir::State::status=/dev/null",
		"-o", "Acquire::Check-Valid-Until=false",
		"-o", "APT::Architectures=" + runtime.GOARCH,
		"-o", "Debug::NoLocking=true",
	}
	cmd := exec.CommandContext(ctx, "apt-get", append(append([]string{}, opts...), "-qq", "update")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("failed to read Debian %s's package index from %s: %w\n%s", suite, debianMirror(), err, out)
	}
	return opts, nil
}

// debVersion is a Debian package's upstream version.
type debVersion struct{ major, minor, patch string }

func (v debVersion) majorMinor() string { return v.major + "." + v.minor }

var upstreamPattern = regexp.MustCompile(`^(?:\d+:)?(\d+)\.(\d+)\.(\d+)`)

// upstreamVersion reads 1:11.8.9-1 or 9.7.4-1 as the server's version.
func upstreamVersion(deb string) (debVersion, error) {
	m := upstreamPattern.FindStringSubmatch(deb)
	if m == nil {
		return debVersion{}, fmt.Errorf("package version %q is not a server version major.minor.patch", deb)
	}
	return debVersion{m[1], m[2], m[3]}, nil
}

// debianSuite is the machine's Debian release codename (bookworm), from os-release: the stable
// MariaDB image comes from the archive the machine's apt already uses.
func debianSuite(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	fields := map[string]string{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			fields[k] = strings.Trim(v, `"`)
		}
	}
	if fields["ID"] != "debian" || fields["VERSION_CODENAME"] == "" {
		return "", fmt.Errorf("%s: this machine is not a Debian release (ID=%q VERSION_CODENAME=%q); the database images are built from Debian's archive", path, fields["ID"], fields["VERSION_CODENAME"])
	}
	return fields["VERSION_CODENAME"], nil
}

// defaultCache is $DBTUNE_IMAGES_CACHE, else dbtune/images in the user's cache directory
// (~/.cache): root file systems take minutes to install, and every checkout of the repository,
// CI's included, can share them.
func defaultCache() string {
	if d := os.Getenv("DBTUNE_IMAGES_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "dbtune", "images")
	}
	return filepath.Join(os.TempDir(), "dbtune-images-cache")
}
