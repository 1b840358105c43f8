package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Addresses inside the cluster. Nothing listens on them: they only have to be valid and distinct.
const (
	serviceCIDR = "10.96.0.0/16"
	podCIDR     = "10.244.0.0/16"
)

// KubernetesServiceIP is the cluster IP of the `kubernetes` Service, which the kubelet gives pods
// as KUBERNETES_SERVICE_HOST; the API server's certificate names it. Nothing proxies it unless a
// real node does (test/realnode).
const KubernetesServiceIP = "10.96.0.1"

// Cluster is a running local control plane.
type Cluster struct {
	opts      Options
	dir       string
	removeDir bool
	config    *rest.Config
	certs     *pki

	mu       sync.Mutex
	state    State
	procs    []*Process
	stopOnce sync.Once
	stopped  chan struct{}
	stopErr  error
}

// Start starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, creates the
// fake nodes, the default StorageClass and the static volumes, writes the admin kubeconfig and waits
// until the nodes are Ready. When anything fails, or ctx is canceled on the way, it stops what it
// started and the error says where the logs are.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, stopped: make(chan struct{})}
	if c.dir, err = c.makeDir(); err != nil {
		return nil, err
	}
	unlock, err := lockDir(c.dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s, err := Running(c.dir); err != nil || s != nil {
		return nil, errors.Join(err, runningError(s))
	}
	if err := prepareDir(c.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.LogDir(), 0o755); err != nil {
		return nil, err
	}
	c.state = State{Dir: c.dir, Started: time.Now().UTC()}

	defer func() {
		if err != nil {
			// A temporary directory is kept too, since its logs say what went wrong.
			c.removeDir = false
			err = errors.Join(fmt.Errorf("%w\n(logs of every component are in %s)", err, c.LogDir()), c.Stop())
		}
	}()
	if err := c.startControlPlane(ctx); err != nil {
		return nil, err
	}
	if err := c.populate(ctx); err != nil {
		return nil, err
	}
	if !opts.Detached {
		go func() {
			select {
			case <-ctx.Done():
				_ = c.Stop()
			case <-c.stopped:
			}
		}()
	}
	return c, nil
}

func runningError(s *State) error {
	if s == nil {
		return nil
	}
	return &RunningError{State: s}
}

func (c *Cluster) makeDir() (string, error) {
	if c.opts.Dir == "" {
		c.removeDir = true
		return os.MkdirTemp("", "localcluster-")
	}
	dir, err := filepath.Abs(c.opts.Dir)
	if err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

func (c *Cluster) startControlPlane(ctx context.Context) error {
	etcdURL, err := c.startEtcd(ctx)
	if err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, etcdURL); err != nil {
		return err
	}
	kubeconfig := []string{"--kubeconfig=" + c.Kubeconfig()}
	components := []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", []string{
			// The token controller needs a service-account signing key and a root CA file; the
			// ServiceAccount admission plugin is off, so pods need no tokens.
			"--controllers=*,-serviceaccount-token",
			"--leader-elect=false", "--secure-port=0", "--bind-address=127.0.0.1",
			"--use-service-account-credentials=false",
			"--cluster-cidr=" + podCIDR, "--service-cluster-ip-range=" + serviceCIDR,
		}},
		{"kube-scheduler", []string{"--leader-elect=false", "--secure-port=0", "--bind-address=127.0.0.1"}},
		{"kwok", []string{
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=fake",
			"--node-ip=10.89.0.254", "--cidr=" + podCIDR,
			// kwok's own endpoint (metrics, fake kubelet API) on a port the kernel picks.
			"--server-address=127.0.0.1:0",
			// Leases as a kubelet keeps them, so the node lifecycle controller sees healthy nodes.
			"--node-lease-duration-seconds=40",
			"--config=" + filepath.Join(c.opts.BinDir, "kwok-stages.yaml"),
		}},
	}
	if c.opts.ServiceAccountTokens {
		// The root-ca-cert-publisher writes this CA into every namespace's kube-root-ca.crt, which
		// a pod's projected service-account volume includes.
		components[0].args = append(components[0].args, "--root-ca-file="+c.certs.caFile)
	}
	for _, comp := range components {
		c.opts.Logf("starting %s", comp.name)
		if _, err := c.start(comp.name, filepath.Join(c.opts.BinDir, comp.name), append(kubeconfig, comp.args...), nil); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) (string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return "", err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.opts.Logf("starting etcd")
	p, err := c.start("etcd", filepath.Join(c.opts.BinDir, "etcd"), []string{
		"--name=localcluster",
		"--data-dir=" + filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=localcluster=" + peerURL,
		// The data is thrown away with the cluster; fsync would only slow everything down.
		"--unsafe-no-fsync=true",
	}, nil)
	if err != nil {
		return "", err
	}
	err = c.waitFor(ctx, p, "etcd to be healthy", func(ctx context.Context) (bool, error) {
		return HTTPOK(ctx, http.DefaultClient, clientURL+"/health"), nil
	})
	return clientURL, err
}

