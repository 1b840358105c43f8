package readaheadctl

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// readAheadBytes is served on the manager's metrics endpoint. Its unit is bytes, as Prometheus
// prefers base units, while the kernel and the API count KiB.
var readAheadBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "dbtune_node_read_ahead_bytes",
	Help: "Read-ahead of each block device a ReadAheadPolicy selects on this node, in bytes, as read after the last pass.",
}, []string{"device"})

func init() {
	metrics.Registry.MustRegister(readAheadBytes)
}

// exportMetrics sets the gauge for every reported device with a known value and drops the
// series of devices no longer reported, so that a restored disk stops claiming a policy's value.
func (r *nodeReconciler) exportMetrics(devices []v1alpha1.DeviceReadAheadStatus) {
	seen := make(map[string]bool, len(devices))
	for _, d := range devices {
		if d.CurrentKiB == nil {
			continue
		}
		readAheadBytes.WithLabelValues(d.Device).Set(float64(*d.CurrentKiB * 1024))
		seen[d.Device] = true
	}
	for device := range r.exported {
		if !seen[device] {
			readAheadBytes.DeleteLabelValues(device)
		}
	}
	r.exported = seen
}
