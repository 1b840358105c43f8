package main

import (
	"flag"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

func TestSetRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		qps       float64
		burst     int
		wantQPS   float32
		wantBurst int
		wantErr   bool
	}{
		{name: "default: no client-side limit", wantQPS: -1},
		{name: "burst ignored without qps", burst: 50, wantQPS: -1},
		{name: "burst defaults to twice the qps", qps: 50, wantQPS: 50, wantBurst: 100},
		{name: "both set", qps: 20, burst: 30, wantQPS: 20, wantBurst: 30},
		{name: "fractional qps keeps a burst of one", qps: 0.2, wantQPS: 0.2, wantBurst: 1},
		{name: "negative qps", qps: -1, wantErr: true},
		{name: "negative burst", qps: 5, burst: -1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &rest.Config{QPS: 5, Burst: 10}
			err := setRateLimit(cfg, tc.qps, tc.burst)
			if (err != nil) != tc.wantErr {
				t.Fatalf("setRateLimit(%g, %d) error = %v, want error %v", tc.qps, tc.burst, err, tc.wantErr)
			}
			if !tc.wantErr && (cfg.QPS != tc.wantQPS || cfg.Burst != tc.wantBurst) {
				t.Errorf("setRateLimit(%g, %d) = qps %g, burst %d; want %g, %d", tc.qps, tc.burst, cfg.QPS, cfg.Burst, tc.wantQPS, tc.wantBurst)
			}
		})
	}
}

// The profiling endpoint and the resync period reach the manager only when asked for.
func TestManagerOptionsFromFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantPprof  string
		wantResync time.Duration // 0: controller-runtime's default
	}{
		{name: "defaults: no profiles, default resync"},
		{name: "profiles served where asked", args: []string{"--pprof-bind-address=127.0.0.1:6060"}, wantPprof: "127.0.0.1:6060"},
		{name: "resync period", args: []string{"--sync-period=3m"}, wantResync: 3 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			opts := options{}
			bindFlags(fs, &opts)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("Parse(%q): %v", tc.args, err)
			}
			o := managerOptions(runtime.NewScheme(), opts)
			if o.PprofBindAddress != tc.wantPprof {
				t.Errorf("PprofBindAddress with %q = %q, want %q", tc.args, o.PprofBindAddress, tc.wantPprof)
			}
			var resync time.Duration
			if o.Cache.SyncPeriod != nil {
				resync = *o.Cache.SyncPeriod
			}
			if resync != tc.wantResync {
				t.Errorf("Cache.SyncPeriod with %q = %s, want %s", tc.args, resync, tc.wantResync)
			}
		})
	}
}
