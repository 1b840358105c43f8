package cli_test

import (
	"flag"
	"testing"

	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/node-agent/probe"
)

func TestSplitNamed(t *testing.T) {
	tests := []struct {
		in   string
		want cli.Named
	}{
		{"/dev/shm", cli.Named{Value: "/dev/shm"}},
		{"tmpfs=/dev/shm", cli.Named{Name: "tmpfs", Value: "/dev/shm"}},
		{"/data/a=b", cli.Named{Value: "/data/a=b"}},
		{"=/x", cli.Named{Value: "=/x"}},
		{"disk=", cli.Named{Name: "disk"}},
	}
	for _, tt := range tests {
		if got := cli.SplitNamed(tt.in); got != tt.want {
			t.Errorf("cli.SplitNamed(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"5000": 5000, "5M": 5_000_000, "128Mi": 128 << 20, "1Gi": 1 << 30, "512Ki": 512 << 10} {
		if got, err := cli.ParseBytes(in); err != nil || got != want {
			t.Errorf("cli.ParseBytes(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5", "1m", "lots"} {
		if got, err := cli.ParseBytes(in); err == nil {
			t.Errorf("cli.ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestTempFilesReplaceTheDefaultsThenAppend(t *testing.T) {
	o := probe.DefaultOptions()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cli.TempFiles(fs, &o, "workloads")
	if got := fs.Lookup("temp-files").DefValue; got != "4194304:32,20971520:8" {
		t.Errorf("default --temp-files = %q", got)
	}
	if err := fs.Parse([]string{"--temp-files", "1Mi:4", "--temp-files", "64Mi:2"}); err != nil {
		t.Fatal(err)
	}
	want := []probe.TempFileSize{{FileBytes: 1 << 20, Files: 4}, {FileBytes: 64 << 20, Files: 2}}
	if len(o.TempFiles) != 2 || o.TempFiles[0] != want[0] || o.TempFiles[1] != want[1] {
		t.Errorf("temp files = %+v, want %+v", o.TempFiles, want)
	}
	if len(o.Churn) != len(probe.DefaultOptions().Churn) {
		t.Errorf("--temp-files changed the churn workloads: %+v", o.Churn)
	}
	for _, bad := range []string{"4Mi", "4Mi:0", "x:1", "-4Mi:1"} {
		if err := fs.Parse([]string{"--temp-files", bad}); err == nil {
			t.Errorf("--temp-files %s: want an error", bad)
		}
	}
}

func TestChurnReplacesTheDefaultsThenAppends(t *testing.T) {
	o := probe.DefaultOptions()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cli.Churn(fs, &o, "workloads")
	if err := fs.Parse([]string{"--churn", "5000:10", "--churn", "5M:2"}); err != nil {
		t.Fatal(err)
	}
	want := []probe.ChurnSize{{FileBytes: 5000, Files: 10}, {FileBytes: 5_000_000, Files: 2}}
	if len(o.Churn) != 2 || o.Churn[0] != want[0] || o.Churn[1] != want[1] {
		t.Errorf("churn = %+v, want %+v", o.Churn, want)
	}
	for _, bad := range []string{"5000", "5000:0", "x:1"} {
		if err := fs.Parse([]string{"--churn", bad}); err == nil {
			t.Errorf("--churn %s: want an error", bad)
		}
	}
}
