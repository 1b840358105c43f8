package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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

// fdatasync on tmpfs is a no-op: the benchmark compares it on the disk only, so no ratio of two
// no-ops is ever reported.
func TestFdatasyncComparedOnTheDiskOnly(t *testing.T) {
	for _, tgt := range []*Target{
		{Name: "disk", Path: "/data", Kind: probe.KindDisk, RefDir: "/data/ref"},
		{Name: "tmpfs", Path: "/shm", Kind: probe.KindTmpfs, RefDir: "/shm/ref"},
	} {
		found := false
		for _, s := range buildSeries(tgt, "") {
			for _, m := range s.Metrics {
				found = found || m.ID == mFsyncP50 || m.ID == mFsyncP99
			}
		}
		if want := tgt.Kind == probe.KindDisk; found != want {
			t.Errorf("%s: fdatasync compared %t, want %t", tgt.Name, found, want)
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

// Series that allocate memory by the hundred megabytes inside the timing must be warmed, or the
// hypervisor's free page reporting decides the comparison; and the short ones need more rounds.
func TestSeriesTiming(t *testing.T) {
	want := map[string][2]bool{ // warm, short
		"disk seq-write/fio": {true, false}, "tmpfs seq-write/dd": {false, true},
		"disk cold-read/fio": {true, false}, "tmpfs cold-read/fio": {false, true},
		"disk churn-5000/go-syscall-loop": {false, true}, "disk churn-5000000/go-os-loop": {true, true},
		"tmpfs churn-5000000/go-os-loop": {false, true},
		"disk direct-write/dd":           {false, true}, "disk fdatasync/fio": {false, true},
		"disk device-read/hdparm": {true, false},
	}
	got := map[string][2]bool{}
	for _, tgt := range []*Target{
		{Name: "disk", Path: "/data", Kind: probe.KindDisk, RefDir: "/data/ref"},
		{Name: "tmpfs", Path: "/shm", Kind: probe.KindTmpfs, RefDir: "/shm/ref"},
	} {
		for _, s := range buildSeries(tgt, "/dev/loop7") {
			got[tgt.Name+" "+s.ID] = [2]bool{s.Warm, s.Short}
			if s.Rounds(5) != map[bool]int{false: 5, true: 15}[s.Short] {
				t.Errorf("%s %s: %d rounds for 5, short %t", tgt.Name, s.ID, s.Rounds(5), s.Short)
			}
		}
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: warm, short = %v (present %t), want %v", k, g, ok, w)
		}
	}
}

func TestDDInputOperands(t *testing.T) {
	got := strings.Join(inputOperands([]string{"bs=512k", "count=128", "oflag=direct", "conv=fdatasync"}), " ")
	if got != "bs=512k count=128" {
		t.Errorf("inputOperands = %q, want the block size and count only", got)
	}
}

// dd's net rate leaves out the time dd spends filling its buffer, so it must come out above the
// rate dd printed, and the printed one must be kept.
func TestDDNetOfItsInput(t *testing.T) {
	if _, err := exec.LookPath("dd"); err != nil {
		t.Skip("dd is not installed")
	}
	file := filepath.Join(t.TempDir(), "seq")
	r := ddRunner(file, mSeqBuffered, "bs=8M", "count=4")
	if !strings.Contains(r.Command, "of=/dev/null bs=8M count=4") {
		t.Errorf("command %q does not say how dd's input was timed", r.Command)
	}
	// On a busy machine the copy into /dev/null can take as long as the write, which the runner
	// refuses to turn into a rate; that is right, but it leaves nothing to check here, so try again.
	var f Figures
	var err error
	for range 5 {
		if f, err = r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no net time left") {
			break
		}
		t.Log(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	net, printed := f[mSeqBuffered], f[rawKey(mSeqBuffered)]
	if printed <= 0 || net <= printed {
		t.Errorf("net %.0f B/s, printed %.0f B/s: want 0 < printed < net", net, printed)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("dd's file was left behind: %v", err)
	}
}

func TestParseWarmMemory(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "0Gi": 0, "1Gi": probe.GiB, "512Mi": 512 * probe.MiB} {
		cfg, err := parseFlags([]string{"--warm-memory", in}, &strings.Builder{})
		if err != nil || cfg.warm != want {
			t.Errorf("--warm-memory %s = %v, %v; want %d", in, cfg, err, want)
		}
	}
	for _, in := range []string{"-1Gi", "lots"} {
		var stderr strings.Builder
		if _, err := parseFlags([]string{"--warm-memory", in}, &stderr); err == nil {
			t.Errorf("--warm-memory %s was accepted", in)
		}
	}
}
