// Package probecmd implements `node-agent probe`, the by-hand front end of the node agent's I/O
// probes: it measures the directories given on the command line and prints a table or JSON.
package probecmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Run runs `node-agent probe` with args (the words after "probe") and returns the exit code.
// Results go to stdout, diagnostics to stderr. A partial result (a target that failed, a run cut
// short by ctx or --timeout) is still printed, and the exit code is then non-zero.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return cli.ExitOK
	}
	if err != nil {
		printError(stderr, err)
		return cli.ExitBadUsage
	}
	targets := cfg.targets
	if err := cli.AttachDevices(targets, cfg.devices, cfg.opts); err != nil {
		printError(stderr, err)
		return cli.ExitBadUsage
	}
	res, runErr := probe.Run(ctx, targets, cfg.opts)
	if res != nil {
		if err := write(stdout, cfg.output, res); err != nil {
			fmt.Fprintf(stderr, "node-agent probe: failed to write the result: %v\n", err)
			return cli.ExitFailed
		}
	}
	if err := errors.Join(runErr, resultErr(res)); err != nil {
		printError(stderr, err)
		return cli.ExitFailed
	}
	return cli.ExitOK
}

// printError indents the continuation lines of joined errors so that each problem reads as one
// item under the command's name.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "node-agent probe: %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
}

func resultErr(res *probe.Result) error {
	if res == nil {
		return nil
	}
	return res.Err()
}

func write(w io.Writer, format string, res *probe.Result) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	_, err := io.WriteString(w, renderTable(res))
	return err
}
