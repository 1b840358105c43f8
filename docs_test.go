package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// foreignPaths are field paths the docs name that belong to other APIs: the StatefulSets and pods
// the operator edits, and the custom resources of the database operators docs/tuning.md discusses.
var foreignPaths = map[string]bool{
	// Kubernetes
	"spec.template": true, "spec.template.spec.containers[]": true, "spec.volumes": true, "spec.volumeMounts": true,
	"spec.containers": true, "spec.initContainers": true,
	"spec.nodeSelector": true, "spec.holderIdentity": true, "spec.podSpec": true, "spec.force": true,
	// The pod-level resources of a pod (KEP-2837).
	"spec.resources": true,
	// Percona XtraDB Cluster, mariadb-operator, MOCO, Oracle MySQL Operator
	"spec.pxc.sidecarVolumes": true, "spec.pxc.configuration": true, "spec.mysql.sidecarVolumes": true,
	"spec.mysql.configuration": true, "spec.myCnf": true, "spec.myCnfConfigMapKeyRef": true, "spec.mycnf": true,
	"spec.mysqlConfigMapName": true, "spec.podTemplate.spec.volumes": true, "spec.podTemplate.spec.containers": true,
	// A file of the controllers package.
	"status.go": true,
}

// TestDocsNamesMatchTheCode keeps the names the README and docs/ use equal to the code's: every
// spec. or status. field path is one of the CRDs' (or a listed field of another API), and every
// dbtune.io annotation, label or finalizer is one the api package declares.
func TestDocsNamesMatchTheCode(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, "README.md")
	paths := crdPaths(t)
	names := apiNames(t)
	pathRE := regexp.MustCompile(`\b(?:spec|status)\.[a-zA-Z][a-zA-Z0-9]*(?:\[\]|\.[a-zA-Z][a-zA-Z0-9]*)*`)
	nameRE := regexp.MustCompile(`(?:^|[^a-zA-Z0-9.-])((?:state\.scratch\.|scratch\.)?dbtune\.io/(?:<[^<>]+>|[a-zA-Z0-9_-]+(?:\.[a-zA-Z0-9_-]+)*))`)
	seenPaths, seenNames := 0, 0
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			for _, p := range pathRE.FindAllString(line, -1) {
				seenPaths++
				if !paths[p] && !foreignPaths[p] {
					t.Errorf("%s:%d names %s, which no CRD of this project has (if it belongs to another API, add it to foreignPaths)", doc, i+1, p)
				}
			}
			for _, m := range nameRE.FindAllStringSubmatch(line, -1) {
				seenNames++
				if n := m[1]; !knownName(n, names) {
					t.Errorf("%s:%d names %s, which is no annotation, label, finalizer or group version the api package declares", doc, i+1, n)
				}
			}
		}
	}
	if seenPaths < 50 || seenNames < 10 {
		t.Fatalf("found %d field paths and %d names in the docs: the patterns no longer match them", seenPaths, seenNames)
	}
}

// knownName says whether n is one of names, or a prefix among them followed by a placeholder such
// as <name> or by a ScratchVolume's name, as a real output shows it.
func knownName(n string, names []string) bool {
	for _, k := range names {
		if n == k {
			return true
		}
		if rest, ok := strings.CutPrefix(n, k); ok && strings.HasSuffix(k, "/") &&
			(strings.HasPrefix(rest, "<") && strings.HasSuffix(rest, ">") || objectName.MatchString(rest)) {
			return true
		}
	}
	return false
}

// objectName is a ScratchVolume's name, as the pod-template annotations carry it.
var objectName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// apiNames are the string constants of the api package that hold "dbtune.io", and its group
// version.
func apiNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("api/v1alpha1/*.go")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"dbtune.io/v1alpha1"}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, "dbtune.io/") && !strings.ContainsAny(s, " \n") {
					names = append(names, s)
				}
			}
			return true
		})
	}
	if len(names) < 8 {
		t.Fatalf("found %d names in api/v1alpha1: %v", len(names), names)
	}
	return names
}

