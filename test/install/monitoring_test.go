package install_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestAlertsReadExistingSeries checks that every dbtune_* series the PrometheusRule's alerts
// read is one the code exports, or one kube-state-metrics-crs.yaml makes kube-state-metrics
// export: a renamed metric would otherwise leave an alert that can never fire.
func TestAlertsReadExistingSeries(t *testing.T) {
	objs := kustomize(t, "overlays/prometheus")
	rule := find(t, objs, "PrometheusRule", managerName)
	fromKSM := kubeStateMetricsSeries(t)
	exported := exportedMetricNames(t)
	groups, _, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range groups {
		rules, _, err := unstructured.NestedSlice(g.(map[string]any), "rules")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			r := r.(map[string]any)
			alerts++
			for _, name := range regexp.MustCompile(`\bdbtune_[a-z0-9_]+`).FindAllString(r["expr"].(string), -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
				if !fromKSM[name] && !exported[base] {
					t.Errorf("alert %s reads %s, which neither the code nor kube-state-metrics-crs.yaml exports", r["alert"], name)
				}
			}
		}
	}
	if alerts == 0 {
		t.Fatal("the PrometheusRule has no alert")
	}
}

// kubeStateMetricsSeries lists the series the custom-resource configuration defines:
// <metricNamePrefix>_<name> for every metric of every resource.
func kubeStateMetricsSeries(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(repoPath(t, "config", "prometheus", "kube-state-metrics-crs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Kind string `json:"kind"`
		Spec struct {
			Resources []struct {
				MetricNamePrefix string `json:"metricNamePrefix"`
				Metrics          []struct {
					Name string `json:"name"`
				} `json:"metrics"`
			} `json:"resources"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("kube-state-metrics-crs.yaml: %v", err)
	}
	if cfg.Kind != "CustomResourceStateMetrics" {
		t.Fatalf("kube-state-metrics-crs.yaml: kind %q, want CustomResourceStateMetrics", cfg.Kind)
	}
	out := map[string]bool{}
	for _, r := range cfg.Spec.Resources {
		for _, m := range r.Metrics {
			out[r.MetricNamePrefix+"_"+m.Name] = true
		}
	}
	return out
}

// exportedMetricNames collects the dbtune_* string literals of the operator's and the agent's
// non-test sources: the names their collectors register.
func exportedMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	literal := regexp.MustCompile(`"(dbtune_[a-z0-9_]+)"`)
	out := map[string]bool{}
	for _, dir := range []string{"controllers", "node-agent"} {
		err := filepath.WalkDir(repoPath(t, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".go" || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
				out[m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !out["dbtune_node_probe_fdatasync_duration_seconds"] {
		t.Fatal("the agent's fdatasync histogram is not among the names found in node-agent/: the scan is broken")
	}
	return out
}

// TestNodeAgentScrapeKeepsDatabasePodLabels checks that the node agent's ServiceMonitor honors
// the labels of the series it scrapes: the RAM volumes' series name the database pod in their own
// namespace and pod labels, which the alerts' annotations print. Without honorLabels Prometheus
// would move them to exported_namespace and exported_pod and name the agent's pod instead.
func TestNodeAgentScrapeKeepsDatabasePodLabels(t *testing.T) {
	monitor := find(t, kustomize(t, "overlays/prometheus"), "ServiceMonitor", agentName)
	endpoints, _, err := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	if err != nil || len(endpoints) == 0 {
		t.Fatalf("ServiceMonitor %s has no endpoints (%v)", agentName, err)
	}
	for i, e := range endpoints {
		if honor, _, _ := unstructured.NestedBool(e.(map[string]any), "honorLabels"); !honor {
			t.Errorf("endpoint %d of ServiceMonitor %s does not set honorLabels: true", i, agentName)
		}
	}
}
