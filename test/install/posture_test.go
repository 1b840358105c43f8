package install_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestManagerPosture checks the operator's Deployment for what a platform team expects of a
// controller: highly available, non-root, nothing writable or privileged, bounded, probed.
func TestManagerPosture(t *testing.T) {
	objs := kustomize(t, "default")
	d := convert[appsv1.Deployment](t, find(t, objs, "Deployment", managerName))
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas = %v, want at least 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("the manager pod has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Contains(c.Args, "--leader-elect") {
		t.Errorf("args %q lack --leader-elect: two replicas would both reconcile", c.Args)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("the pod does not set runAsNonRoot: true")
	}
	checkSeccomp(t, pod)
	checkLockedDown(t, c, nil)
	checkBounded(t, c)
	if c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Error("the manager container lacks a liveness or readiness probe")
	}
	find(t, objs, "PodDisruptionBudget", managerName)
	checkBinding(t, objs, pod.ServiceAccountName, "role.yaml")
}

// TestNodeAgentPosture checks the DaemonSet of each variant: the host access it has is exactly
// what its features need.
func TestNodeAgentPosture(t *testing.T) {
	// withReadAhead is every host path of an agent that applies read-ahead.
	withReadAhead := map[string]bool{
		"/var/lib/dbtune-node-agent/probe": true,
		"/run/dbtune-node-agent":           true,
		"/sys/devices":                     true,
		"/sys/block":                       false,
		"/sys/class/block":                 false,
		"/sys/dev/block":                   false,
		"/proc/1":                          false,
		"/var/lib/kubelet/pods":            false,
	}
	tests := []struct {
		dir        string
		readAhead  string
		largePages string
		// capabilities are those added to the agent's container: SYS_ADMIN for large pages only.
		capabilities []corev1.Capability
		// hostPaths maps every hostPath the agent mounts to whether it may write there.
		hostPaths map[string]bool
	}{{
		dir:          "default",
		readAhead:    "true",
		largePages:   "true",
		capabilities: []corev1.Capability{"SYS_ADMIN"},
		hostPaths:    withReadAhead,
	}, {
		dir:          "overlays/no-read-ahead",
		readAhead:    "false",
		largePages:   "true",
		capabilities: []corev1.Capability{"SYS_ADMIN"},
		hostPaths:    map[string]bool{"/var/lib/dbtune-node-agent/probe": true, "/var/lib/kubelet/pods": false},
	}, {
		dir:        "overlays/no-large-pages",
		readAhead:  "true",
		largePages: "false",
		hostPaths:  withReadAhead,
	}}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			objs := kustomize(t, tt.dir)
			ds := convert[appsv1.DaemonSet](t, find(t, objs, "DaemonSet", agentName))
			pod := ds.Spec.Template.Spec
			if pod.HostPID || pod.HostNetwork || pod.HostIPC {
				t.Errorf("hostPID %t, hostNetwork %t, hostIPC %t: the agent needs none of them", pod.HostPID, pod.HostNetwork, pod.HostIPC)
			}
			if len(pod.Tolerations) == 0 {
				t.Error("no tolerations: the agent would not run on tainted database nodes")
			}
			find(t, objs, "PriorityClass", pod.PriorityClassName)
			checkSeccomp(t, pod)
			if len(pod.Containers) != 1 {
				t.Fatalf("the agent pod has %d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]
			checkLockedDown(t, c, tt.capabilities)
			checkBounded(t, c)
			if got := envValue(c, "DBTUNE_READ_AHEAD"); got != tt.readAhead {
				t.Errorf("DBTUNE_READ_AHEAD = %q, want %q", got, tt.readAhead)
			}
			if got := envValue(c, "DBTUNE_LARGE_PAGES"); got != tt.largePages {
				t.Errorf("DBTUNE_LARGE_PAGES = %q, want %q", got, tt.largePages)
			}
			if diff := cmp.Diff(tt.hostPaths, hostPathAccess(pod, c)); diff != "" {
				t.Errorf("host paths, path: writable (-want +got):\n%s", diff)
			}
			checkProbeTmpfs(t, pod, c)
			checkKubeletPods(t, pod, c)
			checkBinding(t, objs, pod.ServiceAccountName, "node-agent/role.yaml")
		})
	}
}

func checkSeccomp(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	if psc := pod.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("the pod does not use the RuntimeDefault seccomp profile")
	}
}

// checkLockedDown: no capability but added, no privilege, no escalation, a read-only root
// filesystem.
func checkLockedDown(t *testing.T, c corev1.Container, added []corev1.Capability) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("container %s has no securityContext", c.Name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("container %s is privileged", c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container %s allows privilege escalation", c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s has a writable root filesystem", c.Name)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(sc.Capabilities.Add, added) {
		t.Errorf("container %s capabilities = %+v, want drop [ALL] and add %v", c.Name, sc.Capabilities, added)
	}
}

