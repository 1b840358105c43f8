package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// mariadbTag names the MariaDB test image. Like the pause image it lives under localhost, so no
// runtime ever tries to pull it: it only exists where it was imported.
const mariadbTag = "localhost/dbtune/mariadb:10.11-debian"

// mariadbStart is the image's entrypoint: the project's own start script, not the official image's
// docker-entrypoint.sh. It initializes an empty data directory and execs the server with the
// container's arguments, nothing else.
const mariadbStart = "usr/local/bin/dbtune-mariadb-start"

// mariadbPackages are what mmdebstrap installs on top of Debian's minbase variant.
var mariadbPackages = []string{"mariadb-server", "mariadb-client"}

// mmdebstrapArgs are the mmdebstrap arguments before the suite and the output file: they are part
// of the cache key, so changing them rebuilds the root file system.
var mmdebstrapArgs = []string{
	"--variant=minbase",
	"--include=" + strings.Join(mariadbPackages, ","),
	"--dpkgopt=path-exclude=/usr/share/doc/*",
	"--dpkgopt=path-exclude=/usr/share/man/*",
	// No device nodes in the layer: the runtime gives every container its own /dev.
	"--skip=output/dev",
}

// startScript is /usr/local/bin/dbtune-mariadb-start, in POSIX sh. mariadb-install-db of MariaDB
// 10.11 takes --auth-root-authentication-method=normal to give root a password login (with
// socket, the default, only the Unix user root could log in as root, and no password would work).
const startScript = `#!/bin/sh
# dbtune-mariadb-start: the entrypoint of the dbtune MariaDB test image (hack/images).
# Initializes an empty data directory, then execs mariadbd with the container's arguments.
set -eu

datadir=/var/lib/mysql
for arg in "$@"; do
	case "$arg" in
	--datadir=*) datadir=${arg#--datadir=} ;;
	esac
done

mkdir -p /run/mysqld "$datadir"
chown mysql:mysql /run/mysqld "$datadir"

fresh=
if [ -z "$(ls -A "$datadir")" ]; then
	echo "dbtune-mariadb-start: initializing the empty data directory $datadir" >&2
	mariadb-install-db --user=mysql --datadir="$datadir" \
		--auth-root-authentication-method=normal --skip-test-db >&2
	fresh=1
fi

if [ -n "$fresh" ] && [ -n "${MARIADB_ROOT_PASSWORD:-}" ]; then
	echo "dbtune-mariadb-start: setting the root password" >&2
	init=$(mktemp)
	pw=$(printf '%s' "$MARIADB_ROOT_PASSWORD" | sed "s/\\\\/\\\\\\\\/g; s/'/\\\\'/g")
	# Bootstrap mode starts without the grant tables: load them before ALTER USER. Only
	# root@localhost stays, with the password; mariadb-install-db also made root@127.0.0.1,
	# root@::1 and root@<hostname> without one.
	printf "%s\n" \
		"DELETE FROM mysql.global_priv WHERE User='root' AND Host<>'localhost';" \
		"FLUSH PRIVILEGES;" \
		"ALTER USER 'root'@'localhost' IDENTIFIED BY '$pw';" >"$init"
	mariadbd --user=mysql --datadir="$datadir" --bootstrap --skip-networking <"$init" >&2
	rm -f "$init"
fi

exec mariadbd --user=mysql "$@"
`

// imageConf is the image's own server settings, in /etc/mysql/mariadb.conf.d, read after
// Debian's 50-server.cnf: a server in a container listens on the pod's address, not only on
// loopback as Debian's default for a host has it.
const imageConf = `# dbtune MariaDB test image (hack/images): listen on every address of the pod.
[mariadbd]
bind-address = 0.0.0.0
`

