package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// Families each scrape must hold for the lint to have seen them: the manager's after an injection,
// the agent's after a probe run and a sample of a pod's RAM volume. process_start_time_seconds is
// the agent's too because the alerts read it to tell a young agent.
var (
	managerFamilies = []string{
		"dbtune_scratch_statefulset_writes_total", "dbtune_scratch_targets_injected", "dbtune_scratch_targets_planned_total",
	}
	agentFamilies = []string{
		"dbtune_scratch_volume_used_bytes", "dbtune_scratch_volume_size_bytes", "dbtune_scratch_volume_peak_bytes",
		"dbtune_scratch_volume_full_total", "dbtune_node_probe_write_bytes_per_second", "dbtune_node_probe_read_bytes_per_second",
		"dbtune_node_probe_file_churn_files_per_second", "dbtune_node_probe_temp_file_bytes_per_second",
		"dbtune_node_probe_fdatasync_duration_seconds",
		"dbtune_node_probe_fdatasync_last_run_seconds", "dbtune_node_probe_tmpfs_to_disk_ratio",
		"dbtune_node_probe_tmpfs_speedup_ratio", "dbtune_node_probe_target_info", "dbtune_node_probe_last_run_timestamp_seconds",
		"dbtune_node_probe_last_success_timestamp_seconds", "dbtune_node_probe_last_run_duration_seconds",
		"dbtune_node_probe_runs_total", "process_start_time_seconds",
	}
)

// TestMetricsPassPromtoolCheck lints what the running manager and node agent serve on /metrics with
// `promtool check metrics`, once they have something to say about every part: a ScratchVolume
// injected into a StatefulSet whose pod runs on the agent's node, that pod's RAM volume sampled by
// the agent, and a probe run. The endpoints are plain HTTP on loopback, as the binaries serve them
// (the Deployment and DaemonSet expose them only through their metrics Services).
func TestMetricsPassPromtoolCheck(t *testing.T) {
	s := requireSuite(t)
	promtool := requirePromtool(t)
	t.Parallel()
	if s.tmpfsDir == "" {
		testenv.SkipOrFail(t, "/dev/shm is not available, so the agent's kubelet root is not on tmpfs and it samples no RAM volume")
	}
	ns := s.namespace(t)
	sts := readManifest[appsv1.StatefulSet](t, s.sample(statefulSetSample))
	sts.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: agentNode}
	s.applyStatefulSet(t, ns, writeStatefulSet(t, statefulSetSample, sts))
	sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))
	s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	s.waitRolledOut(t, ns, sts.Name, runsScratchVolume(sv))
	pods := s.mountRAMVolumes(t, ns, sts, sv)
	s.waitProbed(t, nil)

	agent := s.waitScrape(t, s.currentAgent(), agentFamilies, func(fams map[string]*dto.MetricFamily) string {
		for _, pod := range pods {
			if !hasSeries(fams["dbtune_scratch_volume_used_bytes"], map[string]string{"namespace": ns, "pod": pod, "scratchvolume": sv.Name}) {
				return "no dbtune_scratch_volume_used_bytes for pod " + ns + "/" + pod + " yet"
			}
		}
		return ""
	})
	manager := s.waitScrape(t, s.currentManager(), managerFamilies, nil)
	// Both scrapes are clean, the libraries' metrics (controller-runtime, client-go, Go, process)
	// included: a new finding is fixed in the metric's name or help, not excused.
	for name, scrape := range map[string][]byte{"manager": manager, "node agent": agent} {
		for _, f := range lintMetrics(t, promtool, scrape) {
			t.Errorf("promtool check metrics on the %s: %s", name, f)
		}
	}
}

func (s *suite) currentAgent() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agentProc
}

// mountRAMVolumes stands in for the kubelet of the agent's fake node: it creates the RAM volume
// directory of sv in every pod of sts under the agent's kubelet root, which is on tmpfs. It returns
// the pods' names.
func (s *suite) mountRAMVolumes(t *testing.T, ns string, sts *appsv1.StatefulSet, sv *v1alpha1.ScratchVolume) []string {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := s.admin.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Spec.NodeName != agentNode {
			t.Fatalf("pod %s/%s runs on %q, not on the agent's node %s", ns, p.Name, p.Spec.NodeName, agentNode)
		}
		dir := filepath.Join(s.kubeletRoot, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", sv.VolumeName())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(s.kubeletRoot, "pods", string(p.UID))) })
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		t.Fatalf("StatefulSet %s/%s has no pods", ns, sts.Name)
	}
	return names
}

// waitScrape reads p's /metrics until it holds every family of want and check, when given, finds
// nothing missing, and returns that scrape.
func (s *suite) waitScrape(t *testing.T, p *process, want []string, check func(map[string]*dto.MetricFamily) string) []byte {
	t.Helper()
	var scrape []byte
	eventually(t, "the metrics of "+p.Name, func() (bool, string) {
		var err error
		if scrape, err = readMetrics(t, p); err != nil {
			return false, err.Error()
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(scrape))
		if err != nil {
			return false, fmt.Sprintf("unreadable metrics: %v", err)
		}
		for _, name := range want {
			if fams[name] == nil {
				return false, "no " + name + " yet"
			}
		}
		if check != nil {
			if why := check(fams); why != "" {
				return false, why
			}
		}
		return true, ""
	})
	return scrape
}

func readMetrics(t *testing.T, p *process) ([]byte, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+p.metricsAddr+"/metrics", http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to read the metrics of %s: %w", p.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("the metrics of %s: %s", p.Name, resp.Status)
	}
	return body, err
}

// hasSeries reports whether a series of f carries every label of want.
func hasSeries(f *dto.MetricFamily, want map[string]string) bool {
	if f == nil {
		return false
	}
	for _, m := range f.GetMetric() {
		found := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				found++
			}
		}
		if found == len(want) {
			return true
		}
	}
	return false
}

// lintMetrics runs `promtool check metrics` on a scrape and returns its findings, one
// "<metric> <problem>" line each, sorted. promtool exits 3 when it found some.
func lintMetrics(t *testing.T, promtool string, scrape []byte) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &exit) || exit.ExitCode() != 3:
		t.Fatalf("promtool check metrics failed: %v\n%s", err, stderr.Bytes())
	}
	findings := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	slices.Sort(findings)
	return findings
}

// requirePromtool finds promtool, which Debian's prometheus package installs.
func requirePromtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		testenv.SkipOrFail(t, "promtool not found in $PATH: install Debian's prometheus package "+
			"(apt-get install --no-install-recommends prometheus, as .ci/run does), which ships it")
	}
	return path
}
