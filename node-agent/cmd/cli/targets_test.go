package cli_test

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestAttachDevices checks the one --device rule of `probe` and `run` on real directories: one
// on a tmpfs (/dev/shm) and one on the disk that holds the test's working directory.
func TestAttachDevices(t *testing.T) {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		testenv.SkipOrFail(t, "/dev/shm is not a tmpfs here: the rule needs a tmpfs target beside a disk one")
	}
	tmpfs, err := os.MkdirTemp("/dev/shm", "attach-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmpfs) })
	if err := unix.Statfs(".", &st); err != nil || st.Type == unix.TMPFS_MAGIC {
		testenv.SkipOrFail(t, "the working directory is not on a disk")
	}
	disk, err := os.MkdirTemp(".", "attach-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(disk) })

	tests := []struct {
		name    string
		targets []probe.Target
		devices []string
		want    []string // each target's device, in order
		wantErr string
	}{
		{name: "named target", targets: []probe.Target{{Name: "a", Path: disk}, {Name: "b", Path: disk}},
			devices: []string{"b=/dev/vda"}, want: []string{"", "/dev/vda"}},
		{name: "the target named disk", targets: []probe.Target{{Name: "tmpfs", Path: tmpfs}, {Name: "disk", Path: disk}, {Name: "other", Path: disk}},
			devices: []string{"/dev/vda"}, want: []string{"", "/dev/vda", ""}},
		{name: "the only target off tmpfs", targets: []probe.Target{{Path: tmpfs}, {Path: disk}},
			devices: []string{"/dev/vda"}, want: []string{"", "/dev/vda"}},
		{name: "a name that is no target", targets: []probe.Target{{Name: "a", Path: disk}},
			devices: []string{"b=/dev/vda"}, wantErr: `--device b=/dev/vda names no target`},
		{name: "several disk targets", targets: []probe.Target{{Name: "a", Path: disk}, {Name: "b", Path: disk}},
			devices: []string{"/dev/vda"}, wantErr: "several disk targets; say which"},
		{name: "only tmpfs and missing targets", targets: []probe.Target{{Path: tmpfs}, {Path: disk + "/missing"}},
			devices: []string{"/dev/vda"}, wantErr: "needs a disk target to go with"},
		{name: "two devices for one target", targets: []probe.Target{{Name: "disk", Path: disk}},
			devices: []string{"/dev/vda", "disk=/dev/vdb"}, wantErr: "one --device per target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var devices []cli.Named
			for _, d := range tt.devices {
				devices = append(devices, cli.SplitNamed(d))
			}
			err := cli.AttachDevices(tt.targets, devices, probe.DefaultOptions())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("AttachDevices = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, target := range tt.targets {
				if target.Device != tt.want[i] {
					t.Errorf("target %d (%s) reads %q, want %q", i, target.Name, target.Device, tt.want[i])
				}
			}
		})
	}
}
