// Package images_test opens the image tarballs `make images` writes (bin/images) the way a
// container runtime would, with nothing but archive/tar and encoding/json, and checks what a
// runtime would act on: the manifest, the config (entrypoint, user, os and architecture), the
// layers' contents and digests, and that the binary inside runs and reports the version the
// image is tagged with. When the tarballs are missing it builds them, so that `make test` always
// checks images built from the current sources.
package images_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// image is what one tarball must hold.
type image struct {
	// name is the binary's name, the tarball's stem and the entrypoint's file name.
	name string
	// manifest is the kustomize file whose image reference must name the tarball's repository.
	manifest string
	// versionArgs make the binary print its build: "dbtune <name> <version> (revision …, go…)".
	versionArgs []string
}

var images = []image{
	{name: "manager", manifest: "config/manager/manager.yaml",
		versionArgs: []string{"--version"}},
	{name: "node-agent", manifest: "config/node-agent/daemonset.yaml",
		versionArgs: []string{"version"}},
}

// nonrootUser is the user the images run as (distroless's nonroot).
const nonrootUser = "65532:65532"

// filesInImage is every path an image holds besides its binary: no shell, no package manager.
var filesInImage = []string{"etc/", "etc/passwd", "etc/group", "home/", "home/nonroot/", "tmp/"}

func TestImages(t *testing.T) {
	dir := imagesDir(t)
	for _, img := range images {
		t.Run(img.name, func(t *testing.T) {
			native := filepath.Join(dir, img.name+".tar")
			checkTarball(t, img, native, runtime.GOARCH, true)
			others, _ := filepath.Glob(filepath.Join(dir, img.name+"-linux-*.tar"))
			for _, path := range others {
				arch := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), img.name+"-linux-"), ".tar")
				t.Run(arch, func(t *testing.T) { checkTarball(t, img, path, arch, arch == runtime.GOARCH) })
			}
			checkLayout(t, img, filepath.Join(dir, "oci", img.name), len(others))
		})
	}
}

var (
	buildOnce sync.Once
	buildErr  error
)

// imagesDir returns bin/images, building the images for this machine's architecture first when
// a tarball is missing.
func imagesDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "bin", "images")
	if allExist(dir) {
		return dir
	}
	if testing.Short() {
		t.Skip("bin/images has no image tarballs and -short forbids building them: run `make images`")
	}
	if _, err := exec.LookPath("go"); err != nil {
		testenv.SkipOrFail(t, "bin/images has no image tarballs and there is no go command to build them: run `make images`")
	}
	buildOnce.Do(func() { buildErr = build(t, root, dir) })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return dir
}

func allExist(dir string) bool {
	for _, img := range images {
		if _, err := os.Stat(filepath.Join(dir, img.name+".tar")); err != nil {
			return false
		}
	}
	return true
}

// build runs the image builder as `make images` does, for this machine's architecture only: a
// cold cross-compilation of both binaries would not fit in the test's time budget. The build
// must end before the test binary's deadline, so that a slow machine gets an explanation
// rather than a panic.
func build(t *testing.T, root, dir string) error {
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-30*time.Second))
		defer cancel()
	}
	t.Logf("building the images into %s (minutes with a cold build cache)", dir)
	cmd := exec.CommandContext(ctx, "go", "-C", filepath.Join(root, "hack", "images"), "run", ".",
		"-repo", root, "-out", dir, "-platforms", "linux/"+runtime.GOARCH)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("building the images did not finish before the test's deadline: run `make images` first, or raise go test -timeout\n%s", out)
	}
	if err != nil {
		return fmt.Errorf("building the images: %w\n%s", err, out)
	}
	return nil
}

// tarballManifest is an entry of manifest.json, as `docker save` writes it.
type tarballManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// imageConfig is the part of the OCI image config a runtime acts on.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		User       string            `json:"User"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func checkTarball(t *testing.T, img image, path, arch string, run bool) {
	t.Helper()
	blobs := readTar(t, path)
	var manifests []tarballManifest
	decode(t, blobs, "manifest.json", &manifests)
	if len(manifests) != 1 {
		t.Fatalf("%s holds %d images, want 1", path, len(manifests))
	}
	m := manifests[0]
	var cfg imageConfig
	decode(t, blobs, m.Config, &cfg)

	version := cfg.Config.Labels["org.opencontainers.image.version"]
	if version == "" {
		t.Fatal("the image has no org.opencontainers.image.version label")
	}
	wantTag := manifestRepository(t, img.manifest) + ":" + version
	if !slices.Equal(m.RepoTags, []string{wantTag}) {
		t.Errorf("tags = %q, want [%q] (the repository %s deploys)", m.RepoTags, wantTag, img.manifest)
	}
	if cfg.OS != "linux" || cfg.Architecture != arch {
		t.Errorf("platform = %s/%s, want linux/%s", cfg.OS, cfg.Architecture, arch)
	}
	if want := []string{"/" + img.name}; !slices.Equal(cfg.Config.Entrypoint, want) || len(cfg.Config.Cmd) > 0 {
		t.Errorf("entrypoint %q, cmd %q; want %q and no cmd", cfg.Config.Entrypoint, cfg.Config.Cmd, want)
	}
	if cfg.Config.User != nonrootUser {
		t.Errorf("user = %q, want %q", cfg.Config.User, nonrootUser)
	}
	for _, l := range []string{"title", "description", "source", "created"} {
		if cfg.Config.Labels["org.opencontainers.image."+l] == "" {
			t.Errorf("the image has no org.opencontainers.image.%s label", l)
		}
	}
	files := readLayers(t, blobs, m.Layers, cfg.RootFS.DiffIDs)
	binary := checkFiles(t, img, files)
	checkELF(t, binary, arch)
	if run {
		checkVersion(t, img, binary, version, cfg.Config.Labels["org.opencontainers.image.revision"])
	}
}

