package main

import (
	"testing"

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
