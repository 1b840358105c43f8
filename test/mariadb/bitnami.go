package mariadb

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	dbmysql "github.com/dbtune/scratch-operator/controllers/mysql"
)

// bitnamiLayout is a Bitnami image (bitnami/mysql, bitnami/mariadb) as its start script, run.sh,
// lays it out: the chart's my.cnf in /opt/bitnami/<db>/conf is the defaults file,
// /opt/bitnami/<db>/tmp holds the socket and the pid file, and the words of <DB>_EXTRA_FLAGS
// follow on the server's command line.
type bitnamiLayout struct {
	home       string
	extraFlags string
}

// bitnamiFor is the layout of a Bitnami image of the profile's flavor, nil for any other image.
func bitnamiFor(profile dbmysql.Profile) *bitnamiLayout {
	if profile.Packaging != dbmysql.PackagingBitnami {
		return nil
	}
	home := "/opt/bitnami/mysql"
	if profile.Flavor == v1alpha1.FlavorMariaDB {
		home = "/opt/bitnami/mariadb"
	}
	return &bitnamiLayout{home: home, extraFlags: profile.ExtraFlagsEnv}
}

func (b *bitnamiLayout) defaultsFile() string { return b.home + "/conf/my.cnf" }
func (b *bitnamiLayout) socket() string       { return b.home + "/tmp/mysql.sock" }
func (b *bitnamiLayout) pidFile() string      { return b.home + "/tmp/mysqld.pid" }

// args is the command line run.sh gives the server: the defaults file first, then the data
// directory, socket and pid file, then the words of the extra-flags variable, split on whitespace
// as `read -r -a` splits them. --basedir is left out: run.sh passes /opt/bitnami/<db>, and the
// harness's server finds its files where it was built to. Container command or args would replace
// run.sh itself, so a container that sets them is refused.
func (b *bitnamiLayout) args(c *corev1.Container, dataDir string) ([]string, error) {
	if len(c.Command) > 0 || len(c.Args) > 0 {
		return nil, fmt.Errorf("container %s sets a command or args, which replace the Bitnami start script", c.Name)
	}
	args := []string{"--defaults-file=" + b.defaultsFile(), "--datadir=" + dataDir,
		"--socket=" + b.socket(), "--pid-file=" + b.pidFile()}
	for _, e := range c.Env {
		if e.Name == b.extraFlags {
			args = append(args, strings.Fields(e.Value)...)
		}
	}
	return args, nil
}

// bitnamiInitializeScript is what the image's setup does on an empty data directory, as the
// server's user, with the defaults file first (both programs read it only there) and the server's
// other flags: mariadb-install-db with root reachable over the socket without a password, or
// mysqld --initialize-insecure, which leaves root@localhost without one.
const bitnamiInitializeScript = `set -eu
datadir=$1 installdb=$2 server=$3 defaults=$4
shift 4
[ -d "$datadir/mysql" ] && exit 0
if [ -n "$installdb" ]; then
	"$installdb" "$defaults" --auth-root-authentication-method=normal --skip-test-db "$@" --skip-log-bin
else
	"$server" "$defaults" --initialize-insecure "$@"
fi
`

// bitnamiProcesses are the database container's processes for a Bitnami image: no root step (the
// image runs as its own user, and fsGroup gives that user the volumes), the setup, then the server.
func (p *Pod) bitnamiProcesses(c *corev1.Container, env []string, uid, gid uint32, groups []uint32) ([]processSpec, error) {
	args, err := p.bitnami.args(c, p.DataDir)
	if err != nil {
		return nil, err
	}
	s := p.host.Server
	setup := append([]string{s.Shell, "-c", bitnamiInitializeScript, "setup", p.DataDir, s.InstallDB, s.Mariadbd}, args...)
	return []processSpec{
		{Argv: setup, Env: env, UID: uid, GID: gid, Groups: groups},
		{Argv: append([]string{s.Mariadbd}, args...), Env: env, UID: uid, GID: gid, Groups: groups},
	}, nil
}

// socketPath is the server's socket inside the database container.
func socketPath(bitnami *bitnamiLayout) string {
	if bitnami != nil {
		return bitnami.socket()
	}
	return SocketPath
}
