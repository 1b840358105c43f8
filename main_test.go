package main

import (
	"flag"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/dbtune/scratch-operator/controllers/fleetcache"
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
			o := managerOptions(runtime.NewScheme(), opts, &fleetcache.Informers{})
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

// The leader election's timings reach the manager, and ones client-go would refuse are refused with
// the flags' names.
func TestLeaderElectionTimings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		lease   time.Duration
		wantErr string
	}{
		{name: "controller-runtime's defaults", lease: 15 * time.Second},
		{name: "a faster takeover", args: []string{"--leader-election-lease-duration=8s", "--leader-election-renew-deadline=6s", "--leader-election-retry-period=1s"}, lease: 8 * time.Second},
		{name: "renew deadline not below the lease", args: []string{"--leader-election-lease-duration=10s"}, wantErr: "--leader-election-lease-duration (10s) must be longer than --leader-election-renew-deadline (10s)"},
		{name: "retry period too close to the renew deadline", args: []string{"--leader-election-retry-period=9s"}, wantErr: "must be longer than 1.2 times --leader-election-retry-period (9s)"},
		{name: "no retry period", args: []string{"--leader-election-retry-period=0s"}, wantErr: "--leader-election-retry-period must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			opts := options{}
			bindFlags(fs, &opts)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := checkLeaderElection(opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("checkLeaderElection(%q) = %v, want an error saying %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o := managerOptions(runtime.NewScheme(), opts, &fleetcache.Informers{}); o.LeaseDuration == nil || *o.LeaseDuration != tc.lease {
				t.Errorf("LeaseDuration with %q = %v, want %s", tc.args, o.LeaseDuration, tc.lease)
			}
		})
	}
}

// The manager collects garbage at gcPercent unless GOGC is set, which keeps the runtime's reading
// of it.
func TestCollectSooner(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	if percent, set := collectSooner(func(string) (string, bool) { return "", false }); !set || percent != gcPercent {
		t.Errorf("without GOGC: collectSooner = %d, %v; want %d, true", percent, set, gcPercent)
	}
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC the collector's target is %d, want %d", got, gcPercent)
	}
	for _, env := range []string{"100", "off", ""} {
		if _, set := collectSooner(func(key string) (string, bool) { return env, key == "GOGC" }); set {
			t.Errorf("GOGC=%q: collectSooner set the target", env)
		}
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("GOGC=%q: the collector's target is %d, want the runtime's own (100 here)", env, got)
		}
	}
}
