package tmpfspages_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// mountTmpfs mounts a tmpfs at a new directory with options, as the kubelet mounts a memory
// emptyDir (size=…, no huge=), and unmounts it at the end.
func mountTmpfs(t *testing.T, options string) string {
	t.Helper()
	testenv.RequireRoot(t, "mount a tmpfs")
	dir := filepath.Join(t.TempDir(), "volume")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, options); err != nil {
		testenv.SkipOrFail(t, "needs CAP_SYS_ADMIN to mount a tmpfs (%v): run as root, as CI does", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("failed to unmount %s: %v", dir, err)
		}
	})
	return dir
}

// superOptions reads what the mount table shows for the mount at dir.
func superOptions(t *testing.T, dir string) string {
	t.Helper()
	entries, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].MountPoint == dir {
			return entries[i].SuperOptions
		}
	}
	t.Fatalf("%s is not in the mount table", dir)
	return ""
}

func requireLargePages(t *testing.T) {
	t.Helper()
	k, err := tmpfspages.ReadKernel(tmpfspages.Paths{})
	if err != nil {
		t.Fatal(err)
	}
	if !k.Supported() {
		testenv.SkipOrFail(t, "this kernel has no transparent huge pages for tmpfs")
	}
}

func TestSetGivesTheMountedTmpfsLargePagesAndEveryViewSeesIt(t *testing.T) {
	requireLargePages(t)
	dir := mountTmpfs(t, "size=16m")
	// The container's view: a bind mount of the volume, as the kubelet gives it to the container.
	view := filepath.Join(t.TempDir(), "view")
	if err := os.Mkdir(view, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dir, view, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(view, unix.MNT_DETACH) })

	c, err := tmpfspages.Set(tmpfspages.Paths{}, dir, tmpfspages.WithinSize)
	if err != nil {
		t.Fatal(err)
	}
	if c.Before != tmpfspages.Never || c.After != tmpfspages.WithinSize || !c.Reconfigured {
		t.Errorf("Set = %+v, want never → within_size, reconfigured", c)
	}
	for _, d := range []string{dir, view} {
		opts := superOptions(t, d)
		if !strings.Contains(opts, "huge=within_size") || !strings.Contains(opts, "size=16384k") {
			t.Errorf("the mount table shows %q for %s, want huge=within_size beside the unchanged size", opts, d)
		}
	}

	again, err := tmpfspages.Set(tmpfspages.Paths{}, view, tmpfspages.WithinSize)
	if err != nil || again.Reconfigured || again.Before != tmpfspages.WithinSize {
		t.Errorf("Set again = %+v, %v; want nothing done, the option already there", again, err)
	}
	back, err := tmpfspages.Set(tmpfspages.Paths{}, dir, tmpfspages.Never)
	if err != nil || !back.Reconfigured || back.After != tmpfspages.Never {
		t.Errorf("Set never = %+v, %v", back, err)
	}
	if opts := superOptions(t, view); strings.Contains(opts, "huge=") {
		t.Errorf("after huge=never the mount table shows %q", opts)
	}
}

func TestSetChangesNothingButATmpfsMountedExactlyThere(t *testing.T) {
	testenv.RequireRoot(t, "mount a tmpfs")
	dir := mountTmpfs(t, "size=16m")
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o750); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	plain := t.TempDir() // a directory on the disk, as before the kubelet mounts the volume
	for name, d := range map[string]string{"a directory inside the tmpfs": sub, "the disk": plain} {
		_, err := tmpfspages.Set(tmpfspages.Paths{}, d, tmpfspages.WithinSize)
		if !errors.Is(err, tmpfspages.ErrNotTmpfsMount) {
			t.Errorf("Set on %s = %v, want ErrNotTmpfsMount", name, err)
		}
	}
	if _, err := tmpfspages.Set(tmpfspages.Paths{}, link, tmpfspages.WithinSize); err == nil {
		t.Error("Set followed a symbolic link to a tmpfs")
	}
	if opts := superOptions(t, dir); strings.Contains(opts, "huge=") {
		t.Errorf("the tmpfs was changed through a path that is not its mount point: %q", opts)
	}
}

func TestAnOptionTheKernelRefusesIsReportedAsRefused(t *testing.T) {
	requireLargePages(t)
	dir := mountTmpfs(t, "size=16m")
	_, err := tmpfspages.Set(tmpfspages.Paths{}, dir, "sometimes")
	if !errors.Is(err, tmpfspages.ErrRefused) {
		t.Fatalf("Set huge=sometimes = %v, want ErrRefused", err)
	}
	if !strings.Contains(err.Error(), "huge") {
		t.Errorf("the error %q does not quote the kernel's message", err)
	}
}

func TestDetachedTmpfsHasTheOptionAndLeavesNoMount(t *testing.T) {
	requireLargePages(t)
	testenv.RequireRoot(t, "mount a detached tmpfs")
	before, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	d, err := tmpfspages.NewDetached(8<<20, tmpfspages.WithinSize)
	if err != nil {
		t.Fatal(err)
	}
	f, err := unix.Openat(d.Fd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(f, &st); err != nil || st.Type != unix.TMPFS_MAGIC || st.Blocks*uint64(st.Bsize) != 8<<20 {
		t.Errorf("the detached file system is %#x of %d bytes (%v), want an 8 MiB tmpfs", st.Type, st.Blocks*uint64(st.Bsize), err)
	}
	_ = unix.Close(f)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("a detached tmpfs changed the mount table")
	}
}

func TestReadKernel(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, shmem, cmdline string
		want                 tmpfspages.Kernel
		supported            bool
		override             bool
	}{
		{"defaults", "always within_size advise [never] deny force\n", "quiet", tmpfspages.Kernel{ShmemEnabled: "never", TmpfsDefault: "never"}, true, false},
		{"tmpfs default on the command line", "always within_size advise [never] deny force\n", "ro transparent_hugepage_tmpfs=within_size", tmpfspages.Kernel{ShmemEnabled: "never", TmpfsDefault: "within_size"}, true, false},
		{"deny", "always within_size advise never [deny] force\n", "", tmpfspages.Kernel{ShmemEnabled: "deny", TmpfsDefault: "never"}, true, true},
		{"no transparent huge pages", "", "", tmpfspages.Kernel{TmpfsDefault: "never"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tmpfspages.Paths{ShmemEnabled: filepath.Join(dir, "missing"), Cmdline: write("cmdline", tc.cmdline)}
			if tc.shmem != "" {
				p.ShmemEnabled = write("shmem_enabled", tc.shmem)
			}
			got, err := tmpfspages.ReadKernel(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got.Supported() != tc.supported || (got.Override() != "") != tc.override {
				t.Errorf("ReadKernel = %+v (supported %v, override %q), want %+v", got, got.Supported(), got.Override(), tc.want)
			}
		})
	}
}

func TestOption(t *testing.T) {
	for opts, want := range map[string]string{
		"rw,size=16384k":                    "never",
		"rw,size=16384k,huge=within_size":   "within_size",
		"rw,size=98304k,noswap,huge=always": "always",
	} {
		if got := tmpfspages.Option(opts); got != want {
			t.Errorf("Option(%q) = %q, want %q", opts, got, want)
		}
	}
}
