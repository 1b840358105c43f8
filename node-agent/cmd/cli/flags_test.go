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