// admissionFlags turn the ServiceAccount admission plugin off, unless pods are to get tokens. With
// tokens, pods act as their ServiceAccounts, and OwnerReferencesPermissionEnforcement, which some
// distributions enable, checks their right to set owner references that block a deletion.
func admissionFlags(serviceAccountTokens bool) []string {
	if serviceAccountTokens {
		return []string{"--enable-admission-plugins=OwnerReferencesPermissionEnforcement"}
	}
	// Pods would otherwise need service-account tokens, which no fake node can mount.
	return []string{"--disable-admission-plugins=ServiceAccount"}
}

func (c *Cluster) startAPIServer(ctx context.Context, etcdURL string) error {
	certs, err := newPKI(filepath.Join(c.dir, "pki"))
	if err != nil {
		return fmt.Errorf("failed to create certificates: %w", err)
	}
	c.certs = certs
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	var auditFlags []string
	if c.opts.AuditServiceAccounts || len(c.opts.AuditUsers) > 0 {
		if auditFlags, err = c.auditFlags(); err != nil {
			return err
		}
	}
	c.opts.Logf("starting kube-apiserver")
	p, err := c.start("kube-apiserver", filepath.Join(c.opts.BinDir, "kube-apiserver"), append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[0]),
		// The endpoint reconciler refuses a loopback address: the in-cluster `kubernetes` Service
		// would point at it, and nothing here runs in a pod that could use it.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + certs.servingCert, "--tls-private-key-file=" + certs.servingKey,
		"--client-ca-file=" + certs.caFile,
		// Fake nodes never see it; a real kubelet (test/realnode) checks it for logs and exec.
		"--kubelet-client-certificate=" + certs.kubeletClientCert,
		"--kubelet-client-key=" + certs.kubeletClientKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + certs.saPublic,
		"--service-account-signing-key-file=" + certs.saPrivate,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
	}, append(admissionFlags(c.opts.ServiceAccountTokens), auditFlags...)...), nil)
	if err != nil {
		return err
	}
	c.config = &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: certs.caCert, CertData: certs.adminCert, KeyData: certs.adminKey,
		},
		QPS: 50, Burst: 100,
	}
	if err := c.writeKubeconfig(certs); err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(c.config)
	if err != nil {
		return err
	}
	return c.waitFor(ctx, p, "kube-apiserver to be ready", func(ctx context.Context) (bool, error) {
		return HTTPOK(ctx, httpClient, host+"/readyz"), nil
	})
}

// auditPolicy records, at the Metadata level (who, verb, resource, response code, no bodies), the
// requests of ServiceAccounts (when Options.AuditServiceAccounts) and of Options.AuditUsers, and
// nothing else: once they complete, and watches also when they start, since a watch completes only
// when it ends.
func (c *Cluster) auditPolicy() string {
	var b strings.Builder
	b.WriteString("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [\"RequestReceived\"]\nrules:\n")
	if c.opts.AuditServiceAccounts {
		b.WriteString("  - level: Metadata\n    userGroups: [\"system:serviceaccounts\"]\n")
	}
	if len(c.opts.AuditUsers) > 0 {
		quoted := make([]string, len(c.opts.AuditUsers))
		for i, u := range c.opts.AuditUsers {
			quoted[i] = strconv.Quote(u)
		}
		b.WriteString("  - level: Metadata\n    users: [" + strings.Join(quoted, ", ") + "]\n")
	}
	b.WriteString("  - level: None\n")
	return b.String()
}

// auditFlags writes the audit policy and returns the API server's flags for it.
func (c *Cluster) auditFlags() ([]string, error) {
	policy := filepath.Join(c.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(c.auditPolicy()), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + c.AuditLog(),
		"--audit-log-format=json", "--audit-log-mode=blocking",
	}, nil
}

// AuditLog is the API server's audit log, one JSON event per line (Options.AuditServiceAccounts,
// Options.AuditUsers).
func (c *Cluster) AuditLog() string { return filepath.Join(c.LogDir(), "audit.log") }

func (c *Cluster) writeKubeconfig(certs *pki) error {
	if err := c.writeKubeconfigFor(c.Kubeconfig(), "admin", certs.adminCert, certs.adminKey); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.Kubeconfig = c.Kubeconfig()
	return writeState(&c.state)
}

// UserKubeconfig writes a kubeconfig for user in groups, with a client certificate from the
// cluster's CA, and returns its path. What the user may do is up to RBAC (system:masters may do
// anything); what it does is in the audit log when Options.AuditUsers names it.
func (c *Cluster) UserKubeconfig(user string, groups ...string) (string, error) {
	cert, key, err := c.IssueClientCertificate(user, groups...)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, "kubeconfig-"+strings.NewReplacer(":", "-", "/", "-").Replace(user))
	return path, c.writeKubeconfigFor(path, user, cert, key)
}

func (c *Cluster) writeKubeconfigFor(path, user string, cert, key []byte) error {
	const name = "localcluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.config.Host, CertificateAuthorityData: c.certs.caCert}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: metav1.NamespaceDefault}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("failed to write the kubeconfig %s: %w", path, err)
	}
	return nil
}

