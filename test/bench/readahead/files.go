package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// writeFile writes size bytes of pseudo-random data (so that nothing on the way can shortcut
// zeros) to path and syncs it.
func writeFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", path, err)
	}
	chunk := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(uint64(size), 7))
	for i := 0; i+8 <= len(chunk); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			chunk[i+j] = byte(v >> (8 * j))
		}
	}
	for written := int64(0); written < size && err == nil; {
		n := min(int64(len(chunk)), size-written)
		// Each chunk differs from the last in its first bytes, so no two blocks of the file match.
		copy(chunk, strconv.FormatInt(written, 16))
		_, err = f.Write(chunk[:n])
		written += n
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// dropCache writes back what the page cache holds of path, drops it (posix_fadvise
// POSIX_FADV_DONTNEED after an fsync: the kernel drops only clean pages) and checks that no page
// is left.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("failed to drop the page cache of %s: %w", path, err)
	}
	left, err := cachedBytes(path)
	if err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("%d KiB of %s stayed in the page cache after POSIX_FADV_DONTNEED: something holds its pages", left>>10, path)
	}
	return nil
}

// cachedBytes is how much of path the page cache holds (mincore over a mapping of the file).
func cachedBytes(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("failed to map %s: %w", path, err)
	}
	defer func() { _ = unix.Munmap(m) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if err := mincore(m, vec); err != nil {
		return 0, fmt.Errorf("failed to ask which pages of %s are cached: %w", path, err)
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return n * int64(page), nil
}

// mincore fills vec with one byte per page of m, whose lowest bit says the page is in memory.
// golang.org/x/sys has no wrapper for it.
func mincore(m, vec []byte) error {
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return errno
	}
	return nil
}

// sequentialRead reads path from start to end in reads of block bytes, as a copy does, and
// returns the bytes read. The file is opened here, after the device's read-ahead was set: a file
// takes the read-ahead of its device when it is opened.
func sequentialRead(path string, block int) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, block)
	var total int64
	for {
		n, err := f.Read(buf)
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("failed to read %s at %d: %w", path, total, err)
		}
	}
}

// randomOffsets draws count offsets of InnoDB pages (multiples of randomBlock) within size, from
// seed, dealt out to workers in turn.
func randomOffsets(seed, size int64, count, workers int) [][]int64 {
	const block = randomBlock
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	out := make([][]int64, workers)
	for i := range count {
		out[i%workers] = append(out[i%workers], rng.Int64N(size/block)*block)
	}
	return out
}

// randomRead reads block bytes at each offset with pread, one goroutine per list of offsets, as a
// database's sessions look up pages, and returns the bytes read.
func randomRead(path string, block int, offsets [][]int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	return inParallel(offsets, block, func(buf []byte, off int64) error {
		_, err := f.ReadAt(buf, off)
		return err
	})
}

// inParallel runs read for every offset, one goroutine per list, and returns the bytes read.
func inParallel(offsets [][]int64, block int, read func(buf []byte, off int64) error) (int64, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(offsets))
	var total int64
	for i, list := range offsets {
		total += int64(len(list) * block)
		wg.Go(func() {
			buf := make([]byte, block)
			for _, off := range list {
				if err := read(buf, off); err != nil {
					errs[i] = fmt.Errorf("failed to read at %d: %w", off, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// readSysfsInt reads a sysfs attribute that holds one integer.
func readSysfsInt(path string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("failed to parse %s: %w", path, err)
	}
	return n, nil
}
