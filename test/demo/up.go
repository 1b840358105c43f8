package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// Names the demo creates in the cluster.
const (
	demoNamespace  = "demo"
	statefulSet    = "mariadb"
	scratchVolume  = "mariadb-tmpdir"
	agentNode      = "kwok-node-1"
	agentNamespace = "dbtune-system"
)

// results is what up gathered for the final report.
type results struct {
	tmpfs, disk string
	probeArgs   []string
	probe       []byte
	loop        *loopDevice
	agentRuns   bool
	agentHelp   string
	// realNode is the real node's name when one runs the sample; noRealNode says why not.
	realNode   string
	noRealNode []string
	// realNodeKubeletRoot is the real node's kubelet root directory, where the agent of that node
	// finds the pods' RAM volumes.
	realNodeKubeletRoot string
}

func (d *demo) up(ctx context.Context) (err error) {
	if err := os.MkdirAll(d.stateDir, 0o755); err != nil {
		return err
	}
	unlock, err := d.lockUp()
	if err != nil {
		return err
	}
	defer unlock()
	if s, err := localcluster.Running(d.clusterDir); err != nil || s != nil {
		return errors.Join(err, alreadyRunning(s))
	}
	// A demo that was killed, or a reboot, can leave a mount or a loop device behind.
	if err := errors.Join(d.undoHost(), cleanupRealNode()); err != nil {
		return fmt.Errorf("failed to undo what the previous demo changed on this machine: %w", err)
	}
	if err := d.build(ctx); err != nil {
		return err
	}

	d.step("starting the local control plane")
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: d.binDir, Dir: d.clusterDir, Nodes: localcluster.DefaultNodes(3), PersistentVolumes: 6,
		Detached: true,
		Logf:     func(format string, args ...any) { d.step("  "+format, args...) },
	})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			d.step("stopping everything (the logs stay in %s)", d.rel(c.LogDir()))
			err = errors.Join(err, c.Stop(), d.undoHost())
		}
	}()

	r := &results{}
	var containerdDir string
	if r.noRealNode, containerdDir = d.realNodeMissing(); len(r.noRealNode) == 0 {
		node, err := d.startRealNode(ctx, c, containerdDir)
		if err != nil {
			return err
		}
		defer func() {
			if err != nil {
				err = errors.Join(err, node.Stop())
			}
		}()
		r.realNode, r.realNodeKubeletRoot = node.Name(), node.KubeletRoot()
	}
	if err := d.deploy(ctx, c, r); err != nil {
		return err
	}
	d.step("ready")
	d.report(ctx, r)
	return nil
}

func alreadyRunning(s *localcluster.State) error {
	if s == nil {
		return nil
	}
	return refusedError{fmt.Sprintf("a demo cluster is already running: export KUBECONFIG=%s; make demo-down to stop it", s.Kubeconfig)}
}

// deploy runs the operator's parts on the cluster and this machine, and the samples.
func (d *demo) deploy(ctx context.Context, c *localcluster.Cluster, r *results) error {
	d.step("installing the CRDs")
	crds := filepath.Join(d.root, "config", "crd", "bases")
	if _, err := d.kubectl(ctx, "apply", "--server-side", "-f", crds); err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return err
	}
	if err := d.startWithProbes(ctx, c, "manager", d.bin("manager"), "--kubeconfig="+d.kubeconfig()); err != nil {
		return err
	}

	hs, err := d.readHostState()
	if err != nil {
		return err
	}
	if r.tmpfs, r.disk, err = d.scratchDirs(hs); err != nil {
		return err
	}
	if canLoop() {
		d.step("attaching a loop device over a file in %s, for read-ahead", d.rel(d.stateDir))
		if r.loop, err = d.attachLoop(hs); err != nil {
			return err
		}
	}
	r.probeArgs = []string{"probe", "--target", "tmpfs=" + r.tmpfs, "--target", "disk=" + r.disk}
	d.step("probing this machine's tmpfs (%s) and disk (%s), up to a minute…", r.tmpfs, d.rel(r.disk))
	probe := exec.CommandContext(ctx, d.bin("node-agent"), r.probeArgs...)
	// An interrupted probe removes its files before it exits.
	probe.Cancel = func() error { return probe.Process.Signal(os.Interrupt) }
	probe.WaitDelay = 10 * time.Second
	if r.probe, err = probe.CombinedOutput(); err != nil {
		return fmt.Errorf("node-agent %s: %w\n%s", strings.Join(r.probeArgs, " "), err, r.probe)
	}

	// The agent's DaemonSet mode ("run") is newer than its one-shot probe. A build that has it runs
	// here for one fake node and publishes that node's NodeIOProfile; one that has not shows the
	// probe's table only.
	agentHelp, err := exec.CommandContext(ctx, d.bin("node-agent"), "run", "--help").CombinedOutput()
	r.agentRuns = err == nil
	r.agentHelp = string(agentHelp)
	if r.agentRuns {
		if err := d.startAgent(ctx, c, r); err != nil {
			return err
		}
		if err := d.startRealNodeAgent(ctx, c, r); err != nil {
			return err
		}
	}
	if err := d.applySamples(ctx, r); err != nil {
		return err
	}
	if r.agentRuns && r.realNode != "" {
		return d.spillIntoTheScratchVolume(ctx)
	}
	return nil
}

