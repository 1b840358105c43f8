package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// createStorage creates the default StorageClass and the static volumes. Immediate binding lets the
// PersistentVolume controller bind a claim as soon as it exists, before the scheduler sees the pod,
// which is what a hostPath volume (usable from any fake node) allows.
func createStorage(ctx context.Context, cs kubernetes.Interface, dir string, count int, size resource.Quantity) error {
	binding := storagev1.VolumeBindingImmediate
	reclaim := corev1.PersistentVolumeReclaimRetain
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &binding,
		ReclaimPolicy:     &reclaim,
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("failed to create StorageClass %s: %w", sc.Name, err)
	}
	for i := 1; i <= count; i++ {
		name := fmt.Sprintf("pv-%03d", i)
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(path, 0o755); err != nil {
			return err
		}
		hostPathType := corev1.HostPathDirectory
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              StorageClassName,
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &hostPathType},
				},
			},
		}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("failed to create PersistentVolume %s: %w", name, err)
		}
	}
	return nil
}

// createNodes registers the fake nodes with their capacity in the status, which kwok keeps: it only
// fills in what is missing (conditions, nodeInfo) and then keeps the node's heartbeat going. Each node
// gets its own address and pod CIDR so that `kubectl get pods -o wide` reads like a real cluster.
func createNodes(ctx context.Context, cs kubernetes.Interface, nodes []NodeSpec) error {
	for i, n := range nodes {
		labels := map[string]string{
			"kubernetes.io/hostname": n.Name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			"type":                   "kwok",
		}
		for k, v := range n.Labels {
			labels[k] = v
		}
		podCIDR := fmt.Sprintf("10.244.%d.0/24", i+1)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        n.Name,
				Labels:      labels,
				Annotations: map[string]string{FakeNodeAnnotation: "fake"},
			},
			Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
			Status: corev1.NodeStatus{
				Capacity:    n.capacity(),
				Allocatable: n.allocatable(),
				Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.89.0.%d", i+1)},
					{Type: corev1.NodeHostName, Address: n.Name},
				},
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("failed to create Node %s: %w", n.Name, err)
		}
	}
	return nil
}

func (n NodeSpec) capacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              n.CPU,
		corev1.ResourceMemory:           n.Memory,
		corev1.ResourceEphemeralStorage: n.EphemeralStorage,
		corev1.ResourcePods:             *resource.NewQuantity(n.Pods, resource.DecimalSI),
	}
}

// allocatable subtracts what a kubelet typically reserves for the system: 100m CPU and 1Gi of
// memory (kube-reserved plus the eviction threshold) and 10% of the ephemeral storage.
func (n NodeSpec) allocatable() corev1.ResourceList {
	alloc := n.capacity()
	subtract := func(name corev1.ResourceName, q resource.Quantity) {
		v := alloc[name]
		if v.Cmp(q) > 0 {
			v.Sub(q)
			alloc[name] = v
		}
	}
	subtract(corev1.ResourceCPU, resource.MustParse("100m"))
	subtract(corev1.ResourceMemory, resource.MustParse("1Gi"))
	subtract(corev1.ResourceEphemeralStorage, *resource.NewQuantity(n.EphemeralStorage.Value()/10, resource.BinarySI))
	return alloc
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
