package mariadb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupRoot is where the machine mounts its cgroup file systems.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the harness's own cgroup below the memory controller's root. Each host gets a
// cgroup in it named after its process and its directory (see hostDir), and each run of a pod one
// below that.
const cgroupParent = "dbtune-mariadb"

// memoryController is the cgroup memory controller of this machine: cgroup v2's unified hierarchy
// when it has the memory controller, or else v1's memory hierarchy.
type memoryController struct {
	// root is the hierarchy's root directory.
	root string
	v2   bool
}

// findMemoryController finds the memory controller, or says what the machine lacks.
func findMemoryController() (memoryController, error) {
	if raw, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil &&
		containsWord(string(raw), "memory") {
		return memoryController{root: cgroupRoot, v2: true}, nil
	}
	v1 := filepath.Join(cgroupRoot, "memory")
	if _, err := os.Stat(filepath.Join(v1, "memory.limit_in_bytes")); err == nil {
		return memoryController{root: v1}, nil
	}
	return memoryController{}, fmt.Errorf("no cgroup memory controller at %s (neither v2 with memory in cgroup.controllers nor v1 at %s): pods need one to run under their memory limit",
		cgroupRoot, v1)
}

func containsWord(s, word string) bool {
	for _, w := range strings.Fields(s) {
		if w == word {
			return true
		}
	}
	return false
}

// hostDir is the cgroup of the host whose directory is named host, run by the process pid: its
// pods' cgroups go below it, and a later host removes it once that process is gone (see
// sweepStaleCgroups). The name is the record: the process that owns it, then the host.
func (m memoryController) hostDir(pid int, host string) string {
	return filepath.Join(m.root, cgroupParent, strconv.Itoa(pid)+"-"+host)
}

// removeHostDir removes a host's cgroup, and the harness's cgroup with it when no other host uses
// it any more.
func (m memoryController) removeHostDir(dir string) error {
	if err := removeCgroup(dir); err != nil {
		return err
	}
	// Another host's cgroup in it makes this fail, which is as it should be.
	_ = os.Remove(filepath.Join(m.root, cgroupParent))
	return nil
}

// memoryCgroup is the cgroup one run of a pod's database container is charged to, as a kubelet
// makes one per container: its processes' memory, the page cache of the files they write and the
// pages of the tmpfs volumes they fill all count against the container's limits.memory.
type memoryCgroup struct {
	dir string
	v2  bool
}

// newMemoryCgroup creates the cgroup at dir with limit bytes (none when limit is 0).
func (m memoryController) newMemoryCgroup(dir string, limit int64) (*memoryCgroup, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create the cgroup %s: %w", filepath.Dir(dir), err)
	}
	if err := enableMemory(m, filepath.Dir(dir)); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create the cgroup %s: %w", dir, err)
	}
	cg := &memoryCgroup{dir: dir, v2: m.v2}
	if limit > 0 {
		if err := cg.write(cg.file("memory.max", "memory.limit_in_bytes"), strconv.FormatInt(limit, 10)); err != nil {
			return nil, errors.Join(err, cg.remove())
		}
	}
	return cg, nil
}

// enableMemory lets the children of dir, and of each cgroup between it and the root, use the
// memory controller: in v2 a cgroup offers its children only what its subtree_control lists.
func enableMemory(m memoryController, dir string) error {
	if !m.v2 {
		return nil
	}
	rel, err := filepath.Rel(m.root, dir)
	if err != nil {
		return err
	}
	d := m.root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
			return fmt.Errorf("failed to enable the memory controller below %s: %w", d, err)
		}
		d = filepath.Join(d, part)
	}
	return os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+memory"), 0o644)
}

// file picks the v2 or the v1 name of a control file.
func (c *memoryCgroup) file(v2, v1 string) string {
	if c.v2 {
		return filepath.Join(c.dir, v2)
	}
	return filepath.Join(c.dir, v1)
}

func (c *memoryCgroup) write(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("failed to write %s to %s: %w", value, path, err)
	}
	return nil
}

// procsFile is where a process writes 0 to move itself into the cgroup.
func (c *memoryCgroup) procsFile() string { return filepath.Join(c.dir, "cgroup.procs") }

// MemoryUsage is what a pod's database container has been charged in its memory cgroup.
type MemoryUsage struct {
	// LimitBytes is the container's limits.memory, or 0 without one.
	LimitBytes int64
	// CurrentBytes and PeakBytes are the charge now and its highest value since the start.
	CurrentBytes, PeakBytes int64
	// OOMKills counts the processes the kernel killed for reaching the limit.
	OOMKills int64
}

func (c *memoryCgroup) usage() (MemoryUsage, error) {
	var u MemoryUsage
	var err error
	if u.CurrentBytes, err = readInt(c.file("memory.current", "memory.usage_in_bytes")); err != nil {
		return u, err
	}
	if u.PeakBytes, err = readInt(c.file("memory.peak", "memory.max_usage_in_bytes")); err != nil {
		return u, err
	}
	if u.LimitBytes, err = readInt(c.file("memory.max", "memory.limit_in_bytes")); err != nil {
		return u, err
	}
	u.OOMKills, err = readKey(c.file("memory.events", "memory.oom_control"), "oom_kill")
	return u, err
}

// readInt reads a control file holding a number; "max" (v2) and v1's page-rounded "no limit"
// value both read as 0, no limit.
func readInt(path string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	s := strings.TrimSpace(string(raw))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	if n >= 1<<62 {
		return 0, nil
	}
	return n, nil
}

// readKey reads the value of key in a flat keyed control file ("oom_kill 2").
func readKey(path, key string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, nil
}

// remove removes the cgroup once the processes in it have exited. A process that has just been
// killed leaves the cgroup a moment after: wait for that rather than fail.
func (c *memoryCgroup) remove() error {
	return removeCgroup(c.dir)
}

func removeCgroup(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			return fmt.Errorf("failed to remove the cgroup %s (processes still in it: %q): %w", dir, strings.Fields(string(procs)), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sweepStaleCgroups removes the cgroups of hosts whose processes are gone: killed before they
// closed. Their sandboxes died with them (the parent-death signal), so the cgroups are empty.
func (m memoryController) sweepStaleCgroups() error {
	hosts, _ := filepath.Glob(filepath.Join(m.root, cgroupParent, "*-*"))
	var errs []error
	for _, host := range hosts {
		owner, _, _ := strings.Cut(filepath.Base(host), "-")
		pid, err := strconv.Atoi(owner)
		if err != nil || processExists(pid) {
			continue
		}
		runs, _ := os.ReadDir(host)
		for _, run := range runs {
			if run.IsDir() {
				errs = append(errs, removeCgroup(filepath.Join(host, run.Name())))
			}
		}
		errs = append(errs, m.removeHostDir(host))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("failed to remove the memory cgroups of killed test processes: %w", err)
	}
	return nil
}
