package probe

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRunRefusesBadTargets(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		targets []Target
		want    []string
	}{
		{"no targets", nil, []string{"no target to probe"}},
		{"missing directory", []Target{{Path: filepath.Join(tmp, "missing")}}, []string{"missing does not exist"}},
		{"a file", []Target{{Path: file}}, []string{file + " is not a directory"}},
		{"a device that is a regular file", []Target{{Path: tmp, Device: file}}, []string{"device " + file + " is not a block device"}},
		{"a missing device", []Target{{Path: tmp, Device: "/dev/does-not-exist"}}, []string{"cannot read device /dev/does-not-exist"}},
		{"every problem at once", []Target{{Path: file}, {Path: filepath.Join(tmp, "missing")}}, []string{"is not a directory", "does not exist"}},
		{"duplicate names", []Target{{Name: "x", Path: tmp}, {Name: "x", Path: tmp}}, []string{`two targets are named "x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := smallOptions()
			o.SkipFreeSpaceCheck = true
			o.MaxTotalWriteBytes = GiB
			res, err := Run(context.Background(), tt.targets, o)
			if err == nil {
				t.Fatalf("Run succeeded: %+v", res)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
				t.Errorf("a refused run left files: %v", entries)
			}
		})
	}
}

func TestRunRefusesReadOnlyTarget(t *testing.T) {
	dir := mountTmpfs(t, "8m", unix.MS_RDONLY)
	_, err := Run(context.Background(), []Target{{Path: dir}}, smallOptions())
	if err == nil || !strings.Contains(err.Error(), dir+" is on a read-only filesystem") {
		t.Errorf("Run on a read-only tmpfs = %v", err)
	}
	assertKinds(t, err, ErrReadOnly, unix.EROFS)
	assertPath(t, err, dir)
}

func TestRunRefusesInvalidOptions(t *testing.T) {
	o := smallOptions()
	o.DirectWriteBlockBytes = 1000
	_, err := Run(context.Background(), []Target{{Path: t.TempDir()}}, o)
	if err == nil || !strings.Contains(err.Error(), "invalid probe options") {
		t.Errorf("Run = %v, want invalid options", err)
	}
	assertKinds(t, err, ErrInvalidOptions)
}

func TestAssignNames(t *testing.T) {
	plans := []plan{
		{kind: KindDisk}, {kind: KindTmpfs}, {Target: Target{Name: "disk-2"}, kind: KindDisk}, {kind: KindDisk}, {kind: KindDisk},
	}
	assignNames(plans)
	var got []string
	for _, p := range plans {
		got = append(got, p.Name)
	}
	want := []string{"disk", "tmpfs", "disk-2", "disk-3", "disk-4"}
	if !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}
}

func TestResidencyNote(t *testing.T) {
	tests := []struct {
		kind           Kind
		resident, size int64
		want           string
	}{
		{KindDisk, 0, 100, ""},
		{KindTmpfs, 100, 100, "not cold: tmpfs cannot evict its pages (100% of the file stayed in memory), so this is a memory read"},
		{KindDisk, 25, 100, "partly cached: 25% of the file stayed in memory after POSIX_FADV_DONTNEED"},
		{KindDisk, 0, 0, ""},
	}
	for _, tt := range tests {
		if got := residencyNote(tt.kind, tt.resident, tt.size); got != tt.want {
			t.Errorf("residencyNote(%s, %d, %d) = %q, want %q", tt.kind, tt.resident, tt.size, got, tt.want)
		}
	}
}

func TestDirectOpenRefusal(t *testing.T) {
	tests := []struct {
		kind   Kind
		kernel string
		want   string
	}{
		{KindTmpfs, "6.1.0-18-amd64", "tmpfs on Linux 6.1.0-18-amd64 refuses O_DIRECT (open returned EINVAL); tmpfs supports it from Linux 6.6"},
		{KindTmpfs, "6.8.0", "tmpfs on Linux 6.8.0 refuses O_DIRECT (open returned EINVAL)"},
		{KindDisk, "5.15.0", "the filesystem refuses O_DIRECT (open returned EINVAL)"},
	}
	for _, tt := range tests {
		if got := directOpenRefusal(tt.kind, tt.kernel); got != tt.want {
			t.Errorf("directOpenRefusal(%s, %s) = %q, want %q", tt.kind, tt.kernel, got, tt.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		5000:        "5000 bytes",
		32 * MiB:    "33554432 bytes (32Mi)",
		3 * GiB / 2: "1610612736 bytes (1.5Gi)",
	} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestResultErr(t *testing.T) {
	r := Result{Targets: []TargetResult{{Name: "a", Path: "/a"}, {Name: "b", Path: "/b", Error: "boom"}}}
	if err := r.Err(); err == nil || err.Error() != "target b (/b): boom" {
		t.Errorf("Err() = %v", err)
	}
	if err := (&Result{Targets: r.Targets[:1]}).Err(); err != nil {
		t.Errorf("Err() = %v for a clean result", err)
	}
}
