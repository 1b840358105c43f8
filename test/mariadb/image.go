package mariadb

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
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

// imageConfigFile is what hack/images -unpack writes beside an image's file system: its reference
// and what a runtime would take from its config to start a container.
const imageConfigFile = ".dbtune-image.json"

type imageConfig struct {
	Ref        string   `json:"ref"`
	Entrypoint []string `json:"entrypoint"`
	Cmd        []string `json:"cmd"`
	Env        []string `json:"env"`
}

// ImageServer describes the database test image unpacked at root by hack/images -unpack (make
// images-databases): its server, found by the programs it holds and its own --version, runs every
// pod of a host made with NewHostFor, as the image would in a container.
func ImageServer(root string) (*Server, error) {
	raw, err := os.ReadFile(filepath.Join(root, imageConfigFile))
	if err != nil {
		return nil, fmt.Errorf("no database image is unpacked at %s (%w): run make images-databases, as root", root, err)
	}
	var cfg imageConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, imageConfigFile), err)
	}
	s := &Server{Root: root, Image: cfg.Ref, Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, env: cfg.Env}
	if s.Shell, err = lookPath(root, shellProgram); err != nil {
		return nil, fmt.Errorf("image at %s: %w", root, err)
	}
	if s.Mariadbd, err = lookPath(root, serverProgram); err == nil {
		s.Flavor = v1alpha1.FlavorMariaDB
		if s.InstallDB, err = lookPath(root, installDBProgram); err != nil {
			return nil, fmt.Errorf("image at %s: %w", root, err)
		}
	} else if s.Mariadbd, err = lookPath(root, "mysqld"); err == nil {
		s.Flavor = v1alpha1.FlavorMySQL
	} else {
		return nil, fmt.Errorf("image at %s holds neither mariadbd nor mysqld", root)
	}
	if s.UID, s.GID, err = imageUser(root, "mysql"); err != nil {
		return nil, err
	}
	if err := s.readVersion(); err != nil {
		return nil, err
	}
	return s, nil
}

// imageUser looks a user up in the image's /etc/passwd, as a runtime resolves an image's user.
func imageUser(root, name string) (uid, gid uint32, err error) {
	raw, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 4 || f[0] != name {
			continue
		}
		u, err1 := strconv.ParseUint(f[2], 10, 32)
		g, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("%s's /etc/passwd entry for %s is not numeric: %q", root, name, line)
		}
		return uint32(u), uint32(g), nil
	}
	return 0, 0, fmt.Errorf("the image at %s has no %s user", root, name)
}

// root is the file system programs are looked up in: the image's, or this machine's.
func (s *Server) root() string {
	if s.Root == "" {
		return "/"
	}
	return s.Root
}

// command is what a runtime runs for container c of this image: the container's command or the
// image's entrypoint, then the container's args, or the image's cmd when the container sets
// neither (Kubernetes' rule: a command drops the image's cmd as well).
func (s *Server) command(c *corev1.Container) []string {
	switch {
	case len(c.Command) > 0:
		return append(append([]string{}, c.Command...), c.Args...)
	case len(c.Args) > 0:
		return append(append([]string{}, s.Entrypoint...), c.Args...)
	default:
		return append(append([]string{}, s.Entrypoint...), s.Cmd...)
	}
}