// readTar returns the regular files of a tarball by name.
func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if out[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
	}
}

func decode(t *testing.T, blobs map[string][]byte, name string, v any) {
	t.Helper()
	raw, ok := blobs[name]
	if !ok {
		t.Fatalf("the tarball has no %s", name)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// layerFile is a file or directory of a layer.
type layerFile struct {
	header   *tar.Header
	contents []byte
}

// readLayers unpacks the layers in order, checking each against its diff ID: the digest of the
// uncompressed layer, which is what a runtime verifies on import.
func readLayers(t *testing.T, blobs map[string][]byte, layers, diffIDs []string) map[string]layerFile {
	t.Helper()
	if len(layers) != len(diffIDs) {
		t.Fatalf("%d layers but %d diff IDs", len(layers), len(diffIDs))
	}
	files := map[string]layerFile{}
	for i, name := range layers {
		raw, ok := blobs[name]
		if !ok {
			t.Fatalf("the tarball lacks layer %s", name)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("layer %s: %v", name, err)
		}
		uncompressed, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("layer %s: %v", name, err)
		}
		sum := sha256.Sum256(uncompressed)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != diffIDs[i] {
			t.Errorf("layer %s: digest %s, want diff ID %s", name, got, diffIDs[i])
		}
		tr := tar.NewReader(bytes.NewReader(uncompressed))
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("layer %s: %v", name, err)
			}
			contents, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("layer %s: %s: %v", name, h.Name, err)
			}
			files[h.Name] = layerFile{header: h, contents: contents}
		}
	}
	return files
}

// checkFiles checks the image's file list and returns the binary.
func checkFiles(t *testing.T, img image, files map[string]layerFile) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	want := append(slices.Clone(filesInImage), img.name)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("files = %q, want %q", names, want)
	}
	if passwd := string(files["etc/passwd"].contents); !strings.Contains(passwd, "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", passwd)
	}
	if group := string(files["etc/group"].contents); !strings.Contains(group, "\nnonroot:x:65532:") {
		t.Errorf("/etc/group has no nonroot group 65532:\n%s", group)
	}
	bin, ok := files[img.name]
	if !ok {
		t.Fatalf("the image has no /%s", img.name)
	}
	// Owned by root and not writable by the user the image runs as.
	if h := bin.header; h.Uid != 0 || h.Mode&0o777 != 0o755 {
		t.Errorf("/%s: uid %d mode %o, want uid 0 mode 755", img.name, h.Uid, h.Mode&0o777)
	}
	return bin.contents
}

// checkELF: the binary is for the image's architecture and static, since the image has no
// dynamic loader or libc.
func checkELF(t *testing.T, binary []byte, arch string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("the binary is not an ELF file: %v", err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if want, ok := machines[arch]; ok && f.Machine != want {
		t.Errorf("ELF machine %s, want %s for %s", f.Machine, want, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked: it has a PT_INTERP program header")
		}
	}
}

// checkVersion runs the binary's version command, which must name the version and revision the
// image's labels carry (compiled in with -X), or "unknown" for an image built without a revision.
func checkVersion(t *testing.T, img image, binary []byte, version, revision string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), img.name)
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, img.versionArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("/%s %s: %v\n%s", img.name, strings.Join(img.versionArgs, " "), err, out)
	}
	if revision == "" {
		revision = "unknown"
	}
	if got, want := strings.TrimSpace(string(out)), fmt.Sprintf("dbtune %s %s (revision %s, go", img.name, version, revision); !strings.HasPrefix(got, want) {
		t.Errorf("/%s %s printed %q, want %q", img.name, strings.Join(img.versionArgs, " "), got, want)
	}
}

var imageRef = regexp.MustCompile(`(?m)^\s*image:\s*(\S+?)(?::[\w][\w.-]*)?\s*$`)

// manifestRepository is the repository of the image a kustomize file deploys.
func manifestRepository(t *testing.T, file string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	m := imageRef.FindSubmatch(raw)
	if m == nil {
		t.Fatalf("%s names no image", file)
	}
	return string(m[1])
}

// ociIndex is an OCI image index (index.json, and the multi-platform index it points at).
type ociIndex struct {
	Manifests []struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
		Platform    *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	} `json:"manifests"`
}

// checkLayout checks the OCI layout a push starts from: index.json names the tag and points at
// an index with one manifest per platform built.
func checkLayout(t *testing.T, img image, dir string, platforms int) {
	t.Helper()
	var top ociIndex
	readJSON(t, filepath.Join(dir, "index.json"), &top)
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("%s/index.json should point at one image index: %+v", dir, top.Manifests)
	}
	if ref := top.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; !strings.HasPrefix(ref, manifestRepository(t, img.manifest)+":") {
		t.Errorf("the layout's reference name %q is not a tag of the deployed repository", ref)
	}
	algo, hexDigest, _ := strings.Cut(top.Manifests[0].Digest, ":")
	var index ociIndex
	readJSON(t, filepath.Join(dir, "blobs", algo, hexDigest), &index)
	var got []string
	for _, m := range index.Manifests {
		if m.Platform != nil {
			got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
		}
	}
	if len(got) != platforms || !slices.Contains(got, "linux/"+runtime.GOARCH) {
		t.Errorf("the layout's index lists platforms %q; want the %d the tarballs were built for, this machine's among them", got, platforms)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
