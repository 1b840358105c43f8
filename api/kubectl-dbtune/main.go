// Command kubectl-dbtune is the operator's kubectl plugin: the everyday tasks of ScratchVolumes
// without JSONPath. `kubectl dbtune status` shows every ScratchVolume and its targets, `approve`
// lets a pending change through, `explain statefulset/NAME` says what the operator did to a
// StatefulSet and why, `nodes` shows the node agents' measurements and read-ahead.
//
// It is a client of the API alone: it reads and writes with the user's kubeconfig and RBAC, and
// links no package of the manager or the node agent.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version and revision are set at build time with -ldflags "-X main.version=… -X main.revision=…"
// (make plugin).
var version, revision = "dev", ""

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := newRoot(streams).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error: "+err.Error())
		os.Exit(1)
	}
}
