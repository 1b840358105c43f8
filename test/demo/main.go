// Command demo shows the operator at work on this machine, without a container runtime: a local
// control plane with fake nodes (test/localcluster), the CRDs, the manager and the node agent as
// processes, and the samples — a MariaDB StatefulSet with a data volume and a ScratchVolume. It waits
// for the rollout, prints what a user wants to see, and leaves everything running.
//
//	demo up     (make demo)       build what is missing, start, show
//	demo down   (make demo-down)  stop everything up started and undo its changes to this machine
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dbtune/scratch-operator/test/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	// Read before stop, which cancels the context too: only a signal means interrupted.
	interrupted := ctx.Err() != nil
	stop()
	var refused refusedError
	switch {
	case errors.As(err, &refused):
		fmt.Fprintln(os.Stderr, refused.msg)
		os.Exit(1)
	case err != nil && interrupted:
		fmt.Fprintln(os.Stderr, "demo: interrupted; stopped what it had started")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// refusedError is a refusal to act that needs no "demo:" prefix: it is a sentence for the user.
type refusedError struct{ msg string }

func (e refusedError) Error() string { return e.msg }

func run(ctx context.Context, args []string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	d := newDemo(root, os.Stdout)
	cmd := "up"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "up":
		return d.up(ctx)
	case "down":
		return d.down()
	}
	return fmt.Errorf("unknown command %q (want up or down)", cmd)
}

// demo holds the paths of one demo and prints its progress.
type demo struct {
	root       string
	stateDir   string // tmp/demo: everything the demo creates on this machine
	clusterDir string // tmp/demo/cluster: the local cluster's directory
	binDir     string // Kubernetes binaries, set by up
	out        io.Writer
	started    time.Time
}

func newDemo(root string, out io.Writer) *demo {
	state := filepath.Join(root, "tmp", "demo")
	return &demo{
		root:       root,
		stateDir:   state,
		clusterDir: filepath.Join(state, "cluster"),
		out:        out,
		started:    time.Now(),
	}
}

// step prints one progress line with the time since the demo started.
func (d *demo) step(format string, args ...any) {
	fmt.Fprintf(d.out, "[%6s] %s\n", elapsed(time.Since(d.started)), fmt.Sprintf(format, args...))
}

// during runs f and, while it takes long, repeats a progress line so a cold build does not look hung.
func (d *demo) during(what string, f func() error) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				d.step("  still %s…", what)
			}
		}
	}()
	return f()
}

func elapsed(t time.Duration) string {
	t = t.Round(time.Second)
	if t < time.Minute {
		return fmt.Sprintf("%ds", int(t.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(t.Minutes()), int(t.Seconds())%60)
}

func (d *demo) kubeconfig() string { return filepath.Join(d.clusterDir, "kubeconfig") }

func (d *demo) bin(name string) string { return filepath.Join(d.root, "bin", name) }

func (d *demo) rel(path string) string {
	if r, err := filepath.Rel(d.root, path); err == nil {
		return r
	}
	return path
}
