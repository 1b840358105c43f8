package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"
)

// mmapChildEnv, set in a child's environment, makes this program read through a mapping as
// mmapRequest on standard input says, print an mmapResult and exit.
//
// The mapped reads run in a child because the volume's FUSE server runs in this process: a
// goroutine touching an unmapped page blocks its thread in a page fault, not a system call, so a
// garbage collection that stops the world waits for that thread, while the fault waits for the
// FUSE server's goroutines, which the stopped world does not run.
const mmapChildEnv = "DBTUNE_READAHEAD_MMAP_CHILD"

// mmapRequest is what a child reads.
type mmapRequest struct {
	Path    string    `json:"path"`
	Block   int       `json:"block"`
	Offsets [][]int64 `json:"offsets"`
}

// mmapResult is what a child answers.
type mmapResult struct {
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// runMmapChildIfRequested does a child's reads and exits, when this process is such a child.
func runMmapChildIfRequested() {
	if os.Getenv(mmapChildEnv) == "" {
		return
	}
	var req mmapRequest
	res := mmapResult{}
	err := json.NewDecoder(os.Stdin).Decode(&req)
	if err == nil {
		start := time.Now()
		res.Bytes, err = mappedRead(req.Path, req.Block, req.Offsets)
		res.Seconds = time.Since(start).Seconds()
	}
	if err != nil {
		res.Error = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	os.Exit(0)
}

// mmapRandomRead reads block bytes at each offset out of a shared mapping of path, as readers that
// map their files do: every page fault on a page that is not cached reads around it. It runs in a
// child process (see mmapChildEnv) and returns the bytes read and the time of the reads alone.
func mmapRandomRead(path string, block int, offsets [][]int64) (int64, float64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	in, err := json.Marshal(mmapRequest{Path: path, Block: block, Offsets: offsets})
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), mmapChildEnv+"=1")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("the mapped reads' child failed: %w: %s", err, stderr.String())
	}
	var res mmapResult
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, 0, fmt.Errorf("the mapped reads' child answered %q: %w", out, err)
	}
	if res.Error != "" {
		return 0, 0, fmt.Errorf("the mapped reads failed: %s", res.Error)
	}
	return res.Bytes, res.Seconds, nil
}

// mappedRead copies block bytes at each offset out of a shared read-only mapping of path, one
// goroutine per list of offsets.
func mappedRead(path string, block int, offsets [][]int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("failed to map %s: %w", path, err)
	}
	defer func() { _ = unix.Munmap(m) }()
	return inParallel(offsets, block, func(buf []byte, off int64) error {
		if off+int64(len(buf)) > int64(len(m)) {
			return fmt.Errorf("%d bytes at %d pass the end of %s", len(buf), off, path)
		}
		copy(buf, m[off:off+int64(len(buf))])
		return nil
	})
}
