// Package buildinfo describes the build of the manager and the node agent the same way: the
// version and source revision compiled in with -ldflags (make images does it), printed by their
// version command and exported as the dbtune_build_info metric.
package buildinfo

import (
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// Info is one binary's build.
type Info struct {
	// Component is manager or node-agent.
	Component string
	// Version and Revision are what the build set; a plain go build leaves "dev" and "".
	Version, Revision string
}

// String is the version line: "dbtune manager v0.3.0 (revision 1a2b3c4d5e6f, go1.26.0)".
func (i Info) String() string {
	return fmt.Sprintf("dbtune %s %s (revision %s, %s)", i.Component, i.Version, i.revision(), runtime.Version())
}

func (i Info) revision() string {
	if i.Revision == "" {
		return "unknown"
	}
	return i.Revision
}

// Collector is the dbtune_build_info gauge, always 1, whose labels say which build runs: the
// usual way to tell, across a fleet of manager and agent pods, which version each one runs and
// when a rollout of a new one is done.
func (i Info) Collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "dbtune_build_info",
		Help: "The build that runs: always 1, with its component, version, source revision and Go version as labels.",
		ConstLabels: prometheus.Labels{
			"component": i.Component, "version": i.Version, "revision": i.revision(), "goversion": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}
