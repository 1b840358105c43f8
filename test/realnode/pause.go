package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultBusybox is Debian's busybox-static, which the pause image is built from.
const DefaultBusybox = "/bin/busybox"

// BuildPauseImage builds the image PauseImage from a static busybox into outDir/pause.tar with the
// repository's image builder (hack/images, a module of its own, so go-containerregistry stays out of
// this module) and returns the tarball's path. The image's timestamps are fixed, so the same busybox
// gives the same image digest.
func BuildPauseImage(ctx context.Context, repoRoot, busybox, outDir string) (string, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	out, err := filepath.Abs(outDir)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "-C", filepath.Join(repoRoot, "hack", "images"), "run", ".", "-pause", busybox, "-out", out)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("failed to build the pause image: %w\n%s", err, output)
	}
	return filepath.Join(out, "pause.tar"), nil
}

// MariaDBImage is the image BuildDatabaseImage builds for "mariadb": MariaDB from the machine's
// Debian archive with the project's start script (hack/images -database mariadb).
const MariaDBImage = "localhost/dbtune/mariadb:10.11-debian"

// BuildMariaDBImage builds MariaDBImage into outDir/mariadb.tar and returns the tarball's path.
func BuildMariaDBImage(ctx context.Context, repoRoot, outDir string) (string, error) {
	tarball, _, err := BuildDatabaseImage(ctx, repoRoot, outDir, "mariadb")
	return tarball, err
}

// BuildDatabaseImage builds a database test image of hack/images (-database: mariadb, mariadb-sid,
// mysql-sid) into outDir/<database>.tar and returns the tarball's path and the image's reference.
// The root file system mmdebstrap installs is cached (hack/images -cache), keyed by the packages'
// versions, and an image whose packages did not change is not packed again; so after
// `make images-databases` this takes seconds.
func BuildDatabaseImage(ctx context.Context, repoRoot, outDir, database string) (tarball, ref string, err error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", "", err
	}
	out, err := filepath.Abs(outDir)
	if err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, "go", "-C", filepath.Join(repoRoot, "hack", "images"), "run", ".", "-database", database, "-out", out)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("failed to build the %s image: %w\n%s", database, err, output)
	}
	raw, err := os.ReadFile(filepath.Join(out, database+".ref"))
	if err != nil {
		return "", "", fmt.Errorf("the %s image was built without its reference: %w", database, err)
	}
	return filepath.Join(out, database+".tar"), strings.TrimSpace(string(raw)), nil
}
