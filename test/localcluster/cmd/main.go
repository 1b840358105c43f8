// Command localcluster starts a local control plane that keeps running after the command exits, and
// stops it later from any shell:
//
//	go run ./test/localcluster/cmd up       # prints export KUBECONFIG=…
//	go run ./test/localcluster/cmd status
//	go run ./test/localcluster/cmd down
//
// The cluster lives in tmp/localcluster (--dir), with a log file per component.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/testenv"
)

const usage = `Usage: localcluster up|down|status [flags]

  up       start etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with fake
           nodes and static volumes, and leave them running
  down     stop everything up started
  status   show the processes and the kubeconfig

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("localcluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", filepath.Join(root, "tmp", "localcluster"), "the cluster's directory (state, logs, kubeconfig)")
	binDir := fs.String("bin-dir", "", "where the Kubernetes binaries are (default: hack/k8s-binaries.sh --print-dir)")
	nodes := fs.Int("nodes", 3, "number of fake nodes")
	volumes := fs.Int("volumes", 6, "number of static PersistentVolumes")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return errors.New("no command")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "up":
		if *binDir == "" {
			if *binDir, err = localcluster.DefaultBinDir(root); err != nil {
				return err
			}
		}
		stopCmd := "go run ./test/localcluster/cmd down"
		if fs.Lookup("dir").Value.String() != fs.Lookup("dir").DefValue {
			stopCmd += " --dir " + *dir
		}
		return up(ctx, stdout, stopCmd, localcluster.Options{
			BinDir: *binDir, Dir: *dir, Nodes: localcluster.DefaultNodes(*nodes), PersistentVolumes: *volumes,
			Detached: true,
			Logf:     func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) },
		})
	case "down":
		return localcluster.Down(*dir)
	case "status":
		return status(stdout, *dir)
	}
	fs.Usage()
	return fmt.Errorf("unknown command %q", args[0])
}

func up(ctx context.Context, stdout io.Writer, stopCmd string, opts localcluster.Options) error {
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nThe cluster runs (logs in %s). To use it:\n\n  export KUBECONFIG=%s\n\nTo stop it: %s\n", c.LogDir(), c.Kubeconfig(), stopCmd)
	return nil
}

func status(stdout io.Writer, dir string) error {
	s, err := localcluster.ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(stdout, "no cluster runs in", dir)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cluster in %s, started %s\nexport KUBECONFIG=%s\n\n", s.Dir, s.Started.Local().Format("2006-01-02 15:04:05"), s.Kubeconfig)
	for _, p := range s.Processes {
		state := "stopped"
		if p.Alive() {
			state = "running"
		}
		fmt.Fprintf(stdout, "  %-24s pid %-8d %-8s %s\n", p.Name, p.PID, state, p.Log)
	}
	return nil
}
