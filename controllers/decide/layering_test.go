package decide_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/test/testenv"
)

const module = "github.com/dbtune/scratch-operator/"

// layers ranks the controller's packages: each imports only packages of a lower rank, so imports
// run one way, from the I/O layer through the remembered state to the decisions and the pure
// generators under them.
var layers = map[string]int{
	module + "controllers":            4, // the I/O layer: reads, writes, Events, status
	module + "controllers/fleetcache": 3, // what the I/O layer keeps between reconciles
	module + "controllers/decide":     2, // the decisions, with no client
	module + "controllers/inject":     1, // a pod template's entries
	module + "controllers/mysql":      0, // a server's options and drop-in
	module + "controllers/capacity":   0, // sizing from measured use
}

// TestImportsRunOneWay fails when a controller package imports one of its own rank or above: the
// decision layer reaching back to the I/O layer or to the state it keeps, or a generator to a
// decision.
func TestImportsRunOneWay(t *testing.T) {
	imports := listImports(t, "./controllers/...")
	seen := 0
	for pkg, rank := range layers {
		deps, ok := imports[pkg]
		if !ok {
			t.Errorf("go list does not name %s: the layering test would check nothing of it", pkg)
			continue
		}
		seen++
		for _, dep := range deps {
			if r, layered := layers[dep]; layered && r >= rank {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports run from the I/O layer down only", pkg, rank, dep, r)
			}
		}
	}
	if seen != len(layers) {
		t.Errorf("%d of %d layered packages listed", seen, len(layers))
	}
}

// TestDecisionsNeedNoClient fails when the decision layer, or a package it stands on, links a
// client, a cache, a metric or the I/O layer: a decision is a function of what was read, testable
// without an API server.
func TestDecisionsNeedNoClient(t *testing.T) {
	deps := listDeps(t, module+"controllers/decide")
	if len(deps) < 10 {
		t.Fatalf("go list -deps names %d packages; the check would see nothing", len(deps))
	}
	for _, dep := range deps {
		for _, forbidden := range []string{"sigs.k8s.io/controller-runtime", "github.com/prometheus/", module + "controllers/fleetcache"} {
			if strings.HasPrefix(dep, forbidden) {
				t.Errorf("package decide depends on %s", dep)
			}
		}
		if dep == module+"controllers" {
			t.Errorf("package decide depends on the I/O layer %s", dep)
		}
	}
	for _, dep := range listImports(t, module+"controllers/decide")[module+"controllers/decide"] {
		if strings.HasPrefix(dep, "k8s.io/client-go") {
			t.Errorf("package decide imports %s", dep)
		}
	}
}

// listImports maps each package pattern matches to its direct imports.
func listImports(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	out := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pattern)
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			m[f[0]] = f[1:]
		}
	}
	return m
}

// listDeps lists every package pkg depends on, itself included.
func listDeps(t *testing.T, pkg string) []string {
	t.Helper()
	return strings.Fields(goList(t, "-deps", "-f", "{{.ImportPath}}", pkg))
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return string(out)
}
