package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestReleaseArtifacts builds the plugin for this machine's platform into an archive and its krew
// manifest, and reads both back as krew would: the manifest names the archive by its address and
// SHA-256, and the archive holds the binary the manifest's bin names.
func TestReleaseArtifacts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	out := t.TempDir()
	if err := run("../..", out, "v9.9.9", "abc", runtime.GOOS+"/"+runtime.GOARCH, "https://example.com/v9.9.9/", time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "dbtune.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version          string
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Platforms        []struct {
				Selector struct{ MatchLabels map[string]string } `json:"selector"`
				URI      string                                  `json:"uri"`
				SHA256   string                                  `json:"sha256"`
				Bin      string                                  `json:"bin"`
				Files    []struct{ From, To string }             `json:"files"`
			}
		}
	}
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		t.Fatalf("the krew manifest does not read back: %v\n%s", err, raw)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "dbtune" || m.Spec.Version != "v9.9.9" || len(m.Spec.Platforms) != 1 {
		t.Fatalf("the krew manifest is not the plugin's: %s", raw)
	}
	// krew's index validation refuses a manifest without a short description and shows the rest on
	// `kubectl krew info`.
	if m.Spec.ShortDescription == "" || len(m.Spec.ShortDescription) > 255 || m.Spec.Description == "" || !strings.HasPrefix(m.Spec.Homepage, "https://") {
		t.Errorf("the krew manifest's descriptions or homepage are missing: %q, %q, %q", m.Spec.ShortDescription, m.Spec.Description, m.Spec.Homepage)
	}
	p := m.Spec.Platforms[0]
	archive := filepath.Join(out, "kubectl-dbtune_v9.9.9_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if p.SHA256 != hex.EncodeToString(sum[:]) || p.URI != "https://example.com/v9.9.9/"+filepath.Base(archive) ||
		p.Selector.MatchLabels["os"] != runtime.GOOS || p.Selector.MatchLabels["arch"] != runtime.GOARCH || p.Bin != "kubectl-dbtune" {
		t.Errorf("the manifest's platform does not describe the archive: %+v", p)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != p.Bin || hdr.Mode != 0o755 {
		t.Fatalf("the archive does not hold an executable %s first: %+v, %v", p.Bin, hdr, err)
	}
	bin := filepath.Join(t.TempDir(), p.Bin)
	data, err = io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command(bin, "version", "--client").Output()
	if err != nil || !strings.Contains(string(got), "dbtune kubectl plugin v9.9.9 (revision abc") {
		t.Errorf("the archived binary does not run as the version built: %q, %v", got, err)
	}
}