func (d *demo) startAgent(ctx context.Context, c *localcluster.Cluster, r *results) error {
	if _, err := d.kubectl(ctx, "create", "namespace", agentNamespace); err != nil {
		return err
	}
	args := []string{"run",
		"--kubeconfig=" + d.kubeconfig(), "--node-name=" + agentNode, "--lease-namespace=" + agentNamespace,
		"--target=tmpfs=" + r.tmpfs, "--target=disk=" + r.disk}
	// The read-ahead originals the agent saves before changing a device belong with the demo, not in
	// the host's /run.
	if strings.Contains(r.agentHelp, "-read-ahead-state-dir") {
		args = append(args, "--read-ahead-state-dir="+filepath.Join(d.stateDir, "read-ahead-state"))
	}
	return d.startWithProbes(ctx, c, "node-agent", d.bin("node-agent"), args...)
}

func (d *demo) applySamples(ctx context.Context, r *results) error {
	samples := filepath.Join(d.root, "config", "samples")
	d.step("applying the MariaDB StatefulSet (2 replicas, a 10Gi data volume each) in namespace %s", demoNamespace)
	if _, err := d.kubectl(ctx, "create", "namespace", demoNamespace); err != nil {
		return err
	}
	sample, waiting := filepath.Join(samples, "mariadb-statefulset.yaml"), "waiting for its pods (kwok plays the kubelet)…"
	if r.realNode != "" {
		var err error
		if sample, err = d.writeRealNodeSample(r.realNode); err != nil {
			return err
		}
		waiting = fmt.Sprintf("waiting for its pods on the real node %s (%s: MariaDB from Debian's packages, the exporter sidecar replaced by the pause image)…", r.realNode, d.rel(sample))
	}
	if _, err := d.kubectl(ctx, "apply", "-n", demoNamespace, "-f", sample); err != nil {
		return err
	}
	d.step("%s", waiting)
	if _, err := d.kubectl(ctx, "rollout", "status", "statefulset/"+statefulSet, "-n", demoNamespace, "--timeout=5m"); err != nil {
		return err
	}
	d.step("applying the ScratchVolume %s (512Mi of RAM for MariaDB's tmpdir)", scratchVolume)
	if _, err := d.kubectl(ctx, "apply", "-n", demoNamespace, "-f", filepath.Join(samples, "dbtune_v1alpha1_scratchvolume.yaml")); err != nil {
		return err
	}
	if r.agentRuns {
		if _, err := d.kubectl(ctx, "apply", "-f", filepath.Join(samples, "dbtune_v1alpha1_readaheadpolicy.yaml")); err != nil {
			return err
		}
	}
	d.step("waiting for the injection and the rolling update…")
	if _, err := d.kubectl(ctx, "wait", "--for=condition=Ready", "scratchvolume/"+scratchVolume, "-n", demoNamespace, "--timeout=5m"); err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "rollout", "status", "statefulset/"+statefulSet, "-n", demoNamespace, "--timeout=5m"); err != nil {
		return err
	}
	if r.agentRuns {
		d.step("waiting for the node agent's first probe of %s…", agentNode)
		if _, err := d.kubectl(ctx, "wait", "--for=condition=Probed", "nodeioprofile/"+agentNode, "--timeout=5m"); err != nil {
			return err
		}
	}
	return nil
}