// buildMariaDB writes <out>/mariadb.tar: a root file system mmdebstrap installs from the Debian
// archive this machine uses, cached under <out>/rootfs, plus the start script.
func buildMariaDB(ctx context.Context, o *options) error {
	suite, err := debianSuite("/etc/os-release")
	if err != nil {
		return err
	}
	rootfs, err := mariadbRootfs(ctx, filepath.Join(o.out, "rootfs"), suite)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(mariadbTag)
	if err != nil {
		return err
	}
	start := time.Now()
	base, err := tarball.LayerFromFile(rootfs, tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return err
	}
	own, err := newLayer([]entry{
		{path: "usr/", mode: 0o755, dir: true},
		{path: "usr/local/", mode: 0o755, dir: true},
		{path: "usr/local/bin/", mode: 0o755, dir: true},
		{path: mariadbStart, mode: 0o755, contents: []byte(startScript)},
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/mysql/", mode: 0o755, dir: true},
		{path: "etc/mysql/mariadb.conf.d/", mode: 0o755, dir: true},
		{path: "etc/mysql/mariadb.conf.d/90-dbtune-image.cnf", mode: 0o644, contents: []byte(imageConf)},
	}, o.created)
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: history(o.created, "mmdebstrap "+strings.Join(mmdebstrapArgs, " ")+" "+suite)},
		mutate.Addendum{Layer: own, History: history(o.created, "/"+mariadbStart+", /etc/mysql/mariadb.conf.d/90-dbtune-image.cnf")},
	)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Created = v1.Time{Time: o.created}
	cfg.Author = "dbtune"
	cfg.Config = v1.Config{
		Entrypoint:   []string{"/" + mariadbStart},
		WorkingDir:   "/",
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		ExposedPorts: map[string]struct{}{"3306/tcp": {}},
		Volumes:      map[string]struct{}{"/var/lib/mysql": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "mariadb",
			"org.opencontainers.image.description": "test image: MariaDB from the Debian " + suite + " archive with dbtune's start script (not the official mariadb image)",
			"org.opencontainers.image.source":      sourceURL,
			"org.opencontainers.image.base.name":   "debian:" + suite + " (mmdebstrap minbase)",
		},
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	if err := writeTarball(filepath.Join(o.out, "mariadb.tar"), tag, img); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "images: MariaDB image in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// debianSuite is the machine's Debian release codename (bookworm), from os-release: the image
// comes from the archive the machine's apt already uses.
func debianSuite(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	fields := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			fields[k] = strings.Trim(v, `"`)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if fields["ID"] != "debian" || fields["VERSION_CODENAME"] == "" {
		return "", fmt.Errorf("%s: this machine is not a Debian release (ID=%q VERSION_CODENAME=%q); the MariaDB image is built from Debian's archive", path, fields["ID"], fields["VERSION_CODENAME"])
	}
	return fields["VERSION_CODENAME"], nil
}

// mariadbRootfs returns the cached root file system tar for suite, running mmdebstrap when there
// is none for the current package versions. The cache key is the candidate version of every
// included package as apt sees it, and a hash of the mmdebstrap arguments: a point release or a
// security update of MariaDB builds a new one.
func mariadbRootfs(ctx context.Context, dir, suite string) (string, error) {
	versions, err := candidateVersions(ctx, mariadbPackages)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintln(h, suite, strings.Join(mmdebstrapArgs, "\x00"), strings.Join(versions, "\x00"))
	server := strings.ReplaceAll(versions[0], ":", "_")
	path := filepath.Join(dir, fmt.Sprintf("mariadb-%s-%s-%s.tar", suite, server, hex.EncodeToString(h.Sum(nil))[:12]))
	if _, err := os.Stat(path); err == nil {
		fmt.Fprintf(os.Stderr, "images: using the cached root file system %s\n", path)
		return path, nil
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return "", errors.New("mmdebstrap is not installed: apt-get install mmdebstrap")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// mmdebstrap picks the output format from the file name, so the partial file ends in .tar too.
	tmp := strings.TrimSuffix(path, ".tar") + ".partial.tar"
	args := append(append([]string{}, mmdebstrapArgs...), suite, tmp)
	fmt.Fprintf(os.Stderr, "images: mmdebstrap %s (about a minute)\n", strings.Join(args, " "))
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
	return path, nil
}

// candidateVersions asks apt which version of each package an install would take.
func candidateVersions(ctx context.Context, pkgs []string) ([]string, error) {
	out := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		b, err := exec.CommandContext(ctx, "apt-cache", "show", "--no-all-versions", p).Output()
		if err != nil {
			return nil, fmt.Errorf("apt-cache show %s: %w", p, err)
		}
		var version string
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Version: "); ok {
				version = strings.TrimSpace(v)
				break
			}
		}
		if version == "" {
			return nil, fmt.Errorf("apt-cache knows no version of %s (apt-get update?)", p)
		}
		out = append(out, version)
	}
	return out, nil
}
