// Command plugin builds the release artifacts of kubectl-dbtune: a tar.gz archive of the binary per
// platform, their SHA-256 sums, and the krew manifest that installs them (make plugin-release).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

//go:embed dbtune.krew.yaml
var manifestTemplate string

// platform is one os/arch's archive, as the krew manifest names it.
type platform struct {
	OS, Arch    string
	URI, SHA256 string
	// archive is its file name.
	archive string
}

func main() {
	repo := flag.String("repo", ".", "the repository's root")
	out := flag.String("out", "bin/plugin", "where the archives and the manifest go")
	version := flag.String("version", "dev", "the version compiled in and in the manifest (v0.1.0)")
	revision := flag.String("revision", "", "the source revision compiled in")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "os/arch pairs to build")
	urlBase := flag.String("url-base", "https://github.com/dbtune/scratch-operator/releases/download/{version}", "where the archives are published; {version} is replaced")
	mtime := flag.Int64("mtime", 0, "the archives' file times, in Unix seconds (the last commit's, for a reproducible archive)")
	flag.Parse()
	if err := run(*repo, *out, *version, *revision, *platforms, strings.ReplaceAll(*urlBase, "{version}", *version), time.Unix(*mtime, 0)); err != nil {
		fmt.Fprintln(os.Stderr, "plugin:", err)
		os.Exit(1)
	}
}

func run(repo, out, version, revision, platforms, urlBase string, mtime time.Time) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var built []platform
	for _, pair := range strings.Split(platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(pair), "/")
		if !ok {
			return fmt.Errorf("platform %q is not os/arch", pair)
		}
		bin, err := compile(repo, goos, goarch, version, revision)
		if err != nil {
			return err
		}
		p := platform{OS: goos, Arch: goarch, archive: fmt.Sprintf("kubectl-dbtune_%s_%s_%s.tar.gz", version, goos, goarch)}
		sum, err := writeArchive(filepath.Join(out, p.archive), bin, mtime)
		if err != nil {
			return err
		}
		p.SHA256, p.URI = sum, strings.TrimSuffix(urlBase, "/")+"/"+p.archive
		built = append(built, p)
		fmt.Printf("%s  %s\n", sum, p.archive)
	}
	manifest, err := renderManifest(version, built)
	if err != nil {
		return err
	}
	var sums strings.Builder
	for _, p := range built {
		fmt.Fprintf(&sums, "%s  %s\n", p.SHA256, p.archive)
	}
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "dbtune.yaml"), manifest, 0o644)
}

// compile builds the plugin for one platform, static and stripped, and returns the binary.
func compile(repo, goos, goarch, version, revision string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "kubectl-dbtune-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "kubectl-dbtune")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-gcflags=all=-dwarf=false", "-o", bin,
		"-ldflags", fmt.Sprintf("-s -w -X main.version=%s -X main.revision=%s", version, revision), "./api/kubectl-dbtune")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build for %s/%s: %w\n%s", goos, goarch, err, out)
	}
	return os.ReadFile(bin)
}

// writeArchive writes a tar.gz holding the binary as kubectl-dbtune, and returns its SHA-256.
func writeArchive(path string, bin []byte, mtime time.Time) (string, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	hdr := &tar.Header{Name: "kubectl-dbtune", Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return "", err
	}
	if _, err := tw.Write(bin); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), os.WriteFile(path, buf.Bytes(), 0o644)
}

func renderManifest(version string, platforms []platform) ([]byte, error) {
	tmpl, err := template.New("krew").Option("missingkey=error").Parse(manifestTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, struct {
		Version   string
		Platforms []platform
	}{version, platforms})
	return buf.Bytes(), err
}
