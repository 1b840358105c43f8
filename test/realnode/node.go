package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// Node is a running real node.
type Node struct {
	opts   Options
	layout layout
	lock   *machineLock
	cs     kubernetes.Interface

	mu       sync.Mutex
	state    hostState
	stopOnce sync.Once
	stopErr  error
}

// Start cleans up after a previous node that was killed, records the host's state, starts
// containerd, imports the pause image, starts the kubelet and waits until the node is Ready. When
// anything fails it undoes what it did; the error says where the logs are.
func Start(ctx context.Context, opts Options) (_ *Node, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	n := &Node{opts: opts, layout: layout{stateDirOf(opts.Cluster.Dir())}}
	if n.cs, err = kubernetes.NewForConfig(opts.Cluster.Config()); err != nil {
		return nil, err
	}
	if n.lock, err = lockMachine(); err != nil {
		return nil, err
	}
	if err := recoverPrevious(n.lock, opts.Logf); err != nil {
		n.lock.unlock()
		return nil, err
	}
	if err := n.recordHost(); err != nil {
		// Nothing changed yet and nothing is recorded: no file is left to point at.
		return nil, errors.Join(err, n.lock.release())
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("%w\n(logs of containerd and the kubelet are in %s)", err, opts.Cluster.LogDir()), n.Stop())
		}
	}()
	start := time.Now()
	if err := createBridge(); err != nil {
		return nil, err
	}
	if err := addServiceProxy(localcluster.KubernetesServiceIP, opts.Cluster.Config().Host); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	if err := n.importPause(ctx); err != nil {
		return nil, err
	}
	if err := n.startKubelet(ctx); err != nil {
		return nil, err
	}
	if err := n.waitReady(ctx); err != nil {
		return nil, err
	}
	opts.Logf("node %s is Ready, %s after start", opts.NodeName, time.Since(start).Round(time.Millisecond))
	return n, nil
}

// recordHost writes the state file before the node changes anything: the original kernel
// settings, which fixed paths are absent, the network namespaces already there. The lock file then
// points at it, for the next Start if this process is killed.
func (n *Node) recordHost() error {
	dir := n.layout.dir
	// A previous node's directory goes, unless something is still mounted in it.
	if err := removeUnmounted(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sysctls, err := ReadKernelSettings()
	if err != nil {
		return err
	}
	n.state = hostState{
		Dir: dir, Started: time.Now().UTC(), Sysctls: sysctls,
		Absent: absentPaths(append(slices.Clone(hostPaths), n.opts.PodHostPaths...)), Netns: dirEntries("/run/netns"),
	}
	if err := n.state.write(); err != nil {
		return err
	}
	return n.lock.record(dir)
}

// startProcess runs a program through the cluster, so that its log is beside the control plane's
// and the cluster's Stop or Down would also end it, and records it in the node's state file.
func (n *Node) startProcess(name, path string, args []string) error {
	p, err := n.opts.Cluster.StartProcess(name, path, args, nil)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state.Processes = append(n.state.Processes, *p)
	return n.state.write()
}

// Stop stops the kubelet and containerd, removes every container, and restores the host: kernel
// settings, mounts, cgroups, the bridge, fixed paths. Pods still bound to the node stay in the API
// as they are. It is safe to call more than once.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		n.mu.Lock()
		s := n.state
		n.mu.Unlock()
		n.stopErr = restore(&s, n.opts.Logf)
		if n.stopErr != nil {
			// Keep the state file and the lock file's pointer to it: the next Start tries again.
			n.lock.unlock()
			return
		}
		n.stopErr = errors.Join(os.Remove(n.layout.stateFile()), n.lock.release())
	})
	return n.stopErr
}

// waitReady waits until the node is registered and Ready: the kubelet reports Ready once the
// runtime is up and its CNI configuration is loaded.
func (n *Node) waitReady(ctx context.Context) error {
	last := "not registered"
	err := n.poll(ctx, "node "+n.opts.NodeName+" to be Ready", func(ctx context.Context) bool {
		node, err := n.cs.CoreV1().Nodes().Get(ctx, n.opts.NodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message)
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("%w; last seen: %s", err, last)
	}
	return nil
}

// poll checks every 200 ms until check is true, a process of the node exits, or StartTimeout passes.
func (n *Node) poll(ctx context.Context, what string, check func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, n.opts.StartTimeout)
	defer cancel()
	for {
		if err := n.exited(); err != nil {
			return err
		}
		if check(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for %s: %w", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (n *Node) exited() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.state.Processes {
		if !p.Alive() {
			return fmt.Errorf("%s exited; the end of %s:\n%s", p.Name, p.Log, localcluster.Tail(p.Log, 20))
		}
	}
	return nil
}

// Name returns the node's name.
func (n *Node) Name() string { return n.opts.NodeName }

// Dir returns the node's directory: the state file, the containerd, CNI and kubelet directories.
func (n *Node) Dir() string { return n.layout.dir }

// KubeletRoot returns the kubelet's root directory (pods, volumes).
func (n *Node) KubeletRoot() string { return n.layout.kubeletRoot() }

// PodLogsDir returns the directory of the pods' container logs.
func (n *Node) PodLogsDir() string { return n.layout.podLogsDir() }

// SavedKernelSettings returns the kernel settings as they were before the node started.
func (n *Node) SavedKernelSettings() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.Sysctls
}
