// Command images builds the OCI images of the manager and the node agent without a container
// engine: it cross-compiles each binary statically with the Go toolchain and wraps it, with a
// passwd and group file for the nonroot user, in an image on an empty base. It writes, under -out:
//
//	<image>.tar                   the image for this machine's architecture (docker load, ctr images
//	                              import, kind load image-archive)
//	<image>-<os>-<arch>.tar       the same, for every platform of -platforms
//	oci/<image>/                  an OCI image layout holding the multi-platform index, for pushing
//	                              every platform at once (skopeo copy --all, crane push --index)
//
// With -push it builds nothing: it pushes each oci/<image>/ index, every platform at once, as
// <registry>/<repository>:<version> with the credentials of the Docker configuration
// (docker login), and reads the tag back to check the registry serves the pushed digest.
//
// With -pause BUSYBOX it builds only <out>/pause.tar instead: a static busybox that sleeps forever,
// the sandbox and test image of a local test node (test/realnode).
//
// With -database NAME it builds only that database test image instead, <out>/NAME.tar, with its
// reference in <out>/NAME.ref: a server from Debian's packages installed by mmdebstrap (cached
// by package versions under -cache, which outlives checkouts), shaped like the official image of its flavor, with
// the project's own start script as entrypoint. The names are mariadb (this machine's Debian
// release, MariaDB 10.11 on bookworm), mariadb-sid and mysql-sid (Debian's development suite:
// MariaDB 11.8, MySQL 9.7). With -unpack it also writes the image's whole file system to
// <out>/root/NAME, which the real-server harness (test/mariadb) runs without a container runtime.
//
// It lives in a module of its own so that go-containerregistry never enters the product's
// dependency graph. Run it through `make images`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// binary is one program of the repository and the image that carries it.
type binary struct {
	// name is the binary's file name in the image (/name) and the stem of the tarball names.
	name string
	// pkg is the Go package, relative to the repository root.
	pkg string
	// repository is the image repository, without registry or tag.
	repository string
	// description becomes the org.opencontainers.image.description label.
	description string
}

var binaries = []binary{
	{name: "manager", pkg: ".", repository: "scratch-operator",
		description: "dbtune scratch-operator: RAM-backed scratch volumes for MySQL and MariaDB StatefulSets"},
	{name: "node-agent", pkg: "./node-agent", repository: "scratch-operator-node-agent",
		description: "dbtune node agent: measures a node's tmpfs against its disk and applies block-device read-ahead policies"},
}

type options struct {
	repo      string
	out       string
	version   string
	revision  string
	registry  string
	platforms []platform
	created   time.Time
	// pause is the static busybox to build the local test node's pause image from; when set, that
	// image is the only one built.
	pause string
	// databases are the database test images to build instead of the binaries' images.
	databases []database
	// unpack also writes each database image's file system under <out>/root.
	unpack bool
	// cache keeps the database images' root file systems and the development suite's package
	// index across checkouts.
	cache string
	// push pushes the OCI layouts under <out>/oci to registry instead of building.
	push bool
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err = run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	o := &options{}
	var platforms string
	fs.StringVar(&o.repo, "repo", "../..", "root of the repository to build")
	fs.StringVar(&o.out, "out", "../../bin/images", "directory to write the images into")
	fs.StringVar(&o.version, "version", "dev", "version compiled into the binaries (main.version), the image tag and label")
	fs.StringVar(&o.revision, "revision", "", "source revision for the org.opencontainers.image.revision label")
	fs.StringVar(&o.registry, "registry", "dbtune", "registry and namespace the image names start with")
	fs.StringVar(&o.pause, "pause", "", "build only the pause image of a local test node (test/realnode) from this static busybox\n(Debian's busybox-static: /bin/busybox), as <out>/pause.tar")
	var dbs string
	fs.StringVar(&dbs, "database", "", "build only these database test images (comma-separated: mariadb, mariadb-sid, mysql-sid) from\nDebian's archive with mmdebstrap, as <out>/NAME.tar; root file systems are cached under <out>/rootfs")
	fs.BoolVar(&o.unpack, "unpack", false, "with -database, also unpack each image's file system into <out>/root/NAME")
	fs.StringVar(&o.cache, "cache", defaultCache(), "with -database, the directory that keeps root file systems (rootfs/) and the sid package index (apt/)\nacross checkouts ($DBTUNE_IMAGES_CACHE, else the user's cache directory)")
	fs.BoolVar(&o.push, "push", false, "build nothing: push the multi-platform images of <out>/oci as <registry>/<repository>:<version>,\nwith the Docker configuration's credentials (docker login)")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list to build")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for n := range strings.SplitSeq(dbs, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		d, err := findDatabase(n)
		if err != nil {
			return nil, err
		}
		o.databases = append(o.databases, d)
	}
	var err error
	if o.platforms, err = parsePlatforms(platforms); err != nil {
		return nil, err
	}
	if o.created, err = sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		return nil, err
	}
	return o, nil
}

// sourceDateEpoch follows reproducible-builds.org: the image's timestamps come from
// SOURCE_DATE_EPOCH, and are the Unix epoch without it, so that the same sources give the same
// image digests.
func sourceDateEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	var secs int64
	if _, err := fmt.Sscan(s, &secs); err != nil || secs < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", s)
	}
	return time.Unix(secs, 0).UTC(), nil
}

func run(ctx context.Context, o *options) error {
	if o.push {
		return pushAll(ctx, o)
	}
	if o.pause != "" {
		return buildPause(o, o.pause)
	}
	if len(o.databases) > 0 {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		for _, d := range o.databases {
			if err := buildDatabase(ctx, o, d); err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
		}
		return nil
	}
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(repo, "go.mod")); err != nil {
		return fmt.Errorf("-repo %s is not the repository root: %w", o.repo, err)
	}
	work, err := os.MkdirTemp("", "dbtune-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.MkdirAll(filepath.Join(o.out, "oci"), 0o755); err != nil {
		return err
	}
	native := nativePlatform(o.platforms)
	var errs []error
	for _, b := range binaries {
		if err := buildImage(ctx, o, b, repo, work, native); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
		}
	}
	return errors.Join(errs...)
}

// nativePlatform is the platform whose image becomes <image>.tar: this machine's architecture,
// which is what a local docker, containerd or kind node runs, or else the first one built.
func nativePlatform(ps []platform) platform {
	for _, p := range ps {
		if p.os == "linux" && p.arch == runtime.GOARCH {
			return p
		}
	}
	return ps[0]
}

// platform is an os/arch pair Go can build for.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

func parsePlatforms(s string) ([]platform, error) {
	var out []platform
	seen := map[platform]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		osName, arch, ok := strings.Cut(item, "/")
		if !ok || osName != "linux" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want linux/ARCH, for example linux/amd64", item)
		}
		p := platform{os: osName, arch: arch}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-platforms is empty")
	}
	return out, nil
}
