// Command node-agent is the dbtune node agent. By hand it measures a node's tmpfs and disk ("probe")
// and reads or sets block-device read-ahead ("readahead").
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dbtune/scratch-operator/api/buildinfo"
	"github.com/dbtune/scratch-operator/node-agent/cmd/probecmd"
	"github.com/dbtune/scratch-operator/node-agent/cmd/readaheadcmd"
	"github.com/dbtune/scratch-operator/node-agent/cmd/runcmd"
)

// version and revision are set at build time with -ldflags "-X main.version=… -X main.revision=…"
// (make images).
var version, revision = "dev", ""

// build is this binary's build, printed by the version command and exported as dbtune_build_info
// in DaemonSet mode.
func build() buildinfo.Info {
	return buildinfo.Info{Component: "node-agent", Version: version, Revision: revision}
}

const usage = `Usage: node-agent COMMAND [options]

Commands:
  run         DaemonSet mode: probe periodically and on request, publish NodeIOProfile and metrics
  probe       measure the storage of directories (node-agent probe -h for options)
  readahead   get, set or report block-device read-ahead (node-agent readahead -h)
  version     print the version
`

func main() {
	// Canceling on SIGINT and SIGTERM lets a probe remove its files before the process exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "run":
			metrics.Registry.MustRegister(build().Collector())
			return runcmd.Run(ctx, args[1:], stdout, stderr)
		case "probe":
			return probecmd.Run(ctx, args[1:], stdout, stderr)
		case "readahead":
			return readaheadcmd.Run(ctx, args[1:], stdout, stderr)
		case "version", "--version", "-version":
			fmt.Fprintln(stdout, build())
			return 0
		}
	}
	fmt.Fprint(stderr, usage)
	return 2
}
