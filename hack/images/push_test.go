package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The credentials the test registry asks for, and `docker login` would have stored.
const (
	registryUser     = "ci"
	registryPassword = "s3cret"
)

// TestPushServesEveryPlatform builds the images of both binaries the way make images does (from a
// small program, which keeps the build short), pushes them as make images-push does to a registry
// served on loopback that wants the credentials of a Docker configuration, and pulls them back:
// the tag resolves to the pushed index, which lists every platform, each with its own image.
func TestPushServesEveryPlatform(t *testing.T) {
	ctx := t.Context()
	host := startRegistry(t)
	dockerLogin(t, host)
	o := &options{out: t.TempDir(), version: "v0.1.0", registry: host + "/team",
		platforms: []platform{{"linux", "amd64"}, {"linux", "arm64"}}, created: time.Unix(0, 0).UTC()}
	repo := helloModule(t)
	for _, b := range binaries {
		b.pkg = "."
		if err := buildImage(ctx, o, b, repo, t.TempDir(), o.platforms[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := pushAll(ctx, o); err != nil {
		t.Fatal(err)
	}
	for _, b := range binaries {
		local, err := layoutIndex(filepath.Join(o.out, "oci", b.name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := local.Digest()
		if err != nil {
			t.Fatal(err)
		}
		tag, err := name.NewTag(host + "/team/" + b.repository + ":v0.1.0")
		if err != nil {
			t.Fatal(err)
		}
		checkPulled(ctx, t, tag, want, b.name)
	}
}

// checkPulled pulls ref's index and checks its digest, that it lists linux/amd64 and linux/arm64,
// and that each platform's image has that platform and runs /binary.
func checkPulled(ctx context.Context, t *testing.T, ref name.Reference, want fmt.Stringer, binary string) {
	t.Helper()
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	index, err := remote.Index(ref, opts...)
	if err != nil {
		t.Fatalf("failed to pull %s: %v", ref, err)
	}
	if got, err := index.Digest(); err != nil || got.String() != want.String() {
		t.Errorf("%s has digest %v (%v), want the pushed %s", ref, got, err, want)
	}
	m, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("%s lists %s without a platform", ref, d.Digest)
		}
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := remote.Image(ref.Context().Digest(d.Digest.String()), opts...)
		if err != nil {
			t.Fatalf("failed to pull %s's image for %s: %v", ref, d.Platform, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != d.Platform.OS || cfg.Architecture != d.Platform.Architecture || !slices.Equal(cfg.Config.Entrypoint, []string{"/" + binary}) {
			t.Errorf("%s's image for %s is for %s/%s and runs %q", ref, d.Platform, cfg.OS, cfg.Architecture, cfg.Config.Entrypoint)
		}
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("%s lists the platforms %v, want linux/amd64 and linux/arm64", ref, platforms)
	}
}

// TestPushWithoutCredentialsIsRefused pushes to the same kind of registry with a Docker
// configuration that holds no login for it: the push fails with the registry's refusal.
func TestPushWithoutCredentialsIsRefused(t *testing.T) {
	host := startRegistry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("REGISTRY_AUTH_FILE", filepath.Join(t.TempDir(), "auth.json"))
	o := &options{out: t.TempDir(), version: "v0.1.0", registry: host + "/team",
		platforms: []platform{{"linux", "amd64"}}, created: time.Unix(0, 0).UTC()}
	b := binaries[0]
	b.pkg = "."
	if err := buildImage(t.Context(), o, b, helloModule(t), t.TempDir(), o.platforms[0]); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host + "/team/" + b.repository + ":v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = pushLayout(t.Context(), filepath.Join(o.out, "oci", b.name), tag, authn.DefaultKeychain)
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Fatalf("a push without credentials returned %v, want the registry's 401 Unauthorized", err)
	}
}

// startRegistry serves go-containerregistry's registry on loopback behind basic authentication,
// as a private registry would, and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, password, ok := r.BasicAuth(); !ok || user != registryUser || password != registryPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="test registry"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// dockerLogin writes the Docker configuration `docker login host` would, in a directory of the
// test's that $DOCKER_CONFIG names.
func dockerLogin(t *testing.T, host string) {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPassword))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
}

// helloModule is a module with a main package that builds in a second for any platform.
func helloModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
