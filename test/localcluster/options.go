package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Binaries are the files Start needs in Options.BinDir; `hack/k8s-binaries.sh all` builds them all.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"}

// Labels and values on the fake nodes.
const (
	// FakeNodeAnnotation marks the nodes kwok manages; kwok ignores every other node.
	FakeNodeAnnotation = "kwok.x-k8s.io/node"
	// DatabaseRoleLabel is set on the first default node: a ReadAheadPolicy (and a user's
	// nodeSelector) can single it out the way database nodes are singled out in real clusters.
	DatabaseRoleLabel = "node-role.kubernetes.io/database"
	// StorageClassName is the default StorageClass; claims without a class get it and bind to the
	// static PersistentVolumes.
	StorageClassName = "standard"
)

// NodeSpec describes a fake node. Zero resources get the defaults of DefaultNodes.
type NodeSpec struct {
	// Name is the node name.
	Name string
	// Labels are added to the usual kubernetes.io/hostname, os and arch labels.
	Labels map[string]string
	// CPU, Memory and EphemeralStorage are the node's capacity; allocatable is slightly less, as
	// on a real node with system reservations.
	CPU, Memory, EphemeralStorage resource.Quantity
	// Pods is the pod capacity.
	Pods int64
}

// DefaultNodes returns n nodes sized like a common database host: 16 CPUs, 64 GiB, 110 pods, spread
// over three zones. The first one carries DatabaseRoleLabel.
func DefaultNodes(n int) []NodeSpec {
	nodes := make([]NodeSpec, n)
	for i := range nodes {
		nodes[i] = NodeSpec{
			Name:   fmt.Sprintf("kwok-node-%d", i+1),
			Labels: map[string]string{"topology.kubernetes.io/zone": fmt.Sprintf("zone-%c", 'a'+i%3)},
		}
		if i == 0 {
			nodes[i].Labels[DatabaseRoleLabel] = ""
		}
	}
	return nodes
}

func (n NodeSpec) withDefaults() NodeSpec {
	if n.CPU.IsZero() {
		n.CPU = resource.MustParse("16")
	}
	if n.Memory.IsZero() {
		n.Memory = resource.MustParse("64Gi")
	}
	if n.EphemeralStorage.IsZero() {
		n.EphemeralStorage = resource.MustParse("200Gi")
	}
	if n.Pods == 0 {
		n.Pods = 110
	}
	return n
}

// Options configure Start. BinDir is required.
type Options struct {
	// BinDir holds the Binaries (hack/k8s-binaries.sh --print-dir).
	BinDir string
	// Dir holds the cluster's certificates, etcd data, kubeconfig, logs, volumes and state file. It
	// must be empty or hold a previous cluster, which is wiped. Empty means a new temporary
	// directory, removed by Stop.
	Dir string
	// Nodes are the fake nodes; nil means DefaultNodes(3).
	Nodes []NodeSpec
	// PersistentVolumes is the number of static hostPath volumes of the default StorageClass, so
	// that claims (volumeClaimTemplates) bind without a provisioner.
	PersistentVolumes int
	// PersistentVolumeSize is the capacity of each volume (default 10Gi). A claim binds to a volume
	// at least as large as it asks for.
	PersistentVolumeSize resource.Quantity
	// Detached leaves the processes running when the calling process exits, for a cluster that
	// outlives the command that started it; Down stops it from any process. Otherwise the
	// processes also stop when ctx is done or the caller dies.
	Detached bool
	// StartTimeout bounds the wait for each component to become ready (default 2 minutes: a busy
	// two-core machine can take tens of seconds to bring the API server up).
	StartTimeout time.Duration
	// ServiceAccountTokens turns the ServiceAccount admission plugin on, so that pods get a
	// projected service-account token (signed by the API server's key, through the TokenRequest
	// API) and the kube-root-ca.crt ConfigMap that comes with it: for pods on a real node
	// (test/realnode) that talk to the API server as their ServiceAccount, so RBAC applies to
	// them. Off by default: fake nodes mount nothing, and the legacy token controller stays off.
	ServiceAccountTokens bool
	// AuditServiceAccounts makes the API server write an audit log (Cluster.AuditLog) of every
	// request a ServiceAccount makes, with its verb, resource and response code: what pods on a
	// real node did with the permissions they were given, and what they were refused.
	AuditServiceAccounts bool
	// AuditUsers makes the API server write the same audit log of the requests of these users: for
	// example the replicas of a manager run with kubeconfigs from Cluster.UserKubeconfig, to count
	// what each one wrote.
	AuditUsers []string
	// Logf reports progress; nil discards it.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() (Options, error) {
	if o.BinDir == "" {
		return o, errors.New("no BinDir: run `hack/k8s-binaries.sh all` and pass `hack/k8s-binaries.sh --print-dir`")
	}
	for _, name := range Binaries {
		if _, err := os.Stat(filepath.Join(o.BinDir, name)); err != nil {
			return o, fmt.Errorf("%s is missing from %s: run `hack/k8s-binaries.sh all` to build it", name, o.BinDir)
		}
	}
	if o.Nodes == nil {
		o.Nodes = DefaultNodes(3)
	}
	nodes := make([]NodeSpec, len(o.Nodes))
	for i, n := range o.Nodes {
		nodes[i] = n.withDefaults()
	}
	o.Nodes = nodes
	if o.PersistentVolumeSize.IsZero() {
		o.PersistentVolumeSize = resource.MustParse("10Gi")
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o, nil
}

// DefaultBinDir asks the repository's hack/k8s-binaries.sh where it builds the binaries of the pinned
// Kubernetes, etcd and kwok versions. It builds nothing.
func DefaultBinDir(repoRoot string) (string, error) {
	out, err := exec.Command(filepath.Join(repoRoot, "hack", "k8s-binaries.sh"), "--print-dir").Output()
	if err != nil {
		return "", fmt.Errorf("hack/k8s-binaries.sh --print-dir: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
