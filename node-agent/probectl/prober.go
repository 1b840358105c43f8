package probectl

import (
	"context"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Prober runs the I/O probes on the host. The agent calls it only while it holds a probe slot,
// and never two calls at once.
type Prober interface {
	Probe(ctx context.Context, targets []probe.Target, opts probe.Options) (*probe.Result, error)
}

// ProberFunc lets a function be a Prober.
type ProberFunc func(ctx context.Context, targets []probe.Target, opts probe.Options) (*probe.Result, error)

// Probe calls f.
func (f ProberFunc) Probe(ctx context.Context, targets []probe.Target, opts probe.Options) (*probe.Result, error) {
	return f(ctx, targets, opts)
}

// HostProber measures the node's real filesystems and devices with probe.Run.
var HostProber Prober = ProberFunc(probe.Run)
