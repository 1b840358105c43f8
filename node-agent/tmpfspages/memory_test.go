package tmpfspages_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// cgroupRoot is where the machine mounts its cgroup file systems.
const cgroupRoot = "/sys/fs/cgroup"

// memoryCgroup is a memory cgroup this test process moves into, so that the tmpfs pages it writes
// are charged there as they are to a database container's.
type memoryCgroup struct {
	dir, stat string
	from      string // the cgroup.procs to move back to
}

func newMemoryCgroup(t *testing.T) *memoryCgroup {
	t.Helper()
	testenv.RequireRoot(t, "create a memory cgroup")
	var root string
	switch v1 := filepath.Join(cgroupRoot, "memory"); {
	case fileExists(filepath.Join(v1, "memory.limit_in_bytes")):
		root = v1
	case strings.Contains(readFile(t, filepath.Join(cgroupRoot, "cgroup.controllers")), "memory"):
		root = cgroupRoot
	default:
		testenv.SkipOrFail(t, "no cgroup memory controller at %s", cgroupRoot)
	}
	c := &memoryCgroup{dir: filepath.Join(root, fmt.Sprintf("dbtune-pages-test-%d", os.Getpid())), from: filepath.Join(root, "cgroup.procs")}
	c.stat = filepath.Join(c.dir, "memory.stat")
	_ = os.Remove(c.dir) // a killed run's
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(c.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("failed to remove the cgroup %s: %v", c.dir, err)
		}
	})
	return c
}

// charged runs write with this process in the cgroup and returns the tmpfs bytes (shmem) the
// cgroup was charged meanwhile.
func (c *memoryCgroup) charged(t *testing.T, write func()) int64 {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := statKey(t, c.stat, "shmem")
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatalf("failed to join the cgroup: %v", err)
	}
	write()
	if err := os.WriteFile(c.from, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatalf("failed to leave the cgroup: %v", err)
	}
	return statKey(t, c.stat, "shmem") - before
}

// tmpWrite writes size bytes to a new unlinked file in dir in 64 KiB writes, as a filesort's merge
// files are written, and returns the open file.
func tmpWrite(t *testing.T, dir string, size int64) *os.File {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "tmpfile")
	block := make([]byte, 64<<10)
	for off := int64(0); off < size; off += int64(len(block)) {
		n := min(int64(len(block)), size-off)
		if _, err := f.Write(block[:n]); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestLargePagesStayWithinTheVolume measures on a real memory cgroup what a volume with large pages
// is charged: files written as temporary files are charged their bytes rounded to 4 KiB pages,
// whatever their size, as with small pages; a sparse file is charged its large folios whole, so it
// fills the volume far sooner than with small pages; and however it is written a volume is never
// charged more than its size, because the tmpfs counts every page of a large folio against its
// size. So the memory rule, which counts the whole volume, holds with large pages.
func TestLargePagesStayWithinTheVolume(t *testing.T) {
	requireLargePages(t)
	cg := newMemoryCgroup(t)
	const size = 64 << 20

	t.Run("temporary files", func(t *testing.T) {
		for _, huge := range []string{"size=64m", "size=64m,huge=within_size"} {
			dir := mountTmpfs(t, huge)
			files := []int64{20<<20 + 100<<10, 4<<20 + 4<<10, 1<<20 + 1}
			var written, pages int64
			var open []*os.File
			got := cg.charged(t, func() {
				for _, n := range files {
					open = append(open, tmpWrite(t, dir, n))
					written += n
					pages += (n + 4095) &^ 4095
				}
			})
			for _, f := range open {
				_ = f.Close()
			}
			t.Logf("%s: %d bytes in %d files charged %d bytes (%.4fx their 4 KiB pages)", huge, written, len(files), got, float64(got)/float64(pages))
			if got > pages+64<<10 {
				t.Errorf("%s: %d bytes written in %d files were charged %d bytes, more than their %d bytes of 4 KiB pages", huge, written, len(files), got, pages)
			}
			if got < written {
				t.Errorf("%s: only %d of %d bytes written were charged to the cgroup: the measurement does not see the tmpfs", huge, got, written)
			}
		}
	})

	t.Run("sparse writes fill the volume sooner, never past it", func(t *testing.T) {
		for _, huge := range []string{"size=64m", "size=64m,huge=within_size"} {
			touched, charged, used, full := sparseFill(t, cg, mountTmpfs(t, huge))
			t.Logf("%s: 16 KiB written every 2 MiB of a 1 GiB file: %d bytes written, %d charged, %d counted by the tmpfs (full: %v)", huge, touched, charged, used, full)
			if charged > size+1<<20 || used > size {
				t.Errorf("%s: a %d-byte volume was charged %d bytes and counts %d used: past its size", huge, size, charged, used)
			}
			if !strings.Contains(huge, "huge=") && (full || charged > touched+1<<20) {
				t.Errorf("%s: with 4 KiB pages %d bytes written were charged %d (full: %v)", huge, touched, charged, full)
			}
		}
	})
}

// sparseFill writes 16 KiB every 2 MiB into a file whose size covers 1 GiB, until the volume at
// dir is full or the file is written through, and returns what it wrote, what the cgroup was
// charged, what the tmpfs counts as used and whether it filled.
func sparseFill(t *testing.T, cg *memoryCgroup, dir string) (touched, charged, used int64, full bool) {
	t.Helper()
	charged = cg.charged(t, func() {
		f, err := os.OpenFile(filepath.Join(dir, "sparse"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		if err := f.Truncate(1 << 30); err != nil {
			t.Fatal(err)
		}
		page := make([]byte, 16<<10)
		for off := int64(0); off < 1<<30; off += 2 << 20 {
			if _, err := f.WriteAt(page, off); err != nil {
				if full = errors.Is(err, unix.ENOSPC); !full {
					t.Fatal(err)
				}
				return
			}
			touched += int64(len(page))
		}
	})
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return touched, charged, int64(st.Blocks-st.Bfree) * st.Bsize, full
}

func statKey(t *testing.T, path, key string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %s", key, path)
	return 0
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(raw)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
