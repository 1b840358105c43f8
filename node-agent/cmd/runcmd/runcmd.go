// Package runcmd implements `node-agent run`, the DaemonSet mode of the node agent: a
// controller-runtime manager for one node that probes the node's storage at start, periodically
// and on request, and publishes the results in the node's NodeIOProfile and as metrics, and that
// samples the RAM scratch volumes of the node's pods.
package runcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/node-agent/probectl"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readaheadctl"
	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
)

// Run runs `node-agent run` with args (the words after "run") until ctx ends, and returns the exit
// code. Logs go to stderr; stdout is unused. A target that is missing or unusable does not stop
// the agent: it becomes a condition of the NodeIOProfile.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args, stderr, os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return cli.ExitOK
	}
	if err == nil {
		err = errors.Join(o.cfg.Validate(), o.scratchUsage.Validate())
	}
	if err != nil {
		printError(stderr, err)
		return cli.ExitBadUsage
	}
	log := zap.New(zap.UseFlagOptions(&o.zap), zap.WriteTo(stderr))
	ctrl.SetLogger(log)
	if err := run(ctx, o); err != nil {
		log.Error(err, "Node agent stopped")
		return cli.ExitFailed
	}
	return cli.ExitOK
}

func run(ctx context.Context, o *options) error {
	restConfig, err := loadRESTConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	mgrOpts := probectl.ManagerOptions(o.cfg, scheme)
	mgrOpts.Logger = ctrl.Log
	mgrOpts.Cache = scratchusage.RestrictCache(mgrOpts.Cache, o.cfg.NodeName)
	mgr, err := ctrl.NewManager(restConfig, mgrOpts)
	if err != nil {
		return fmt.Errorf("failed to create the manager: %w", err)
	}
	if err := probectl.Setup(mgr, o.cfg); err != nil {
		return err
	}
	if err := scratchusage.Setup(mgr, o.scratchUsage); err != nil {
		return err
	}
	if o.readAhead {
		if err := readaheadctl.Setup(mgr, o.readAheadConfig()); err != nil {
			return fmt.Errorf("failed to set up read-ahead: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("Starting the node agent", "node", o.cfg.NodeName, "readAhead", o.readAhead)
	return mgr.Start(ctx)
}

// readAheadConfig points the read-ahead controller at the host: its sysfs and /dev under --host-root,
// and a mount table from the host's init process when visible (hostPID), so mount paths resolve as
// the host sees them.
func (o *options) readAheadConfig() readaheadctl.Config {
	paths := readahead.Paths{Root: o.hostRoot, MountInfo: o.hostMountInfo}
	if paths.MountInfo == "" {
		if candidate := filepath.Join(o.hostRoot, "proc", "1", "mountinfo"); fileExists(candidate) {
			paths.MountInfo = candidate
		}
	}
	return readaheadctl.Config{NodeName: o.cfg.NodeName, Paths: paths, StateDir: o.readAheadState}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// loadRESTConfig reads --kubeconfig when given, else what controller-runtime finds ($KUBECONFIG,
// the in-cluster service account, ~/.kube/config).
func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("failed to load kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to find the API server (not in a pod, and no --kubeconfig): %w", err)
	}
	return cfg, nil
}

// printError indents the continuation lines of joined errors so that each problem reads as one
// item under the command's name.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "node-agent run: %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
}
