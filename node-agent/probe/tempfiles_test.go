package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// assertTempFiles checks one filesystem's temporary-file results against the options: every size
// in order, every file done, a rate, and the mount options of what was measured.
func assertTempFiles(t *testing.T, name string, got []TempFileResult, o Options, mountOptions string) {
	t.Helper()
	if len(got) != len(o.TempFiles) {
		t.Fatalf("%s: %d temporary-file results, want %d: %+v", name, len(got), len(o.TempFiles), got)
	}
	for i, r := range got {
		want := o.TempFiles[i]
		if r.FileSizeBytes != want.FileBytes || int(r.Files) != want.Files || r.BlockSizeBytes != o.TempFileBlockBytes ||
			r.BytesPerSecond <= 0 || r.ElapsedMicroseconds <= 0 || r.Unsupported != "" {
			t.Errorf("%s: temporary files %d = %+v, want %d files of %d bytes", name, i, r, want.Files, want.FileBytes)
		}
		// The rate is the bytes over the time of the loop.
		if rate := TempFileRate([]TempFileResult{r}); rate < r.BytesPerSecond*99/100 || rate > r.BytesPerSecond*101/100 {
			t.Errorf("%s: %d B/s for %d files of %d bytes in %d µs", name, r.BytesPerSecond, r.Files, r.FileSizeBytes, r.ElapsedMicroseconds)
		}
		if !strings.Contains(r.MountOptions, mountOptions) || r.MountOptions == "" {
			t.Errorf("%s: temporary files %d measured on %q, want %q", name, i, r.MountOptions, mountOptions)
		}
	}
}

// assertLargePageTempFiles checks a tmpfs target's large-page variant: measured on a tmpfs with
// huge=within_size of the target's size where the kernel allows it, unsupported with the reason
// where it does not.
func assertLargePageTempFiles(t *testing.T, tr TargetResult, o Options) {
	t.Helper()
	if !largePagesAvailable(t) {
		for _, r := range tr.LargePageTempFiles {
			if r.Unsupported == "" || r.BytesPerSecond != 0 {
				t.Errorf("%s: large pages are not available here, got %+v", tr.Name, r)
			}
		}
		return
	}
	assertTempFiles(t, tr.Name+" with large pages", tr.LargePageTempFiles, o, "huge=within_size")
	size := largePageTmpfsBytes(tmpfsBytes(tr.Path), o.largestTempFile())
	for _, r := range tr.LargePageTempFiles {
		if want := fmt.Sprintf("size=%dk,", size/1024); !strings.HasPrefix(r.MountOptions, want) {
			t.Errorf("%s: the large-page tmpfs is mounted %q, want the target's size (%s)", tr.Name, r.MountOptions, want)
		}
	}
}

// largePagesAvailable tells whether this kernel, as root, can mount a tmpfs with large pages.
func largePagesAvailable(t *testing.T) bool {
	t.Helper()
	k, err := tmpfspages.ReadKernel(tmpfspages.Paths{})
	if err != nil {
		t.Fatal(err)
	}
	return os.Geteuid() == 0 && largePagesUnavailable(k, nil) == ""
}

func requireLargePages(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "mount a tmpfs with large pages")
	if !largePagesAvailable(t) {
		testenv.SkipOrFail(t, "this kernel gives no tmpfs large pages (no transparent huge pages, or shmem_enabled deny)")
	}
}