func checkBounded(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[name]; !ok {
			t.Errorf("container %s has no %s request", c.Name, name)
		}
		if _, ok := c.Resources.Limits[name]; !ok {
			t.Errorf("container %s has no %s limit", c.Name, name)
		}
	}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// hostPathAccess maps each hostPath volume the container mounts to whether the mount is
// writable.
func hostPathAccess(pod corev1.PodSpec, c corev1.Container) map[string]bool {
	paths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			paths[v.Name] = v.HostPath.Path
		}
	}
	out := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if p, ok := paths[m.Name]; ok {
			out[p] = out[p] || !m.ReadOnly
		}
	}
	return out
}

// checkKubeletPods: the scratch-usage sampler sees the kubelet's pods directory read-only, with
// the tmpfs mounts of pods started after it (HostToContainer), where --kubelet-root says.
func checkKubeletPods(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	var volume string
	for _, v := range pod.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/var/lib/kubelet/pods" {
			volume = v.Name
		}
	}
	root := "/var/lib/kubelet"
	for _, arg := range c.Args {
		if v, ok := strings.CutPrefix(arg, "--kubelet-root="); ok {
			root = v
		}
	}
	for _, m := range c.VolumeMounts {
		if m.Name != volume {
			continue
		}
		if m.MountPath != root+"/pods" {
			t.Errorf("the kubelet's pods directory is mounted at %s, but --kubelet-root is %s", m.MountPath, root)
		}
		if m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationHostToContainer {
			t.Errorf("the kubelet's pods directory is mounted with propagation %v, want HostToContainer: the agent would miss the volumes of pods started after it", m.MountPropagation)
		}
		return
	}
	t.Error("the agent does not mount the kubelet's pods directory")
}

// checkProbeTmpfs: the probe refuses a target with less than twice its sequential write free,
// and every byte of the tmpfs is charged to the container's memory limit.
func checkProbeTmpfs(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	var size *resource.Quantity
	for _, v := range pod.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			size = v.EmptyDir.SizeLimit
		}
	}
	if size == nil {
		t.Fatal("no memory emptyDir with a sizeLimit for the tmpfs target")
	}
	seqWrite := resource.MustParse("256Mi")
	for _, arg := range c.Args {
		if v, ok := strings.CutPrefix(arg, "--seq-write-bytes="); ok {
			seqWrite = resource.MustParse(v)
		}
	}
	if need := 2 * seqWrite.Value(); size.Value() < need {
		t.Errorf("the tmpfs sizeLimit %s is less than twice --seq-write-bytes (%s): the probe would refuse it", size, &seqWrite)
	}
	if limit := c.Resources.Limits.Memory(); limit.Cmp(*size) <= 0 {
		t.Errorf("the memory limit %s does not exceed the tmpfs sizeLimit %s", limit, size)
	}
}

// checkBinding: the ServiceAccount a workload runs as is bound to a ClusterRole of the build
// whose rules are those `make manifests` generated, and, in the install namespace, to the Role
// that holds its Lease rules.
func checkBinding(t *testing.T, objs []*unstructured.Unstructured, sa, roleFile string) {
	t.Helper()
	want, wantRole := generatedRoles(t, roleFile)
	find(t, objs, "ServiceAccount", sa)
	role := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", want.Name))
	if diff := cmp.Diff(want.Rules, role.Rules); diff != "" {
		t.Errorf("ClusterRole %s differs from config/rbac/%s (-generated +built):\n%s", want.Name, roleFile, diff)
	}
	nsRole := convert[rbacv1.Role](t, find(t, objs, "Role", wantRole.Name))
	if diff := cmp.Diff(wantRole.Rules, nsRole.Rules); diff != "" {
		t.Errorf("Role %s differs from config/rbac/%s (-generated +built):\n%s", wantRole.Name, roleFile, diff)
	}
	if nsRole.Namespace != installNamespace {
		t.Errorf("Role %s is in namespace %q, want %q", nsRole.Name, nsRole.Namespace, installNamespace)
	}
	if !bound(t, objs, "ClusterRoleBinding", "ClusterRole", want.Name, sa) {
		t.Errorf("no ClusterRoleBinding binds ClusterRole %s to ServiceAccount %s/%s", want.Name, installNamespace, sa)
	}
	if !bound(t, objs, "RoleBinding", "Role", wantRole.Name, sa) {
		t.Errorf("no RoleBinding in %s binds Role %s to ServiceAccount %s/%s", installNamespace, wantRole.Name, installNamespace, sa)
	}
}

// bound reports whether a binding of the given kind ties roleKind/roleName to the ServiceAccount
// sa of the install namespace; a RoleBinding must also be in that namespace.
func bound(t *testing.T, objs []*unstructured.Unstructured, kind, roleKind, roleName, sa string) bool {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != kind || (kind == "RoleBinding" && o.GetNamespace() != installNamespace) {
			continue
		}
		b := convert[rbacv1.RoleBinding](t, o)
		if b.RoleRef.Kind != roleKind || b.RoleRef.Name != roleName {
			continue
		}
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == installNamespace {
				return true
			}
		}
	}
	return false
}