// populate creates the cluster's objects and waits until kwok has made the nodes Ready.
func (c *Cluster) populate(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return err
	}
	c.opts.Logf("creating %d fake nodes and %d persistent volumes", len(c.opts.Nodes), c.opts.PersistentVolumes)
	if err := createStorage(ctx, cs, filepath.Join(c.dir, "volumes"), c.opts.PersistentVolumes, c.opts.PersistentVolumeSize); err != nil {
		return err
	}
	if err := createNodes(ctx, cs, c.opts.Nodes); err != nil {
		return err
	}
	return c.waitFor(ctx, nil, "kwok to make the nodes Ready", func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // The API server may be briefly busy; the timeout reports it.
		}
		ready := 0
		for i := range nodes.Items {
			if nodeReady(&nodes.Items[i]) {
				ready++
			}
		}
		return ready == len(c.opts.Nodes), nil
	})
}

// start runs a component and records it in the state file before anything can fail, so that Down
// can stop it even when this process dies right after.
func (c *Cluster) start(name, path string, args, env []string) (*Process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.stopped:
		return nil, errors.New("the cluster is stopped")
	default:
	}
	p, err := startProcess(name, path, args, env, filepath.Join(c.LogDir(), name+".log"), c.opts.Detached)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	c.state.Processes = append(c.state.Processes, *p)
	return p, writeState(&c.state)
}

// waitFor polls check until it reports true, the process p exits, or the start timeout passes. Every
// component started so far must keep running: one that exits is reported with its log.
func (c *Cluster) waitFor(ctx context.Context, p *Process, what string, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		if err := c.exited(); err != nil {
			return err
		}
		ok, err := check(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			err := fmt.Errorf("gave up waiting for %s: %w", what, ctx.Err())
			if p != nil {
				err = fmt.Errorf("%w; the end of %s:\n%s", err, p.Log, Tail(p.Log, 15))
			}
			return err
		case <-ticker.C:
		}
	}
}

func (c *Cluster) exited() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if !p.Alive() {
			return p.exitedError()
		}
	}
	return nil
}

// StartProcess runs a program beside the control plane (an operator's manager, a node agent) with
// its output in LogDir and env added to this process's environment. It is recorded in the state
// file and stopped before the control plane, by Stop or Down. Pass the kubeconfig in args or env.
func (c *Cluster) StartProcess(name, path string, args, env []string) (*Process, error) {
	c.opts.Logf("starting %s", name)
	return c.start(name, path, args, env)
}

// Stop stops every process in reverse order of start and removes the state file (and the directory,
// when Start created a temporary one). It is safe to call more than once and from several goroutines.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		close(c.stopped)
		procs := c.procs
		c.mu.Unlock()
		c.stopErr = stopAll(procs)
		if c.stopErr != nil {
			return
		}
		if c.removeDir {
			c.stopErr = os.RemoveAll(c.dir)
			return
		}
		if err := os.Remove(filepath.Join(c.dir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			c.stopErr = err
		}
	})
	return c.stopErr
}

// Config returns a copy of the admin's client configuration (member of system:masters).
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.config) }

// CAFile returns the path of the cluster's CA certificate (PEM): the API server's client CA and the
// issuer of its serving certificate, so a kubelet trusts it for both.
func (c *Cluster) CAFile() string { return c.certs.caFile }

// IssueClientCertificate returns a client certificate and its key (PEM) for user in groups, signed
// by the cluster's CA: for example system:node:<name> in system:nodes for a real kubelet. What the
// user may do is up to RBAC.
func (c *Cluster) IssueClientCertificate(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	if c.certs == nil {
		return nil, nil, errors.New("the cluster has no certificates yet")
	}
	return c.certs.issueClient(user, groups)
}

// Kubeconfig returns the path of the admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.dir, kubeconfigFile) }

// Dir returns the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// LogDir returns the directory holding one log file per process.
func (c *Cluster) LogDir() string { return filepath.Join(c.dir, logsDir) }

// Processes returns the processes started so far, in order.
func (c *Cluster) Processes() []Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Process, len(c.procs))
	for i, p := range c.procs {
		out[i] = *p
	}
	return out
}

// freePorts returns n distinct TCP ports that were free on 127.0.0.1 a moment ago. The listeners stay
// open until all are chosen, so the kernel cannot hand out the same port twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("failed to find a free port on 127.0.0.1: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreeAddresses returns n addresses 127.0.0.1:<port> whose ports were free a moment ago, for the
// listen addresses of processes started with StartProcess.
func FreeAddresses(n int) ([]string, error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return addrs, nil
}

// HTTPOK reports whether a GET of url through client answers 200 within 2 seconds: the readiness
// check of the control plane's components, and of programs started beside them.
func HTTPOK(ctx context.Context, client *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// KubeconfigEnv returns KUBECONFIG=<path>, for the environment of kubectl and other clients.
func (c *Cluster) KubeconfigEnv() string { return "KUBECONFIG=" + c.Kubeconfig() }