// The large-page variant runs on a tmpfs of the probe's own, with huge=within_size and the
// target's size, and leaves neither files nor the mount (a descriptor) behind. Large pages are what
// the variant exists for, and the mount options it reports are the ones it asked for, so the rate
// is what shows that the kernel gave them: on the machine measured the loop ran four to five times
// as fast with them, and a variant less than one and a half times as fast as the 4 KiB pages did
// not get them.
func TestLargePageTempFilesAreMeasuredOnTheirOwnTmpfs(t *testing.T) {
	requireLargePages(t)
	dir := mountTmpfs(t, "96m", 0)
	o := smallOptions()
	o.TempFiles = []TempFileSize{{FileBytes: 8 * MiB, Files: 8}}
	fdsBefore := openFds(t)
	res, err := Run(context.Background(), []Target{{Path: dir}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, dir)
	if after := openFds(t); after != fdsBefore {
		t.Errorf("%d descriptors open after the run, %d before: the probe's own tmpfs is still mounted", after, fdsBefore)
	}
	tr := res.Targets[0]
	assertTempFiles(t, tr.Name, tr.TempFiles, o, "size=98304k")
	if strings.Contains(tr.TempFiles[0].MountOptions, "huge=") {
		t.Errorf("the target's tmpfs shows %q: the test mount has no huge= option", tr.TempFiles[0].MountOptions)
	}
	assertTempFiles(t, tr.Name+" with large pages", tr.LargePageTempFiles, o, "size=98304k,huge=within_size")
	small, large := tr.TempFiles[0].BytesPerSecond, tr.LargePageTempFiles[0].BytesPerSecond
	t.Logf("8 MiB temporary files: %d MB/s with 4 KiB pages, %d MB/s with huge=within_size", small/1e6, large/1e6)
	if 2*large < 3*small {
		t.Errorf("huge=within_size ran at %d B/s, less than 1.5 times the 4 KiB pages' %d B/s: the tmpfs did not get large pages", large, small)
	}
}

// openFds counts this process's open descriptors.
func openFds(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// A kernel without transparent huge pages: every large-page result says so and carries no
// figure, the target's own figures stand, and the target is complete.
func TestLargePageTempFilesWithoutTransparentHugePages(t *testing.T) {
	dir := mountTmpfs(t, "64m", 0)
	o := smallOptions()
	o.SysfsRoot = t.TempDir() // a sysfs without transparent_hugepage/shmem_enabled
	res, err := Run(context.Background(), []Target{{Path: dir}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatalf("an unsupported variant is not a failure: %v", err)
	}
	tr := res.Targets[0]
	assertTempFiles(t, tr.Name, tr.TempFiles, o, "size=65536k")
	assertUnsupported(t, tr.LargePageTempFiles, o, "no transparent huge pages")
	if thp := res.TransparentHugePages; thp == nil || thp.ShmemEnabled != "" || thp.TmpfsDefault != tmpfspages.Never {
		t.Errorf("transparent huge pages = %+v, want none, tmpfs default never", thp)
	}
}

// An agent without CAP_SYS_ADMIN cannot mount a tmpfs of its own; it says so and what to do.
func TestLargePageTempFilesWithoutCapSysAdmin(t *testing.T) {
	requireLargePages(t)
	dir := mountTmpfs(t, "64m", 0)
	o := smallOptions()
	var res *Result
	err := withoutCapSysAdmin(func() (err error) {
		res, err = Run(context.Background(), []Target{{Path: dir}}, o)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	tr := res.Targets[0]
	assertTempFiles(t, tr.Name, tr.TempFiles, o, "size=65536k")
	assertUnsupported(t, tr.LargePageTempFiles, o, "needs CAP_SYS_ADMIN")
	assertUnsupported(t, tr.LargePageTempFiles, o, "give the node agent's container the capability SYS_ADMIN")
	assertEmpty(t, dir)
}

// withoutCapSysAdmin runs f on a thread of its own whose effective capabilities lack
// CAP_SYS_ADMIN. Capabilities belong to a thread: the goroutine keeps its thread locked and never
// unlocks it, so the thread ends with it and no other goroutine ever runs without the capability.
func withoutCapSysAdmin(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- fmt.Errorf("capget: %w", err)
			return
		}
		data[unix.CAP_SYS_ADMIN/32].Effective &^= 1 << (unix.CAP_SYS_ADMIN % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- fmt.Errorf("capset: %w", err)
			return
		}
		done <- f()
	}()
	return <-done
}

func assertUnsupported(t *testing.T, got []TempFileResult, o Options, want string) {
	t.Helper()
	if len(got) != len(o.TempFiles) {
		t.Fatalf("%d large-page results, want one per size (%d): %+v", len(got), len(o.TempFiles), got)
	}
	for i, r := range got {
		if r.FileSizeBytes != o.TempFiles[i].FileBytes || !strings.Contains(r.Unsupported, want) ||
			r.Files != 0 || r.BytesPerSecond != 0 || r.ElapsedMicroseconds != 0 || r.MountOptions != "" {
			t.Errorf("large-page result %d = %+v, want unsupported (%q) with no figure", i, r, want)
		}
	}
}

// Where O_TMPFILE is refused, each file is created under a name and unlinked at once: the loop
// works the same and leaves nothing behind.
func TestNamedTempFilesLeaveNothing(t *testing.T) {
	dir := mountTmpfs(t, "16m", 0)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFd(fd)
	o := smallOptions()
	bufs, err := newBuffers(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer bufs.release()
	d := &tempDir{fd: fd, path: dir, mountOptions: "m", named: true}
	r, err := d.loop(context.Background(), TempFileSize{FileBytes: 3*MiB + 100, Files: 4}, bufs, &o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Files != 4 || r.BytesPerSecond <= 0 || r.BlockSizeBytes != 64*KiB || r.MountOptions != "m" {
		t.Errorf("named temporary files = %+v", r)
	}
	assertEmpty(t, dir)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Blocks != st.Bfree {
		t.Errorf("the tmpfs still holds %d blocks after the loop (%v)", st.Blocks-st.Bfree, err)
	}
}

// A filesystem that fills up while temporary files are written ends the target with
// ErrTargetFull, and the figures measured before stand.
func TestTempFilesOnAFullFilesystem(t *testing.T) {
	dir := mountTmpfs(t, "8m", 0)
	o := smallOptions()
	o.SeqWriteBytes, o.SeqWriteBlockBytes, o.DirectWriteBytes, o.DirectWriteBlockBytes = MiB, MiB, 64*KiB, 64*KiB
	o.Churn = []ChurnSize{{FileBytes: 5000, Files: 10}}
	o.TempFiles = []TempFileSize{{FileBytes: MiB, Files: 2}, {FileBytes: 16 * MiB, Files: 1}}
	o.SkipFreeSpaceCheck = true
	res, err := Run(context.Background(), []Target{{Path: dir}}, o)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Targets[0]
	assertKinds(t, tr.Err, ErrTargetFull, unix.ENOSPC)
	for _, want := range []string{"temporary files", "16777216-byte files", "filled up", "a temporary file in " + dir} {
		if !strings.Contains(tr.Error, want) {
			t.Errorf("target error %q does not contain %q", tr.Error, want)
		}
	}
	if len(tr.TempFiles) != 1 || tr.TempFiles[0].FileSizeBytes != MiB || tr.TempFiles[0].Files != 2 {
		t.Errorf("the 1 MiB files measured before must stand: %+v", tr.TempFiles)
	}
	assertEmpty(t, dir)
}

func TestLargePagesRefusals(t *testing.T) {
	unavailable := []struct {
		name    string
		kernel  tmpfspages.Kernel
		readErr error
		want    string
	}{
		{"available", tmpfspages.Kernel{ShmemEnabled: "never", TmpfsDefault: "never"}, nil, ""},
		{"forced on every tmpfs", tmpfspages.Kernel{ShmemEnabled: "force", TmpfsDefault: "never"}, nil, ""},
		{"no transparent huge pages", tmpfspages.Kernel{TmpfsDefault: "never"}, nil,
			"the node's kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage/shmem_enabled): " +
				"no tmpfs can have large pages here, a ScratchVolume's included; a kernel built with CONFIG_TRANSPARENT_HUGEPAGE can"},
		{"denied on every tmpfs", tmpfspages.Kernel{ShmemEnabled: "deny", TmpfsDefault: "never"}, nil,
			"the node's transparent_hugepage/shmem_enabled is deny, which turns large pages off on every tmpfs whatever its huge= option, " +
				"so a ScratchVolume's tmpfs runs with 4 KiB pages too; write never or within_size to it to let each tmpfs choose"},
		{"settings unreadable", tmpfspages.Kernel{}, errors.New("failed to read /proc/cmdline: permission denied"),
			"the kernel's transparent huge page settings could not be read (failed to read /proc/cmdline: permission denied), so no tmpfs with large pages was measured"},
	}
	for _, tt := range unavailable {
		t.Run(tt.name, func(t *testing.T) {
			if got := largePagesUnavailable(tt.kernel, tt.readErr); got != tt.want {
				t.Errorf("largePagesUnavailable =\n%q, want\n%q", got, tt.want)
			}
		})
	}
	refused := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("fsopen tmpfs: %w: %w", unix.EPERM, tmpfspages.ErrPermission),
			"the probe may not mount a tmpfs of its own (fsopen tmpfs: operation not permitted: needs CAP_SYS_ADMIN): give the node agent's container " +
				"the capability SYS_ADMIN (docs/install.md), which large pages on the ScratchVolumes need too, or run node-agent probe as root"},
		{fmt.Errorf("huge=within_size: %w: %w", unix.EINVAL, tmpfspages.ErrRefused),
			"the node's kernel does not mount a tmpfs with huge=within_size (huge=within_size: invalid argument: refused by the kernel), " +
				"so a ScratchVolume's tmpfs keeps 4 KiB pages too"},
		{fmt.Errorf("fsopen tmpfs: %w (no fspick/fsconfig before Linux 5.2): %w", unix.ENOSYS, tmpfspages.ErrUnsupported),
			"the node's kernel does not mount a tmpfs with huge=within_size (fsopen tmpfs: function not implemented (no fspick/fsconfig before Linux 5.2): " +
				"not supported by this kernel), so a ScratchVolume's tmpfs keeps 4 KiB pages too"},
		{fmt.Errorf("create: %w", unix.ENOMEM), "failed to mount a tmpfs with huge=within_size: create: cannot allocate memory"},
	}
	for _, tt := range refused {
		if got := largePagesMountRefusal(tt.err); got != tt.want {
			t.Errorf("largePagesMountRefusal(%v) =\n%q, want\n%q", tt.err, got, tt.want)
		}
	}
}

func TestTmpfileRefused(t *testing.T) {
	for err, want := range map[error]bool{
		unix.EOPNOTSUPP: true, unix.EISDIR: true, unix.EINVAL: true,
		unix.ENOSPC: false, unix.EACCES: false, unix.EROFS: false,
	} {
		if got := tmpfileRefused(fmt.Errorf("open: %w", err)); got != want {
			t.Errorf("tmpfileRefused(%v) = %v, want %v", err, got, want)
		}
	}
}
