package v1alpha1_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestKubectlExplain runs the real `kubectl explain scratchvolume.spec` against the API server and
// checks that every field of the spec is listed with its description.
func TestKubectlExplain(t *testing.T) {
	e := testenv.Require(t, env)
	kubectl := testenv.Kubectl(t)
	kubeconfig := e.AdminKubeconfig(t, "explain")
	var err error
	var out []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The CRD's schema reaches the OpenAPI document a moment after the CRD is established.
		out, err = exec.Command(kubectl, "--kubeconfig", kubeconfig, "explain", "scratchvolume.spec").CombinedOutput()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("kubectl explain: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"target\t<Object> -required-", "Target selects the StatefulSets",
		"size\t<Object> -required-", "Size is the capacity of the RAM volume",
		"purpose\t<string>", "Purpose is MySQLTmpdir (default",
		"container\t<string>", "Container is the name of the container",
		"mountPath\t<string>", "MountPath is where the volume appears",
		"mysql\t<Object>", "MySQL tunes how the volume is wired",
		"memory\t<Object>", "Memory says how the volume's memory is accounted",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("kubectl explain scratchvolume.spec lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("kubectl explain output:\n%s", text)
	}
}
