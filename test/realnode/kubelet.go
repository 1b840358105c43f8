package realnode

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// startKubelet gives the kubelet its identity and configuration, starts it and waits for its
// health endpoint.
func (n *Node) startKubelet(ctx context.Context) error {
	l := n.layout
	for _, dir := range []string{l.kubeletRoot(), l.kubeletCertDir(), l.podLogsDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := linkDefaultKubeletRoot(l.kubeletRoot(), n.state.Absent); err != nil {
		return err
	}
	if err := n.writeKubeletKubeconfig(ctx); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	kp := kubeletPorts{api: ports[0], healthz: ports[1]}
	config, err := kubeletConfig(l, n.opts.Cluster.CAFile(), kp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(l.kubeletConfig(), config, 0o644); err != nil {
		return fmt.Errorf("failed to write the kubelet's configuration: %w", err)
	}
	if err := n.startProcess("kubelet", filepath.Join(n.opts.BinDir, "kubelet"), []string{
		"--config=" + l.kubeletConfig(),
		"--kubeconfig=" + l.kubeletKubeconfig(),
		"--root-dir=" + l.kubeletRoot(),
		// The kubelet writes its serving certificate here; it does not follow --root-dir.
		"--cert-dir=" + l.kubeletCertDir(),
		"--hostname-override=" + n.opts.NodeName,
		"--v=2",
	}); err != nil {
		return err
	}
	healthz := "http://127.0.0.1:" + strconv.Itoa(kp.healthz) + "/healthz"
	return n.poll(ctx, "the kubelet to be healthy", func(ctx context.Context) bool {
		return localcluster.HTTPOK(ctx, http.DefaultClient, healthz)
	})
}

// writeKubeletKubeconfig gives the kubelet the identity of its node, system:node:<name> in
// system:nodes, and lets it do what a kubelet does. The cluster authorizes with RBAC alone (no Node
// authorizer), so the binding to the built-in system:node role is what grants it.
func (n *Node) writeKubeletKubeconfig(ctx context.Context) error {
	user := "system:node:" + n.opts.NodeName
	cert, key, err := n.opts.Cluster.IssueClientCertificate(user, "system:nodes")
	if err != nil {
		return fmt.Errorf("failed to issue the kubelet's client certificate: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode:" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	_, err = n.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create ClusterRoleBinding %s: %w", binding.Name, err)
	}
	ca, err := os.ReadFile(n.opts.Cluster.CAFile())
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: n.opts.Cluster.Config().Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["kubelet"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "kubelet"}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, n.layout.kubeletKubeconfig()); err != nil {
		return fmt.Errorf("failed to write the kubelet's kubeconfig: %w", err)
	}
	return nil
}

// freePorts returns n distinct TCP ports that were free on 127.0.0.1 a moment ago.
func freePorts(n int) ([]int, error) {
	addrs, err := localcluster.FreeAddresses(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, n)
	for i, a := range addrs {
		_, port, _ := net.SplitHostPort(a)
		if ports[i], err = strconv.Atoi(port); err != nil {
			return nil, err
		}
	}
	return ports, nil
}

// defaultKubeletRoot is where a kubelet keeps its pods by default, and where manifests that mount
// the kubelet's directories from the host (the node agent's) look for them.
const defaultKubeletRoot = "/var/lib/kubelet"

// linkDefaultKubeletRoot makes defaultKubeletRoot a symbolic link to the node's own kubelet
// directory, when nothing was there before the node (absent, as recorded): a hostPath volume of it
// then reaches this kubelet's pods. Restore removes the link with the other absent paths.
func linkDefaultKubeletRoot(root string, absent []string) error {
	if !slices.Contains(absent, defaultKubeletRoot) {
		return nil
	}
	if err := os.Symlink(root, defaultKubeletRoot); err != nil {
		return fmt.Errorf("failed to link %s to the node's kubelet directory: %w", defaultKubeletRoot, err)
	}
	return nil
}
