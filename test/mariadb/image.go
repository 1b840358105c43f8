package mariadb

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What the stand-in image provides in place of a MariaDB container image.
const (
	// imageConfigDir is the image's option file directory; the harness bind-mounts its own copy there,
	// so the machine's /etc/mysql is neither read nor changed.
	imageConfigDir = "/etc/mysql"
	// SocketPath is the server's unix socket inside the database container.
	SocketPath = "/run/mysqld/mysqld.sock"
)

// imageMyCnf is the stand-in image's /etc/mysql/my.cnf. Like the official mariadb image's, it names
// the socket for clients and server and includes /etc/mysql/conf.d last, so a drop-in there has
// the last word over the image's settings, and only the command line beats it.
func imageMyCnf(dataDir string) string {
	return fmt.Sprintf(`[client-server]
socket = %s

[mysqld]
pid-file = /run/mysqld/mysqld.pid
datadir = %s

!includedir %s/conf.d/
`, SocketPath, dataDir, imageConfigDir)
}

// prepareScript is what the official image's entrypoint does as root before it drops to the server's
// user: give that user the socket directory and the data directory's contents.
const prepareScript = `set -eu
owner=$1 datadir=$2
mkdir -p /run/mysqld
chown "$owner" /run/mysqld
find "$datadir" ! -user "${owner%%:*}" -exec chown "$owner" {} +
`

// initializeScript is what the entrypoint then does as that user: initialize an empty data directory
// with the server's own arguments (so a first start already reads the drop-in's directories),
// without the binary log, and with root reachable over the socket with no password.
const initializeScript = `set -eu
datadir=$1
shift
if [ ! -d "$datadir/mysql" ]; then
	mariadb-install-db --datadir="$datadir" --auth-root-authentication-method=normal --skip-test-db "$@" --skip-log-bin
fi
`

// writeImage writes the stand-in image's /etc/mysql for one container into dir.
func writeImage(dir, dataDir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "conf.d"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "my.cnf"), []byte(imageMyCnf(dataDir)), 0o644)
}

// serverArgs returns the arguments mariadbd gets from a container: its command and args, with the
// official image's rule that args starting with '-' are options for the server.
func serverArgs(c *corev1.Container) ([]string, error) {
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(c.Command) == 0 && (len(argv) == 0 || strings.HasPrefix(argv[0], "-")) {
		return argv, nil
	}
	switch path.Base(argv[0]) {
	case "mariadbd", "mysqld":
		return argv[1:], nil
	}
	return nil, fmt.Errorf("container %s runs %q: the harness runs mariadbd (or mysqld) only", c.Name, argv[0])
}

// baseEnv is the environment every container process starts with.
func baseEnv(c *corev1.Container) ([]string, error) {
	env := []string{"PATH=" + searchPath}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return nil, fmt.Errorf("container %s: env %s comes from a reference, which the harness cannot resolve", c.Name, e.Name)
		}
		env = append(env, e.Name+"="+e.Value)
	}
	return env, nil
}