// startWithProbes starts a controller-runtime program with its metrics and health endpoints on free
// loopback ports (their defaults listen on every address) and waits until it reports ready.
func (d *demo) startWithProbes(ctx context.Context, c *localcluster.Cluster, name, path string, args ...string) error {
	addrs, err := localcluster.FreeAddresses(2)
	if err != nil {
		return err
	}
	args = append(args, "--metrics-bind-address="+addrs[0], "--health-probe-bind-address="+addrs[1])
	p, err := c.StartProcess(name, path, args, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if !p.Alive() {
			return fmt.Errorf("%s exited; the end of %s:\n%s", name, p.Log, localcluster.Tail(p.Log, 15))
		}
		if localcluster.HTTPOK(ctx, http.DefaultClient, "http://"+addrs[1]+"/readyz") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become ready: %w; the end of %s:\n%s", name, ctx.Err(), p.Log, localcluster.Tail(p.Log, 15))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// build builds what is missing: the Kubernetes binaries once (minutes), the manager and the node
// agent every time (seconds when nothing changed).
func (d *demo) build(ctx context.Context) error {
	binDir, err := localcluster.DefaultBinDir(d.root)
	if err != nil {
		return err
	}
	d.binDir = binDir
	var missing []string
	for _, name := range append([]string{"kubectl"}, localcluster.Binaries...) {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil && !strings.HasSuffix(name, ".yaml") {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		d.step("building %s (first run only, several minutes)…", strings.Join(missing, ", "))
		cmd := exec.CommandContext(ctx, filepath.Join(d.root, "hack", "k8s-binaries.sh"), "all")
		cmd.Dir, cmd.Stdout, cmd.Stderr = d.root, io.Discard, &indented{w: d.out}
		if err := d.during("building the Kubernetes binaries", cmd.Run); err != nil {
			return fmt.Errorf("hack/k8s-binaries.sh all: %w", err)
		}
	} else if _, err := os.Stat(filepath.Join(binDir, "kwok-stages.yaml")); err != nil {
		// Only the stage file is missing; the script writes it in a second.
		if out, err := exec.CommandContext(ctx, filepath.Join(d.root, "hack", "k8s-binaries.sh"), "kwok").CombinedOutput(); err != nil {
			return fmt.Errorf("hack/k8s-binaries.sh kwok: %w\n%s", err, out)
		}
	}
	d.step("building bin/manager and bin/node-agent…")
	for _, b := range [][2]string{{"manager", "."}, {"node-agent", "./node-agent"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", d.bin(b[0]), b[1])
		cmd.Dir, cmd.Env = d.root, append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build -o bin/%s %s: %w\n%s", b[0], b[1], err, out)
		}
	}
	return nil
}

// kubectl runs kubectl against the demo cluster and returns its output.
func (d *demo) kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(d.binDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("kubectl %s: %w\n%s", shellJoin(args), err, out.Bytes())
	}
	return out.Bytes(), nil
}

// lockUp holds a lock for the whole of up, so that a second make demo started while the first still
// builds or starts refuses instead of racing it. The kernel releases it when the process exits.
func (d *demo) lockUp() (unlock func(), err error) {
	path := filepath.Join(d.stateDir, ".up.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, refusedError{fmt.Sprintf("a make demo is already starting (pid %s); wait for it, or press Ctrl-C in its terminal", d.upPID())}
		}
		return nil, err
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
	return func() { _ = f.Close() }, nil
}

// upInProgress reports whether another process holds the up lock.
func (d *demo) upInProgress() bool {
	f, err := os.Open(filepath.Join(d.stateDir, ".up.lock"))
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	return errors.Is(unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK)
}

func (d *demo) upPID() string {
	data, _ := os.ReadFile(filepath.Join(d.stateDir, ".up.lock"))
	if len(data) == 0 {
		return "unknown"
	}
	return string(data)
}

func canLoop() bool {
	if os.Geteuid() != 0 {
		return false
	}
	_, err := os.Stat("/dev/loop-control")
	return err == nil
}

// indented copies a child's progress lines into the demo's output, indented under the current step.
type indented struct {
	w       io.Writer
	midLine bool
}

func (i *indented) Write(p []byte) (int, error) {
	for _, b := range p {
		if !i.midLine {
			if _, err := io.WriteString(i.w, "           "); err != nil {
				return 0, err
			}
		}
		if _, err := i.w.Write([]byte{b}); err != nil {
			return 0, err
		}
		i.midLine = b != '\n'
	}
	return len(p), nil
}

func (d *demo) down() error {
	if d.upInProgress() {
		return refusedError{fmt.Sprintf("make demo is still starting (pid %s): press Ctrl-C in its terminal, which stops what it started", d.upPID())}
	}
	s, err := localcluster.ReadState(d.clusterDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := errors.Join(localcluster.Down(d.clusterDir), d.undoHost(), cleanupRealNode()); err != nil {
		return err
	}
	if s == nil {
		fmt.Fprintln(d.out, "No demo cluster is running.")
		return nil
	}
	names := make([]string, len(s.Processes))
	for i, p := range s.Processes {
		names[i] = p.Name
	}
	fmt.Fprintf(d.out, "Stopped the demo: %s. Logs are in %s.\n", strings.Join(names, ", "), d.rel(filepath.Join(d.clusterDir, "logs")))
	return nil
}

func execOutput(ctx context.Context, path string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, path, args...).CombinedOutput()
}
