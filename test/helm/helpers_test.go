package helm_test

import (
	"path/filepath"
	"strconv"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/test/helm"
)

// repoRoot is the repository's root: this module lives two levels below it.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chartDir(t testing.TB) string {
	return filepath.Join(repoRoot(t), helm.ChartDir)
}

func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := helm.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// render renders the chart of the repository with these values.
func render(t testing.TB, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := helm.Render(loadChart(t), vals)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := helm.Kustomize(repoRoot(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// values parses values written as YAML, as a -f file would give them.
func values(t testing.TB, s string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &vals); err != nil {
		t.Fatalf("values %q: %v", s, err)
	}
	return vals
}

// path splits a dotted field path; "\." is a dot inside a name.
func path(s string) []string {
	var parts []string
	cur := ""
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			cur += string(s[i+1])
			i++
		case s[i] == '.':
			parts = append(parts, cur)
			cur = ""
		default:
			cur += string(s[i])
		}
	}
	return append(parts, cur)
}

// field is the value at a path of map keys and list indexes; nil when there is none.
func field(v any, path []string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}
