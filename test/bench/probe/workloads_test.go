package main

import (
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

func TestSize(t *testing.T) {
	tests := map[int64]string{128 * probe.MiB: "128M", 512 * probe.KiB: "512k", probe.GiB: "1G", 2300: "2300", 4600000: "4600000"}
	for n, want := range tests {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}

// The references must use the parameters the agent reports with, or the comparison checks
// something the agent never measures.
func TestReferencesUseTheDefaults(t *testing.T) {
	d := probe.DefaultOptions()
	tgt := &Target{Name: "disk", Path: "/data", Kind: probe.KindDisk, RefDir: "/data/ref"}
	commands := map[string]string{}
	for _, s := range buildSeries(tgt, "/dev/loop7") {
		for _, r := range s.References {
			commands[s.ID+" "+strings.Join(r.Provides, ",")] = r.Command
		}
	}
	want := map[string][]string{
		"seq-write/fio seq-buffered":                {"--bs=" + size(d.SeqWriteBlockBytes), "--size=" + size(d.SeqWriteBytes), "--rw=write"},
		"seq-write/fio seq-fdatasync":               {"--end_fsync=1"},
		"seq-write/dd seq-fdatasync":                {"bs=128M", "count=2", "conv=fdatasync"},
		"direct-write/fio direct-write":             {"--direct=1", "--bs=512k", "--size=64M"},
		"direct-write/dd direct-write":              {"oflag=direct", "bs=512k", "count=128"},
		"cold-read/fio cold-read":                   {"--rw=read", "--bs=1M", "--invalidate=1", "--fadvise_hint=0"},
		"fdatasync/fio fdatasync-p50,fdatasync-p99": {"--bs=2300", "--fdatasync=1", "--size=4600000"},
		"device-read/hdparm device-read":            {"hdparm -t /dev/loop7"},
		"device-read/fio device-read":               {"--filename=/dev/loop7", "--bs=2M", "--readonly"},
	}
	for key, parts := range want {
		cmd, ok := commands[key]
		if !ok {
			t.Errorf("no reference %q", key)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(cmd, p) {
				t.Errorf("reference %q runs %q, which lacks %q", key, cmd, p)
			}
		}
	}
	for _, c := range d.Churn {
		key := "churn-" + itoa(c.FileBytes) + "/go-syscall-loop " + churnMetric(c, "create") + "," + churnMetric(c, "read-unlink")
		if _, ok := commands[key]; !ok {
			t.Errorf("no churn reference %q", key)
		}
	}
}

func TestNoDeviceNoDeviceSeries(t *testing.T) {
	for _, s := range buildSeries(&Target{Name: "tmpfs", Path: "/t", Kind: probe.KindTmpfs, RefDir: "/t/ref"}, "") {
		if strings.HasPrefix(s.ID, "device-read") {
			t.Errorf("series %s without a device", s.ID)
		}
	}
}

func TestSelected(t *testing.T) {
	tests := []struct {
		only, id string
		want     bool
	}{
		{"", "cold-read/fio", true},
		{"cold-read", "cold-read/fio", true},
		{"fdatasync, device-read/hdparm", "device-read/hdparm", true},
		{"fdatasync, device-read/hdparm", "device-read/fio", false},
		{"churn-5000/", "churn-5000000/go-os-loop", false},
	}
	for _, tt := range tests {
		if got := selected(tt.only, tt.id); got != tt.want {
			t.Errorf("selected(%q, %q) = %v, want %v", tt.only, tt.id, got, tt.want)
		}
	}
}

func TestParseFlagsRejectsTooFewRounds(t *testing.T) {
	if _, err := parseFlags([]string{"--runs", "2"}, &strings.Builder{}); err == nil {
		t.Error("--runs 2 was accepted; a median of two is an average")
	}
	cfg, err := parseFlags(nil, &strings.Builder{})
	if err != nil || cfg.runs != 5 || !cfg.cost {
		t.Errorf("defaults = %+v, %v; want 5 rounds with the cost measured", cfg, err)
	}
}
