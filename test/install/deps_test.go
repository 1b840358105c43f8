package install_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestBinariesShareOnlyTheAPI keeps the manager and the node agent apart: each binary links the
// API packages and its own, never the other's, so a change on one side cannot reach into the
// other's image or privileges. The kubectl plugin links neither: it is a client of the API alone.
func TestBinariesShareOnlyTheAPI(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/dbtune/scratch-operator/"
	for _, tt := range []struct {
		binary    string
		forbidden []string
	}{
		{binary: ".", forbidden: []string{module + "node-agent/"}},
		{binary: "./node-agent", forbidden: []string{module + "controllers"}},
		{binary: "./api/kubectl-dbtune", forbidden: []string{module + "controllers", module + "node-agent/"}},
	} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", tt.binary)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.binary, err)
		}
		ours := 0
		for _, pkg := range strings.Fields(string(out)) {
			if strings.HasPrefix(pkg, module) {
				ours++
			}
			for _, forbidden := range tt.forbidden {
				if strings.HasPrefix(pkg, forbidden) {
					t.Errorf("%s links %s", tt.binary, pkg)
				}
			}
		}
		if ours < 3 {
			t.Errorf("go list -deps %s names %d of the project's packages; the check would see nothing", tt.binary, ours)
		}
	}
}
