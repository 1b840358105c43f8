package readaheadcmd_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dbtune/scratch-operator/node-agent/cmd/readaheadcmd"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

var update = flag.Bool("update", false, "rewrite the golden report")

type result struct {
	code           int
	stdout, stderr string
}

func run(args ...string) result {
	var stdout, stderr bytes.Buffer
	code := readaheadcmd.Run(context.Background(), args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestGetOnFixture(t *testing.T) {
	root := readaheadtest.Fixture(t, "lvm").Root
	tests := map[string]string{
		"dm-1":                 "dm-1: 8192 sectors (4096 KiB)\n",
		"/dev/dm-1":            "dm-1: 8192 sectors (4096 KiB)\n",
		"/dev/mapper/vg-mysql": "dm-1: 8192 sectors (4096 KiB)\n",
		"sda2":                 "sda2 is a partition of sda; read-ahead belongs to the disk\nsda: 256 sectors (128 KiB)\n",
	}
	for device, want := range tests {
		got := run("get", "-root", root, device)
		if diff := cmp.Diff(result{stdout: want}, got, cmp.AllowUnexported(result{})); diff != "" {
			t.Errorf("get %s mismatch (-want +got):\n%s", device, diff)
		}
	}
}

func TestSetOnFixture(t *testing.T) {
	root := readaheadtest.Fixture(t, "lvm").Root
	got := run("set", "dm-1", "131072", "-root", root, "-via", "sysfs")
	want := result{stdout: "dm-1: 4096 KiB -> 131072 KiB; kernel kept 131072 KiB (262144 sectors)\n"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("set mismatch (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(root, "sys", "block", "dm-1", "queue", "read_ahead_kb"))
	if err != nil || strings.TrimSpace(string(b)) != "131072" {
		t.Errorf("queue/read_ahead_kb = %q, %v; want 131072", b, err)
	}
}

func TestReportOnFixture(t *testing.T) {
	for _, fixture := range readaheadtest.Fixtures() {
		t.Run(fixture, func(t *testing.T) {
			got := run("report", "-root", readaheadtest.Fixture(t, fixture).Root)
			if got.code != 0 || got.stderr != "" {
				t.Fatalf("report = %+v", got)
			}
			golden := filepath.Join("testdata", "report-"+fixture+".txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got.stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got.stdout); diff != "" {
				t.Errorf("report mismatch with %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	root := readaheadtest.Fixture(t, "lvm").Root
	tests := []struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		{nil, 2, "Usage: readahead COMMAND"},
		{[]string{"frobnicate"}, 2, `readahead: unknown command "frobnicate" (want get, set or report)`},
		{[]string{"get"}, 2, "readahead get: missing arguments\nRun 'readahead help' for usage."},
		{[]string{"get", "sda", "sdb"}, 2, "readahead get: unexpected arguments: sdb"},
		{[]string{"set", "sda"}, 2, "readahead set: missing arguments"},
		{[]string{"set", "sda", "lots", "-root", root}, 2, `readahead set: KiB must be a whole number from 0 to 1048576, not "lots"`},
		{[]string{"set", "sda", "2000000", "-root", root}, 2, `readahead set: KiB must be a whole number from 0 to 1048576, not "2000000"`},
		{[]string{"get", "-via", "magic", "sda"}, 2, `readahead get: -via "magic": want ioctl, sysfs or auto`},
		{[]string{"get", "-verbose", "sda"}, 2, "readahead get: flag provided but not defined: -verbose"},
		{[]string{"get", "-root", root, "sdz"}, 1, `readahead get: no block device "sdz" on this host ('readahead report' lists them)`},
		{[]string{"get", "-root", root, "/dev/mapper/vg-nothing"}, 1, `readahead get: no block device "/dev/mapper/vg-nothing"`},
		{[]string{"report", "-root", t.TempDir()}, 1, "readahead report: failed to find block devices"},
		{[]string{"report", "extra"}, 2, "readahead report: unexpected arguments: extra"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := run(tt.args...)
			if got.code != tt.wantCode || !strings.Contains(got.stderr, tt.wantStderr) || got.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and stderr containing %q", got.code, got.stdout, got.stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"get", "-h"}} {
		got := run(args...)
		if got.code != 0 || !strings.Contains(got.stdout, "Usage: readahead COMMAND") || got.stderr != "" {
			t.Errorf("%v: %+v, want usage on stdout and exit 0", args, got)
		}
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := readaheadcmd.Run(ctx, []string{"report", "-root", readaheadtest.Fixture(t, "vm").Root}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "context canceled") {
		t.Errorf("exit %d, stderr %q; want 1 and the cancellation", code, stderr.String())
	}
}

func TestSetOnRealLoopDevice(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skip("expectations assume 4 KiB pages")
	}
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{Partitioned: true})
	for _, via := range []string{"ioctl", "sysfs", "auto"} {
		if got := run("set", "-via", via, l.Name, "512"); got.code != 0 {
			t.Fatalf("set %s 512: %+v", l.Name, got)
		}
		got := run("set", "-via", via, "/dev/"+l.Partition, "130")
		want := result{stdout: fmt.Sprintf("%s is a partition of %s; read-ahead belongs to the disk\n"+
			"%s: 512 KiB -> 130 KiB; kernel kept 128 KiB (256 sectors), rounded down to whole 4 KiB pages\n", l.Partition, l.Name, l.Name)}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(result{})); diff != "" {
			t.Errorf("-via %s: set mismatch (-want +got):\n%s", via, diff)
		}
		got = run("get", "-via", via, l.Name)
		if want := (result{stdout: l.Name + ": 256 sectors (128 KiB)\n"}); got != want {
			t.Errorf("-via %s: get = %+v, want %+v", via, got, want)
		}
	}
	report := run("report")
	if !strings.Contains(report.stdout, l.Partition+" ") || !strings.Contains(report.stdout, "partition of "+l.Name) {
		t.Errorf("report does not show %s as a partition of %s:\n%s", l.Partition, l.Name, report.stdout)
	}
}
