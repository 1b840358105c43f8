package buildinfo_test

import (
	"maps"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbtune/scratch-operator/api/buildinfo"
)

func TestCollectorExportsTheBuild(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(buildinfo.Info{Component: "manager", Version: "v1.2.3", Revision: "0123456789ab"}.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "dbtune_build_info" || len(families[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, want one dbtune_build_info sample", families)
	}
	m := families[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"component": "manager", "version": "v1.2.3", "revision": "0123456789ab", "goversion": runtime.Version()}
	if !maps.Equal(labels, want) || m.GetGauge().GetValue() != 1 {
		t.Errorf("dbtune_build_info%v = %v, want %v = 1", labels, m.GetGauge().GetValue(), want)
	}
}

func TestStringNamesAnUnknownRevision(t *testing.T) {
	for _, tc := range []struct {
		info buildinfo.Info
		want string
	}{
		{buildinfo.Info{Component: "node-agent", Version: "dev"}, "dbtune node-agent dev (revision unknown, " + runtime.Version() + ")"},
		{buildinfo.Info{Component: "manager", Version: "v1.2.3", Revision: "0123456789ab"}, "dbtune manager v1.2.3 (revision 0123456789ab, " + runtime.Version() + ")"},
	} {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
