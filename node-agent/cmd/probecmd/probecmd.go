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

	"github.com/dbtune/scratch-operator/node-agent/cmd/probeflags"
	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Exit codes, following the flag package's convention of 2 for a bad command line.
const (
	exitOK       = 0
	exitFailed   = 1
	exitBadUsage = 2
)

// Run runs `node-agent probe` with args (the words after "probe") and returns the exit code.
// Results go to stdout, diagnostics to stderr. A partial result (a target that failed, a run cut
// short by ctx or --timeout) is still printed, and the exit code is then non-zero.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		printError(stderr, err)
		return exitBadUsage
	}
	targets, err := attachDevices(cfg)
	if err != nil {
		printError(stderr, err)
		return exitBadUsage
	}
	res, runErr := probe.Run(ctx, targets, cfg.opts)
	if res != nil {
		if err := write(stdout, cfg.output, res); err != nil {
			fmt.Fprintf(stderr, "node-agent probe: failed to write the result: %v\n", err)
			return exitFailed
		}
	}
	if err := errors.Join(runErr, resultErr(res)); err != nil {
		printError(stderr, err)
		return exitFailed
	}
	return exitOK
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

// attachDevices gives each --device to its target: the one it names, or else the only target that
// is not a tmpfs (a raw device read belongs with the filesystem on that device).
func attachDevices(cfg *config) ([]probe.Target, error) {
	targets := cfg.targets
	for _, d := range cfg.devices {
		i, err := deviceTarget(targets, d, cfg.opts)
		if err != nil {
			return nil, err
		}
		if targets[i].Device != "" {
			return nil, fmt.Errorf("target %s already reads device %s; give one --device per target", targets[i].Path, targets[i].Device)
		}
		targets[i].Device = d.Value
	}
	return targets, nil
}

func deviceTarget(targets []probe.Target, d probeflags.Named, opts probe.Options) (int, error) {
	if d.Name != "" {
		for i, t := range targets {
			if t.Name == d.Name {
				return i, nil
			}
		}
		return 0, fmt.Errorf("--device %s=%s names no target; name one with --target %s=DIR", d.Name, d.Value, d.Name)
	}
	found := -1
	for i, t := range targets {
		kind, _, err := probe.Inspect(t.Path, opts)
		if err != nil || kind == probe.KindTmpfs {
			continue
		}
		if found >= 0 {
			return 0, fmt.Errorf("--device %s: several disk targets; say which, as --device NAME=%s", d.Value, d.Value)
		}
		found = i
	}
	if found < 0 {
		return 0, fmt.Errorf("--device %s needs a disk target to go with (all targets are tmpfs or unreadable)", d.Value)
	}
	return found, nil
}
