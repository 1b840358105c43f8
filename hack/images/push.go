package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushAll pushes the multi-platform index of every binary's OCI layout under <out>/oci, as
// <registry>/<repository>:<version>, and checks what the registry then serves under that tag.
// Credentials come from the Docker configuration (docker login, $DOCKER_CONFIG) and the
// credential helpers it names, as docker push and crane push find them.
func pushAll(ctx context.Context, o *options) error {
	var errs []error
	for _, b := range binaries {
		tag, err := name.NewTag(fmt.Sprintf("%s/%s:%s", o.registry, b.repository, o.version))
		if err != nil {
			return fmt.Errorf("invalid image name or -version: %w", err)
		}
		digest, err := pushLayout(ctx, filepath.Join(o.out, "oci", b.name), tag, authn.DefaultKeychain)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
			continue
		}
		fmt.Fprintf(os.Stderr, "images: pushed %s@%s\n", tag, digest)
	}
	return errors.Join(errs...)
}

// pushLayout pushes the one image index of the OCI layout in dir (what buildImage writes) as tag,
// with its images and layers, and returns its digest once the registry serves that digest under
// tag.
func pushLayout(ctx context.Context, dir string, tag name.Tag, keychain authn.Keychain) (v1.Hash, error) {
	index, err := layoutIndex(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := index.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain)}
	if err := remote.WriteIndex(tag, index, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("failed to push %s: %w", tag, err)
	}
	served, err := remote.Head(tag, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("failed to read %s back: %w", tag, err)
	}
	if served.Digest != digest {
		return v1.Hash{}, fmt.Errorf("the registry serves %s as %s, not the pushed %s", tag, served.Digest, digest)
	}
	return digest, nil
}

// layoutIndex opens the OCI layout in dir and returns the image index its index.json points at.
func layoutIndex(dir string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("no OCI layout in %s (run make images first): %w", dir, err)
	}
	outer, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("failed to read the OCI layout %s: %w", dir, err)
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("failed to read the OCI layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("the OCI layout %s holds %d entries, want the one multi-platform index make images writes", dir, len(m.Manifests))
	}
	return outer.ImageIndex(m.Manifests[0].Digest)
}
