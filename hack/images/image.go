package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// sourceURL is the org.opencontainers.image.source label: where the Dockerfiles and these
// builders live.
const sourceURL = "https://github.com/dbtune/scratch-operator"

// buildImage compiles b for every platform, writes each platform's tarball, the native one as
// <name>.tar, and the OCI layout with the index of them all.
func buildImage(ctx context.Context, o *options, b binary, repo, work string, native platform) error {
	tag, err := name.NewTag(fmt.Sprintf("%s/%s:%s", o.registry, b.repository, o.version))
	if err != nil {
		return fmt.Errorf("invalid image name or -version: %w", err)
	}
	base, err := newLayer(baseEntries(), o.created)
	if err != nil {
		return err
	}
	if err := removeTarballs(o.out, b.name); err != nil {
		return err
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.platforms {
		file, err := compile(ctx, o, b, repo, work, p)
		if err != nil {
			return err
		}
		img, err := newImage(o, b, p, base, file)
		if err != nil {
			return err
		}
		tarballs := []string{fmt.Sprintf("%s-%s-%s.tar", b.name, p.os, p.arch)}
		if p == native {
			tarballs = append(tarballs, b.name+".tar")
		}
		for _, t := range tarballs {
			if err := writeTarball(filepath.Join(o.out, t), tag, img); err != nil {
				return err
			}
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.os, Architecture: p.arch}},
		})
	}
	return writeLayout(filepath.Join(o.out, "oci", b.name), tag, index)
}

// newImage is the image of one binary for one platform: the shared base layer, the binary's
// layer, and a config that runs the binary as the nonroot user.
func newImage(o *options, b binary, p platform, base v1.Layer, file string) (v1.Image, error) {
	entries, err := binaryEntries(b.name, file)
	if err != nil {
		return nil, err
	}
	app, err := newLayer(entries, o.created)
	if err != nil {
		return nil, err
	}
	return platformImage(o, p, v1.Config{
		Entrypoint: []string{"/" + b.name},
		User:       fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels:     labels(o, b),
	},
		mutate.Addendum{Layer: base, History: history(o.created, "passwd and group for the nonroot user, /tmp")},
		mutate.Addendum{Layer: app, History: history(o.created, fmt.Sprintf("go build %s (CGO_ENABLED=0 GOOS=%s GOARCH=%s)", b.pkg, p.os, p.arch))},
	)
}

func history(created time.Time, what string) v1.History {
	return v1.History{Created: v1.Time{Time: created}, CreatedBy: what, Comment: "hack/images"}
}

// labels are the OCI annotation keys that registries and scanners read.
func labels(o *options, b binary) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       b.repository,
		"org.opencontainers.image.description": b.description,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.source":      sourceURL,
		"org.opencontainers.image.vendor":      "dbtune",
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
		"org.opencontainers.image.base.name":   "scratch",
	}
	if o.revision != "" {
		l["org.opencontainers.image.revision"] = o.revision
	}
	return l
}

// removeTarballs deletes the tarballs an earlier build left for this binary, so that a build for
// fewer platforms, or another version, leaves no tarball beside its own that it did not write.
func removeTarballs(dir, name string) error {
	old, err := filepath.Glob(filepath.Join(dir, name+"-linux-*.tar"))
	if err != nil {
		return err
	}
	for _, path := range append(old, filepath.Join(dir, name+".tar")) {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// writeTarball writes the image in the layout `docker save` produces, which docker load,
// ctr images import and kind load image-archive all read. The file appears complete or not at
// all, so an interrupted build never leaves a truncated tarball that a later run would trust.
func writeTarball(path string, tag name.Tag, img v1.Image) error {
	tmp := path + ".partial"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "images: wrote %s (%s)\n", path, tag)
	return nil
}

// writeLayout replaces dir with an OCI image layout whose index.json points at the
// multi-platform index, annotated with the tag as its reference name.
func writeLayout(dir string, tag name.Tag, index v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	ref := strings.TrimPrefix(tag.String(), name.DefaultRegistry+"/")
	if err := p.AppendIndex(index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return fmt.Errorf("failed to write the OCI layout %s: %w", dir, err)
	}
	fmt.Fprintf(os.Stderr, "images: wrote %s (OCI layout, %s)\n", dir, ref)
	return nil
}

// localImage is an image for this machine's architecture, the kind a local test node imports.
func localImage(o *options, config v1.Config, layers ...mutate.Addendum) (v1.Image, error) {
	return platformImage(o, platform{os: "linux", arch: runtime.GOARCH}, config, layers...)
}

// platformImage is an image for p: the layers in order, then config with the fields every image
// of this builder shares.
func platformImage(o *options, p platform, config v1.Config, layers ...mutate.Addendum) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img, layers...)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = p.os, p.arch
	if p.arch == "arm64" {
		cfg.Variant = "v8"
	}
	cfg.Created = v1.Time{Time: o.created}
	cfg.Author = "dbtune"
	cfg.Config = config
	return mutate.ConfigFile(img, cfg)
}
