//go:build realnode

package realnode

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestConfigsKeepToTheNodeDirectory guards what restore relies on: every path the node's containerd,
// CNI and kubelet configurations name is in the node's directory or RuntimeDir, apart from the
// programs they run, so nothing lands at a fixed host path that restore does not know of.
func TestConfigsKeepToTheNodeDirectory(t *testing.T) {
	l := layout{dir: "/work/cluster/realnode"}
	allowed := []string{l.dir + "/", RuntimeDir + "/", "/usr/sbin/runc", "/usr/lib/cni", "/work/cluster/pki/ca.crt"}
	conflist, err := cniConfList(l, "10.244.250.0/24")
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := kubeletConfig(l, "/work/cluster/pki/ca.crt", kubeletPorts{api: 10250, healthz: 10248})
	if err != nil {
		t.Fatal(err)
	}
	var containerdPaths []string
	for _, m := range regexp.MustCompile(`"(/[^"]*)"`).FindAllStringSubmatch(containerdConfig(l, "/usr/sbin/runc", "/usr/lib/cni"), -1) {
		containerdPaths = append(containerdPaths, m[1])
	}
	configs := map[string][]string{
		"containerd": containerdPaths,
		"CNI":        pathValues(t, conflist),
		"kubelet":    pathValues(t, kubelet),
	}
	for name, paths := range configs {
		if len(paths) == 0 {
			t.Errorf("found no path in the %s configuration", name)
		}
		for _, p := range paths {
			if !hasAnyPrefix(p, allowed) {
				t.Errorf("the %s configuration names %s, outside the node's directory and %s", name, p, RuntimeDir)
			}
		}
	}
}

// pathValues returns the string values of a JSON or YAML document that are absolute paths or unix
// socket addresses, wherever they are in it.
func pathValues(t *testing.T, doc []byte) []string {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			if p := strings.TrimPrefix(v, "unix://"); strings.HasPrefix(p, "/") {
				paths = append(paths, p)
			}
		}
	}
	walk(v)
	return paths
}

// TestKubeletConfigSettings checks the settings without which the kubelet fails or changes the host
// on these machines.
func TestKubeletConfigSettings(t *testing.T) {
	data, err := kubeletConfig(layout{dir: "/n"}, "/ca.crt", kubeletPorts{api: 1, healthz: 2})
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"failCgroupV1": false, "cgroupDriver": "cgroupfs", "address": "127.0.0.1", "readOnlyPort": float64(0),
		"failSwapOn": false, "makeIPTablesUtilChains": false, "podLogsDir": "/n/pod-logs",
	}
	for key, v := range want {
		if got, _ := json.Marshal(cfg[key]); string(got) != mustJSON(t, v) {
			t.Errorf("kubelet config %s = %s, want %s", key, got, mustJSON(t, v))
		}
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
