package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ImagesDirEnv names a directory of unpacked database test images to use instead of the
// repository's bin/images/root.
const ImagesDirEnv = "DBTUNE_IMAGES_DIR"

// DatabaseImageRoot is where make images-databases unpacked the named database test image
// (mariadb-sid, mysql-sid): its whole file system, for tests that run its programs without a
// container runtime. It fails with what to run when the image is not there.
func DatabaseImageRoot(name string) (string, error) {
	dir := os.Getenv(ImagesDirEnv)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "images", "root")
	}
	root := filepath.Join(dir, name)
	if _, err := os.Stat(filepath.Join(root, "usr")); err != nil {
		return "", fmt.Errorf("the %s database image is not unpacked at %s (%w): run make images-databases, as root", name, root, err)
	}
	return root, nil
}

// ImagesCacheDir is where hack/images keeps the database images' root file systems across
// checkouts: $DBTUNE_IMAGES_CACHE, else dbtune/images in the user's cache directory (the same
// default as its -cache flag).
func ImagesCacheDir() string {
	if d := os.Getenv("DBTUNE_IMAGES_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "dbtune", "images")
	}
	return filepath.Join(os.TempDir(), "dbtune-images-cache")
}

// CachedRootfs reports whether hack/images has a root file system of the named database image
// (mariadb, mariadb-sid, mysql-sid) in its cache, so that a machine without mmdebstrap can still
// build that image.
func CachedRootfs(name string) bool {
	files, _ := filepath.Glob(filepath.Join(ImagesCacheDir(), "rootfs", name+"-*.tar"))
	for _, f := range files {
		// The file is <name>-<suite>-<version>-<key>.tar; mariadb-* also matches mariadb-sid-*.
		rest := strings.TrimPrefix(filepath.Base(f), name+"-")
		if !strings.HasSuffix(f, ".partial.tar") && (strings.HasSuffix(name, "-sid") || !strings.HasPrefix(rest, "sid-")) {
			return true
		}
	}
	return false
}
