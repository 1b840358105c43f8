package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/probectl"
	"github.com/dbtune/scratch-operator/test/testenv"
)

const benchNode = "bench-probe-node"

// measureIdle runs the real DaemonSet mode, `node-agent run`, against a real kube-apiserver and
// etcd (envtest), waits for its first run to be published and then watches it idle. A process that
// merely imported the agent's packages and slept would miss what idling costs: the manager, its
// watches and caches, the lease and read-ahead machinery.
func measureIdle(ctx context.Context, bin, out string, targetArgs []string, idleFor time.Duration, log func(string, ...any)) IdleCost {
	assets := os.Getenv(testenv.AssetsEnv)
	if assets == "" {
		return IdleCost{Reason: testenv.AssetsEnv + " is not set, so there is no API server for `node-agent run` to talk to; " +
			"`make bench-probe` sets it from hack/k8s-binaries.sh --print-dir"}
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return IdleCost{Reason: fmt.Sprintf("no kube-apiserver in %s (%v): run `make k8s-binaries` first", assets, err)}
	}
	// envtest logs through controller-runtime, which complains loudly when no logger is set; its
	// chatter is not what this benchmark reports.
	ctrllog.SetLogger(logr.Discard())
	env, err := testenv.Start()
	if err != nil {
		return IdleCost{Reason: err.Error()}
	}
	defer func() {
		if err := env.Stop(); err != nil {
			log("failed to stop the API server: %v", err)
		}
	}()
	kubeconfig, err := prepareCluster(ctx, env, out)
	if err != nil {
		return IdleCost{Reason: err.Error()}
	}
	args := append([]string{"run", "--node-name", benchNode}, targetArgs...)
	args = append(args, "--period", "1h",
		"--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0",
		"--read-ahead-state-dir", filepath.Join(out, "read-ahead-state"), "--kubeconfig", kubeconfig)
	c, err := watchAgent(ctx, env, bin, args, filepath.Join(out, "node-agent-run.log"), idleFor, log)
	c.Command = quoteArgs(append([]string{bin}, args...))
	if err != nil {
		c.Measured, c.Reason = false, err.Error()
	}
	return c
}

// prepareCluster creates what a cluster would already have for the agent (its Node and the
// namespace of the probe-slot Leases) and a kubeconfig with full rights.
func prepareCluster(ctx context.Context, env *testenv.Env, out string) (string, error) {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probectl.DefaultLeaseNamespace}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: benchNode}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("failed to create %s: %w", obj.GetName(), err)
		}
	}
	user, err := env.Environment().AddUser(envtest.User{Name: "bench-node-agent", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("failed to add a user to the API server: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("failed to write a kubeconfig: %w", err)
	}
	path := filepath.Join(out, "kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}

func watchAgent(ctx context.Context, env *testenv.Env, bin string, args []string, logPath string, idleFor time.Duration,
	log func(string, ...any),
) (IdleCost, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return IdleCost{}, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return IdleCost{}, err
	}
	s := startSampler(cmd.Process.Pid)
	p := &agentProcess{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	defer p.stop(log)
	log("  node-agent run started (pid %d); waiting for its first run to be published", cmd.Process.Pid)
	if err := waitForFirstRun(ctx, env, p, 3*time.Minute); err != nil {
		s.finish()
		return IdleCost{}, fmt.Errorf("%w (log in %s)", err, logPath)
	}
	firstRunAt := time.Since(s.start).Seconds()
	log("  first run published after %.1fs; sampling %s of idle", firstRunAt, idleFor)
	select {
	case <-ctx.Done():
		s.finish()
		return IdleCost{}, ctx.Err()
	case <-p.exited:
		s.finish()
		return IdleCost{}, fmt.Errorf("node-agent run exited while idle (%s); its log is in %s", exitDescription(p.err), logPath)
	case <-time.After(idleFor):
	}
	samples := s.finish()
	c, err := SummarizeIdle(samples, firstRunAt)
	c.Samples = samples
	return c, err
}

func waitForFirstRun(ctx context.Context, env *testenv.Env, p *agentProcess, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		profile := &v1alpha1.NodeIOProfile{}
		err := env.Client.Get(ctx, client.ObjectKey{Name: benchNode}, profile)
		if err == nil && profile.Status.LastRunTime != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return fmt.Errorf("node-agent run exited before its first run was published (%s)", exitDescription(p.err))
		case <-deadline:
			return fmt.Errorf("the NodeIOProfile of %s showed no run within %s", benchNode, timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func exitDescription(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// agentProcess is the running agent; err is set before exited is closed.
type agentProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// stop asks the agent to stop as a kubelet would, and kills it if it does not.
func (p *agentProcess) stop(log func(string, ...any)) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		var ee *exec.ExitError
		if p.err != nil && !errors.As(p.err, &ee) {
			log("node-agent run: %v", p.err)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		log("node-agent run did not stop within 30s of SIGTERM and was killed")
	}
}
