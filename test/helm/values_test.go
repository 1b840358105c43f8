package helm_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Each value lands where it should; the defaults are TestChartEqualsKustomize's business.
func TestValuesTakeEffect(t *testing.T) {
	tests := []struct {
		name, values string
		kind, object string   // the object looked at
		path         []string // the field looked at; nil: the object must be absent
		want         any
	}{
		{"manager image", `manager: {image: {repository: registry.example.com/op, tag: v9, pullPolicy: Always}}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.containers.0.image"), "registry.example.com/op:v9"},
		{"manager pull policy", `manager: {image: {pullPolicy: Always}}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.containers.0.imagePullPolicy"), "Always"},
		{"agent image", `nodeAgent: {image: {repository: registry.example.com/agent, tag: v9}}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.containers.0.image"), "registry.example.com/agent:v9"},
		{"pull secrets on the manager", `imagePullSecrets: [{name: regcred}]`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.imagePullSecrets"), []any{map[string]any{"name": "regcred"}}},
		{"pull secrets on the agent", `imagePullSecrets: [{name: regcred}]`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.imagePullSecrets"), []any{map[string]any{"name": "regcred"}}},
		{"replicas", `manager: {replicas: 3}`,
			"Deployment", "dbtune-scratch-operator", path("spec.replicas"), float64(3)},
		{"one replica, no PodDisruptionBudget", `manager: {replicas: 1}`,
			"PodDisruptionBudget", "dbtune-scratch-operator", nil, nil},
		{"manager resources", `manager: {resources: {limits: {memory: 1Gi}}}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.containers.0.resources.limits"), map[string]any{"cpu": "500m", "memory": "1Gi"}},
		{"manager GOMEMLIMIT", `manager: {goMemLimit: 900MiB}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.containers.0.env.0.value"), "900MiB"},
		{"manager extra args", `manager: {extraArgs: ["--zap-log-level=debug"]}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.containers.0.args.3"), "--zap-log-level=debug"},
		{"agent without large pages", `nodeAgent: {largePages: false}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.containers.0.securityContext.capabilities"), map[string]any{"drop": []any{"ALL"}}},
		{"agent extra args", `nodeAgent: {extraArgs: ["--probe-interval=12h"]}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.containers.0.args.9"), "--probe-interval=12h"},
		{"manager pod annotations", `manager: {podAnnotations: {a: b}}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.metadata.annotations"), map[string]any{"a": "b", "kubectl.kubernetes.io/default-container": "manager"}},
		{"agent pod annotations", `nodeAgent: {podAnnotations: {a: b}}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.metadata.annotations.a"), "b"},
		{"manager priority class", `manager: {priorityClassName: system-cluster-critical}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.priorityClassName"), "system-cluster-critical"},
		{"agent priority class of its own", `nodeAgent: {priorityClass: {value: 1000}}`,
			"PriorityClass", "dbtune-node-agent", path("value"), float64(1000)},
		{"agent in an existing priority class", `nodeAgent: {priorityClass: {create: false, name: system-node-critical}}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.priorityClassName"), "system-node-critical"},
		{"no priority class created", `nodeAgent: {priorityClass: {create: false, name: system-node-critical}}`,
			"PriorityClass", "dbtune-node-agent", nil, nil},
		{"manager node selector, added to the default", `manager: {nodeSelector: {pool: ops}}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.nodeSelector"), map[string]any{"kubernetes.io/os": "linux", "pool": "ops"}},
		{"manager node selector, default dropped", `manager: {nodeSelector: {kubernetes.io/os: null, pool: ops}}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.nodeSelector"), map[string]any{"pool": "ops"}},
		{"agent node selector", `nodeAgent: {nodeSelector: {pool: db}}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.nodeSelector"), map[string]any{"pool": "db"}},
		{"manager tolerations", `manager: {tolerations: [{key: ops, operator: Exists}]}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.tolerations"), []any{map[string]any{"key": "ops", "operator": "Exists"}}},
		{"agent tolerations", `nodeAgent: {tolerations: [{key: db, operator: Exists, effect: NoSchedule}]}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.tolerations"), []any{map[string]any{"key": "db", "operator": "Exists", "effect": "NoSchedule"}}},
		{"manager affinity", `manager: {affinity: {podAntiAffinity: {}}}`,
			"Deployment", "dbtune-scratch-operator", path("spec.template.spec.affinity"), map[string]any{"podAntiAffinity": map[string]any{}}},
		{"agent on every node", `nodeAgent: {affinity: {nodeAffinity: null}}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.affinity"), nil},
		{"agent resources", `nodeAgent: {resources: {limits: {memory: 512Mi}}}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.containers.0.resources.limits.memory"), "512Mi"},
		{"probe directory", `nodeAgent: {probeHostPath: /mnt/db/probe}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.volumes.1.hostPath.path"), "/mnt/db/probe"},
		{"kubelet pods directory", `nodeAgent: {kubeletPodsHostPath: /var/lib/k0s/kubelet/pods}`,
			"DaemonSet", "dbtune-node-agent", path("spec.template.spec.volumes.2.hostPath.path"), "/var/lib/k0s/kubelet/pods"},
		{"no user roles", `rbac: {userRoles: {create: false}}`,
			"ClusterRole", "dbtune-viewer", nil, nil},
		{"no CRDs", `crds: {install: false}`,
			"CustomResourceDefinition", "scratchvolumes.dbtune.io", nil, nil},
		{"CRDs not kept", `crds: {keep: false}`,
			"CustomResourceDefinition", "scratchvolumes.dbtune.io", path("metadata.annotations.helm\\.sh/resource-policy"), nil},
		{"ServiceMonitor labels", `metrics: {serviceMonitor: {enabled: true, labels: {release: kps}}}`,
			"ServiceMonitor", "dbtune-node-agent", path("metadata.labels.release"), "kps"},
		{"PrometheusRule labels", `metrics: {prometheusRule: {enabled: true, labels: {release: kps}}}`,
			"PrometheusRule", "dbtune-scratch-operator", path("metadata.labels.release"), "kps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := find(render(t, values(t, tt.values)), tt.kind, tt.object)
			if tt.path == nil {
				if obj != nil {
					t.Errorf("values %s render %s %s; want none", tt.values, tt.kind, tt.object)
				}
				return
			}
			if obj == nil {
				t.Fatalf("values %s render no %s %s", tt.values, tt.kind, tt.object)
			}
			got := field(obj.Object, tt.path)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("values %s: %s %s %v (-want +got):\n%s", tt.values, tt.kind, tt.object, tt.path, diff)
			}
		})
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