// crdPaths are every field path of the CRDs' schemas under spec and status: "spec.target.name",
// "status.targets[].usage" and the objects above them.
func crdPaths(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	paths := map[string]bool{}
	var walk func(prefix string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(prefix string, s *apiextensionsv1.JSONSchemaProps) {
		paths[prefix] = true
		for name, p := range s.Properties {
			walk(prefix+"."+name, &p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(prefix+"[]", s.Items.Schema)
		}
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			for _, root := range []string{"spec", "status"} {
				if s, ok := v.Schema.OpenAPIV3Schema.Properties[root]; ok {
					walk(root, &s)
				}
			}
		}
	}
	if !paths["spec.mysql.injection"] || !paths["status.targets[].usage"] {
		t.Fatalf("the CRDs' schemas gave no spec.mysql.injection or status.targets[].usage: %d paths", len(paths))
	}
	return paths
}

// refusedValues are Helm values the docs name on purpose as ones the chart's schema refuses.
var refusedValues = map[string]bool{"replicaCount": true}

// TestDocsMakeTargetsAndHelmValuesExist keeps the commands the README and docs/ give equal to the
// Makefile and the chart: every `make TARGET` in a code span or a code block names a target of the
// Makefile, and every Helm value they name (`--set key=…`, or a code span that starts with one of
// the chart's top-level keys) is a key of the chart's values.yaml.
func TestDocsMakeTargetsAndHelmValuesExist(t *testing.T) {
	targets := makeTargets(t)
	values := helmValuePaths(t)
	topLevel := map[string]bool{}
	for p := range values {
		top, _, _ := strings.Cut(p, ".")
		topLevel[top] = true
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	setRE := regexp.MustCompile(`--set ([a-zA-Z][a-zA-Z0-9.]*)=`)
	spanRE := regexp.MustCompile("`([^`]+)`")
	keyRE := regexp.MustCompile(`^([a-z][a-zA-Z]*)(\.[a-zA-Z][a-zA-Z0-9]*)+$`)
	seenTargets, seenValues := 0, 0
	for _, doc := range append(docs, "README.md") {
		for _, cmd := range commandLines(t, doc) {
			for _, target := range makeInvocation(cmd.text) {
				seenTargets++
				if !targets[target] {
					t.Errorf("%s:%d runs make %s, which the Makefile has no target for", doc, cmd.line, target)
				}
			}
		}
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			var keys []string
			for _, m := range setRE.FindAllStringSubmatch(line, -1) {
				keys = append(keys, m[1])
			}
			for _, m := range spanRE.FindAllStringSubmatch(line, -1) {
				if k := m[1]; keyRE.MatchString(k) && topLevel[strings.SplitN(k, ".", 2)[0]] {
					keys = append(keys, k)
				}
			}
			for _, k := range keys {
				seenValues++
				if !values[k] && !refusedValues[k] {
					t.Errorf("%s:%d names the Helm value %s, which the chart's values.yaml does not have", doc, i+1, k)
				}
			}
		}
	}
	if seenTargets < 10 || seenValues < 10 {
		t.Fatalf("found %d make targets and %d Helm values in the docs: the patterns no longer match them", seenTargets, seenValues)
	}
}

// commandLine is a line of a doc that holds a command: a line of a code block, or a code span.
type commandLine struct {
	line int
	text string
}

// commandLines returns the lines of doc's code blocks and the code spans of its other lines.
func commandLines(t *testing.T, doc string) []commandLine {
	t.Helper()
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out []commandLine
	inBlock := false
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			out = append(out, commandLine{i + 1, strings.TrimSpace(line)})
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
			out = append(out, commandLine{i + 1, m[1]})
		}
	}
	return out
}

// makeInvocation returns the targets a command line gives make: the words after "make" up to the
// first variable assignment, option or comment.
func makeInvocation(cmd string) []string {
	rest, ok := strings.CutPrefix(cmd, "make ")
	if !ok {
		return nil
	}
	// A shell operator ends the make command: what follows is another command.
	if i := strings.IndexAny(rest, "&|;#"); i >= 0 {
		rest = rest[:i]
	}
	var targets []string
	for _, w := range strings.Fields(rest) {
		if strings.ContainsAny(w, "=#-") && !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(w) || strings.HasPrefix(w, "-") {
			break
		}
		targets = append(targets, w)
	}
	return targets
}

// makeTargets are the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = true
	}
	if !out["test"] || !out["demo"] || !out["images"] {
		t.Fatalf("found no test, demo or images target in the Makefile: %v", out)
	}
	return out
}

// helmValuePaths are every key path of the chart's values.yaml: "manager.image.repository" and the
// maps above it.
func helmValuePaths(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("config/helm/dbtune-scratch-operator/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := strings.TrimPrefix(prefix+"."+k, ".")
			out[p] = true
			if sub, ok := v.(map[string]any); ok {
				walk(p, sub)
			}
		}
	}
	walk("", values)
	if !out["manager.image.repository"] || !out["nodeAgent.image.repository"] {
		t.Fatalf("values.yaml has no manager.image.repository or nodeAgent.image.repository: %d keys", len(out))
	}
	return out
}

func TestMakeInvocation(t *testing.T) {
	for cmd, want := range map[string]string{
		"make test":                                   "test",
		"make generate manifests docs-api":            "generate manifests docs-api",
		"make chart VERSION=v0.1.0":                   "chart",
		"make plugin && install bin/kubectl-dbtune /": "plugin",
		"make demo; make demo-down":                   "demo",
		"make bench-scale # about an hour":            "bench-scale",
		"make -C hack images":                         "",
		"go run . make test":                          "",
	} {
		if got := strings.Join(makeInvocation(cmd), " "); got != want {
			t.Errorf("makeInvocation(%q) = %q, want %q", cmd, got, want)
		}
	}
}
