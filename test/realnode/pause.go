package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// MariaDBImage is the image BuildMariaDBImage builds: MariaDB from the machine's Debian archive with
// the project's start script (hack/images -database mariadb).
const MariaDBImage = "localhost/dbtune/mariadb:10.11-debian"

// BuildMariaDBImage builds MariaDBImage into outDir/mariadb.tar with hack/images and returns the
// tarball's path. The root file system mmdebstrap installs (about a minute, 480 MB) is cached under
// outDir/rootfs, keyed by the packages' candidate versions, so later builds only repack it.
func BuildMariaDBImage(ctx context.Context, repoRoot, outDir string) (string, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	out, err := filepath.Abs(outDir)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "-C", filepath.Join(repoRoot, "hack", "images"), "run", ".", "-database", "mariadb", "-out", out)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("failed to build the MariaDB image: %w\n%s", err, output)
	}
	return filepath.Join(out, "mariadb.tar"), nil
}
