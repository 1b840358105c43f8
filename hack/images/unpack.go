package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Files an unpacked root holds beside the image's own: the digest of the image it holds (a root
// whose image is unchanged is kept as it is), and what a runtime would take from the image's
// config to start a container, for a harness that has no runtime.
const (
	digestFile = ".dbtune-image-digest"
	configFile = ".dbtune-image.json"
)

// unpackedConfig is configFile's content.
type unpackedConfig struct {
	Ref        string   `json:"ref"`
	Entrypoint []string `json:"entrypoint"`
	Cmd        []string `json:"cmd"`
	Env        []string `json:"env"`
}

// unpack writes the image's file system, its layers applied in order (whiteouts included), into
// dir with owners and modes, the way a runtime's snapshotter would. Device nodes are left out: a
// container gets its own /dev.
func unpack(img v1.Image, ref, dir string) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	config, err := json.MarshalIndent(unpackedConfig{Ref: ref, Entrypoint: cfg.Config.Entrypoint, Cmd: cfg.Config.Cmd, Env: cfg.Config.Env}, "", "  ")
	if err != nil {
		return err
	}
	held, _ := os.ReadFile(filepath.Join(dir, configFile))
	if raw, err := os.ReadFile(filepath.Join(dir, digestFile)); err == nil && strings.TrimSpace(string(raw)) == digest.String() && string(held) == string(config)+"\n" {
		fmt.Fprintf(os.Stderr, "images: %s already holds %s\n", dir, digest)
		return nil
	}
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	if err := extract(tar.NewReader(rc), tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("failed to unpack the image into %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, digestFile), []byte(digest.String()+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, configFile), append(config, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "images: unpacked %s into %s\n", digest, dir)
	return nil
}

// extract writes every entry of tr below dir. Modes and owners are set after the contents, and
// directories' modes last, so that a read-only directory still takes its files.
func extract(tr *tar.Reader, dir string) error {
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rel := filepath.Clean(h.Name)
		if !filepath.IsLocal(rel) {
			if rel == "." {
				continue
			}
			return fmt.Errorf("entry %q leaves the root", h.Name)
		}
		target := filepath.Join(dir, rel)
		// A symbolic link already written (var/run -> /run) must not carry a later entry out
		// of the root onto this machine's own files.
		if err := noLinkBelow(dir, filepath.Dir(rel)); err != nil {
			return fmt.Errorf("entry %q: %w", h.Name, err)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{target, tarMode(h.Mode)})
		case tar.TypeReg:
			if err := writeFile(target, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return err
			}
			continue
		case tar.TypeLink:
			link := filepath.Clean(h.Linkname)
			if !filepath.IsLocal(link) {
				return fmt.Errorf("entry %q links to %q, outside the root", h.Name, h.Linkname)
			}
			_ = os.Remove(target)
			if err := os.Link(filepath.Join(dir, link), target); err != nil {
				return err
			}
			continue
		default:
			// Device nodes and FIFOs: the runtime provides /dev.
			continue
		}
		// chown clears the set-ID bits, so the mode comes after it.
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if err := os.Chmod(target, tarMode(h.Mode)); err != nil {
				return err
			}
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return err
		}
	}
	return nil
}

// tarMode turns a tar header's mode bits (permissions plus set-user-ID, set-group-ID and sticky in
// their Unix positions) into an os.FileMode.
func tarMode(m int64) os.FileMode {
	mode := os.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

func writeFile(path string, r io.Reader) error {
	_ = os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// noLinkBelow fails when a directory on the way from root to root/rel is a symbolic link.
func noLinkBelow(root, rel string) error {
	p := root
	for part := range strings.SplitSeq(rel, string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link", p)
		}
	}
	return nil
}
