// Command node-agent is the dbtune node agent. For now it offers the by-hand subcommand "probe",
// which measures a node's tmpfs and disk.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dbtune/scratch-operator/node-agent/cmd/probecmd"
)

const usage = `Usage: node-agent COMMAND [options]

Commands:
  probe   measure the storage of directories (node-agent probe -h for options)
`

func main() {
	// Canceling on SIGINT and SIGTERM lets a probe remove its files before the process exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "probe" {
		return probecmd.Run(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, usage)
	return 2
}
