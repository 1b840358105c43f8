package realnode

import (
	"encoding/json"
	"fmt"
	"strconv"

	"sigs.k8s.io/yaml"
)

// containerdConfig renders containerd's configuration (version 3): every directory private to the
// node, CRI with runc and the node's CNI network, and the plugins that would write to fixed host
// paths (NRI, the opt directory, CDI) turned off or pointed into the node's directory.
func containerdConfig(l layout, runc, cniBinDir string) string {
	q := strconv.Quote
	return fmt.Sprintf(`version = 3
root = %s
state = %s

[grpc]
  address = %s

[ttrpc]
  address = %s

[plugins."io.containerd.cri.v1.runtime"]
  # Root on these machines lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj below the
  # caller's, and every sandbox would fail with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  # Network namespaces under the state directory instead of the machine's /run/netns.
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = [%s]

[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = %s
  Root = %s
  SystemdCgroup = false

[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = [%s]
  conf_dir = %s
  max_conf_num = 1

[plugins."io.containerd.cri.v1.images".pinned_images]
  # Present from the start (imported), never pulled: these machines reach no registry.
  sandbox = %s

[plugins."io.containerd.nri.v1.nri"]
  disable = true

[plugins."io.containerd.internal.v1.opt"]
  path = %s

[plugins."io.containerd.shim.v1.manager"]
  socket_dir = %s
`,
		q(l.containerdRoot()), q(l.containerdState()),
		q(containerdSocket), q(containerdSocket+".ttrpc"),
		q(l.cdiDir()),
		q(runc), q(runcRoot),
		q(cniBinDir), q(l.cniConfDir()),
		q(PauseImage),
		q(l.containerdOpt()),
		q(shimSocketDir),
	)
}

// cniConfList is the node's pod network: a bridge with the gateway address on the host side, so
// that tests on the host reach pods at their addresses, the pods' default route through it, so
// that they reach the `kubernetes` Service's address (see serviceproxy.go), and no masquerading,
// which would need iptables rules on the machine. host-local keeps its leases in the node's directory.
func cniConfList(l layout, subnet string) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       cniNetwork,
		"plugins": []any{
			map[string]any{
				"type":      "bridge",
				"bridge":    BridgeName,
				"isGateway": true,
				// The host does not forward: nothing routed this way leaves the machine.
				"isDefaultGateway": true,
				"ipMasq":           false,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": l.cniIPAMDir(),
					"ranges":  []any{[]any{map[string]any{"subnet": subnet}}},
				},
			},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletPorts are the kubelet's listening ports, chosen free at start.
type kubeletPorts struct{ api, healthz int }

// kubeletConfig renders the kubelet's configuration file. The kubelet listens on loopback only and
// authenticates callers (the API server) by the cluster CA, authorizing them through the API server.
// Eviction and image garbage collection are relaxed for a small disk shared with other work, and the
// kubelet is kept from changing iptables.
func kubeletConfig(l layout, caFile string, ports kubeletPorts) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		// These machines have cgroup v1 controllers; kubelet 1.37 refuses them unless told (KEP-5573).
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"containerRuntimeEndpoint": "unix://" + containerdSocket,
		"address":                  "127.0.0.1",
		"port":                     ports.api,
		"healthzBindAddress":       "127.0.0.1",
		"healthzPort":              ports.healthz,
		"readOnlyPort":             0,
		"podLogsDir":               l.podLogsDir(),
		"failSwapOn":               false,
		"makeIPTablesUtilChains":   false,
		"rotateCertificates":       false,
		"serverTLSBootstrap":       false,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": caFile},
		},
		"authorization": map[string]any{"mode": "Webhook"},
		"evictionHard": map[string]string{
			"memory.available": "100Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%",
			"imagefs.available": "1%", "imagefs.inodesFree": "1%",
		},
		// 100% never reached: the images are imported and cannot be pulled again.
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
	}
	return yaml.Marshal(cfg)
}
