package mariadb

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	dbmysql "github.com/dbtune/scratch-operator/controllers/mysql"
)

// The Bitnami MariaDB image as its start script (run.sh) lays it out: the chart's my.cnf is the
// defaults file, and /opt/bitnami/mariadb/tmp holds the socket and the pid file.
const (
	bitnamiHome       = "/opt/bitnami/mariadb"
	bitnamiDefaults   = bitnamiHome + "/conf/my.cnf"
	bitnamiSocket     = bitnamiHome + "/tmp/mysql.sock"
	bitnamiPidFile    = bitnamiHome + "/tmp/mysqld.pid"
	bitnamiExtraFlags = "MARIADB_EXTRA_FLAGS"
)

// bitnamiArgs is the command line run.sh gives the server: the defaults file first, then the
// data directory, socket and pid file, then the words of MARIADB_EXTRA_FLAGS, split on whitespace
// as `read -r -a` splits them. --basedir is left out: run.sh passes /opt/bitnami/mariadb, and
// this machine's server finds its files where it was built to. Container command or args would
// replace run.sh itself, so a container that sets them is refused.
func bitnamiArgs(c *corev1.Container, dataDir string) ([]string, error) {
	if len(c.Command) > 0 || len(c.Args) > 0 {
		return nil, fmt.Errorf("container %s sets a command or args, which replace the Bitnami start script", c.Name)
	}
	args := []string{"--defaults-file=" + bitnamiDefaults, "--datadir=" + dataDir,
		"--socket=" + bitnamiSocket, "--pid-file=" + bitnamiPidFile}
	for _, e := range c.Env {
		if e.Name == bitnamiExtraFlags {
			args = append(args, strings.Fields(e.Value)...)
		}
	}
	return args, nil
}

// bitnamiInitializeScript is what the image's setup does on an empty data directory, as the
// server's user: mariadb-install-db with the defaults file first (it reads it only there) and the
// server's other flags, root reachable over the socket without a password.
const bitnamiInitializeScript = `set -eu
datadir=$1 defaults=$2
shift 2
if [ ! -d "$datadir/mysql" ]; then
	mariadb-install-db "$defaults" --auth-root-authentication-method=normal --skip-test-db "$@" --skip-log-bin
fi
`

// bitnamiProcesses are the database container's processes for a Bitnami image: no root step (the
// image runs as its own user, and fsGroup gives that user the volumes), the setup, then the server.
func (p *Pod) bitnamiProcesses(c *corev1.Container, env []string, uid, gid uint32, groups []uint32) ([]processSpec, error) {
	args, err := bitnamiArgs(c, p.DataDir)
	if err != nil {
		return nil, err
	}
	s := p.host.Server
	return []processSpec{
		{Argv: append([]string{s.Shell, "-c", bitnamiInitializeScript, "setup", p.DataDir}, args...), Env: env, UID: uid, GID: gid, Groups: groups},
		{Argv: append([]string{s.Mariadbd}, args...), Env: env, UID: uid, GID: gid, Groups: groups},
	}, nil
}

// socketPath is the server's socket inside the database container.
func socketPath(profile dbmysql.Profile) string {
	if profile.Packaging == dbmysql.PackagingBitnami {
		return bitnamiSocket
	}
	return SocketPath
}
