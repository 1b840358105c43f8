package install_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// The alerts ship inside a PrometheusRule (config/prometheus) and, as a copy the chart renders,
// in the Helm chart's files/. promtool reads a plain rules file: their spec.groups.
var (
	shippedRules = []string{"config", "prometheus", "prometheusrule.yaml"}
	chartRules   = []string{"config", "helm", "dbtune-scratch-operator", "files", "prometheusrule.yaml"}
)

// alertTestsDir holds the promtool unit tests of the alerts; each names rules.yaml as its rule file.
var alertTestsDir = []string{"test", "install", "testdata", "prometheus"}

// TestAlertRulesPassPromtoolCheck runs `promtool check rules` (syntax, PromQL, templates, duplicate
// rules) on the alerts of the PrometheusRule and of the Helm chart, which must be the same.
func TestAlertRulesPassPromtoolCheck(t *testing.T) {
	promtool := requirePromtool(t)
	shipped := ruleGroups(t, shippedRules...)
	if diff := cmp.Diff(shipped, ruleGroups(t, chartRules...)); diff != "" {
		t.Errorf("the Helm chart's alerts differ from config/prometheus's (-config +chart); run `make chart-files`:\n%s", diff)
	}
	rules := writeRules(t, t.TempDir(), shipped)
	out := runPromtool(t, promtool, "check", "rules", rules)
	want := fmt.Sprintf("SUCCESS: %d rules found", len(alertNames(t, shipped)))
	if !strings.Contains(out, want) {
		t.Errorf("promtool check rules did not report %q:\n%s", want, out)
	}
}

// TestAlertsUnderPromtool runs the promtool unit tests of testdata/prometheus against the shipped
// alerts: each alert fires on the series that should trigger it, with its labels and annotations,
// and stays silent on near misses. Every alert must be covered both ways.
func TestAlertsUnderPromtool(t *testing.T) {
	promtool := requirePromtool(t)
	dir := t.TempDir()
	groups := ruleGroups(t, shippedRules...)
	writeRules(t, dir, groups)
	tests, err := filepath.Glob(repoPath(t, append(alertTestsDir, "*_test.yaml")...))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool unit tests in %s (glob: %v)", filepath.Join(alertTestsDir...), err)
	}
	args := []string{"test", "rules"}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, src := range tests {
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		covered(t, src, raw, fires, silent)
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(dst, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, dst)
	}
	runPromtool(t, promtool, args...)
	for _, name := range alertNames(t, groups) {
		if !fires[name] {
			t.Errorf("no promtool unit test makes alert %s fire", name)
		}
		if !silent[name] {
			t.Errorf("no promtool unit test checks that alert %s stays silent", name)
		}
	}
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

// runPromtool runs promtool and returns its output, failing t when it exits with an error.
func runPromtool(t *testing.T, promtool string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), promtool, args...)
	cmd.Dir = filepath.Dir(args[len(args)-1])
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("promtool %s failed (exit status %d):\n%s", strings.Join(args[:2], " "), exit.ExitCode(), out)
	case err != nil:
		t.Fatalf("failed to run promtool: %v", err)
	}
	return string(out)
}

// ruleGroups reads spec.groups of the PrometheusRule at the path under the repository root.
func ruleGroups(t *testing.T, path ...string) []any {
	t.Helper()
	raw, err := os.ReadFile(repoPath(t, path...))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatalf("%s: %v", filepath.Join(path...), err)
	}
	if rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		t.Fatalf("%s: want a PrometheusRule with groups, got kind %q with %d groups", filepath.Join(path...), rule.Kind, len(rule.Spec.Groups))
	}
	return rule.Spec.Groups
}

// writeRules writes groups as the rules file rules.yaml in dir and returns its path.
func writeRules(t *testing.T, dir string, groups []any) string {
	t.Helper()
	raw, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// alertNames lists the alerts of groups.
func alertNames(t *testing.T, groups []any) []string {
	t.Helper()
	raw, err := yaml.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	var gs []struct {
		Rules []struct {
			Alert string `json:"alert"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal(raw, &gs); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range gs {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	return names
}

// covered records which alerts a promtool unit test file expects to fire (an evaluation with
// alerts) and to stay silent (one without). It also checks that the file reads the rules the test
// writes, so that it cannot test a stale copy.
func covered(t *testing.T, path string, raw []byte, fires, silent map[string]bool) {
	t.Helper()
	var file struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			AlertRuleTests []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !slices.Equal(file.RuleFiles, []string{"rules.yaml"}) {
		t.Errorf("%s: rule_files is %q, want [rules.yaml], the rules this test extracts", path, file.RuleFiles)
	}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
}
