package testenv

import (
	"fmt"
	"os"
	"path/filepath"
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
