package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Target is one directory the benchmark measures.
type Target struct {
	Name string
	Path string
	Kind probe.Kind
	// RefDir is where the reference tools put their files: a private directory inside Path.
	RefDir string
}

// Cleanups run in reverse order of registration, like defers that outlive a function.
type Cleanups []func() error

func (c *Cleanups) Add(f func() error) { *c = append(*c, f) }

// Run runs every clean-up and returns their errors joined.
func (c *Cleanups) Run() error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		errs = append(errs, (*c)[i]())
	}
	*c = nil
	return errors.Join(errs...)
}

// tmpfsSize leaves ample room for the agent's default run, which refuses to start unless twice its
// largest file (2 × 256 MiB) is free; tmpfs only takes memory for what is written.
const tmpfsSize = "2g"

// prepareTmpfs returns the tmpfs directory: the one given, else a private tmpfs mounted under the
// repository's tmp/ when running as root, else a directory in /dev/shm.
func prepareTmpfs(given, root string, cl *Cleanups) (string, error) {
	if given != "" {
		return given, requireKind(given, probe.KindTmpfs)
	}
	if os.Geteuid() != 0 {
		dir, err := os.MkdirTemp("/dev/shm", "bench-probe-")
		if err != nil {
			return "", err
		}
		cl.Add(func() error { return os.RemoveAll(dir) })
		return dir, nil
	}
	dir := filepath.Join(root, "tmp", "bench-probe", "tmpfs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	cl.Add(removeIfEmpty(filepath.Dir(dir)))
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+tmpfsSize+",mode=0700"); err != nil {
		return "", fmt.Errorf("failed to mount a tmpfs on %s: %w", dir, err)
	}
	cl.Add(func() error {
		if err := unix.Unmount(dir, 0); err != nil {
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("failed to unmount %s: %w", dir, err)
			}
		}
		return os.Remove(dir)
	})
	return dir, nil
}

// prepareDisk returns the disk directory: the one given, else tmp/bench-probe/disk in the
// repository, which git ignores. Either way it must not be RAM-backed, or every disk figure would
// be a memory figure under the wrong name.
func prepareDisk(given, root string, cl *Cleanups) (string, error) {
	dir := given
	if dir == "" {
		dir = filepath.Join(root, "tmp", "bench-probe", "disk")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		cl.Add(removeIfEmpty(filepath.Dir(dir)))
		cl.Add(func() error { return os.RemoveAll(dir) })
	}
	return dir, requireKind(dir, probe.KindDisk)
}

// removeIfEmpty removes the directory the defaults share once both targets are gone from it;
// anything else found there stays.
func removeIfEmpty(dir string) func() error {
	return func() error {
		_ = os.Remove(dir)
		return nil
	}
}

func requireKind(dir string, want probe.Kind) error {
	kind, _, err := probe.Inspect(dir, probe.DefaultOptions())
	if err != nil {
		return err
	}
	if kind != want {
		return fmt.Errorf("%s is on a %s filesystem, but the benchmark needs a %s one there", dir, strings.ToLower(string(kind)), strings.ToLower(string(want)))
	}
	return nil
}

func newTarget(name, path string, cl *Cleanups) (*Target, error) {
	kind, _, err := probe.Inspect(path, probe.DefaultOptions())
	if err != nil {
		return nil, err
	}
	ref, err := os.MkdirTemp(path, ".bench-ref-")
	if err != nil {
		return nil, err
	}
	cl.Add(func() error { return os.RemoveAll(ref) })
	return &Target{Name: name, Path: path, Kind: kind, RefDir: ref}, nil
}

// LoopDevice is a loop device over an image file on a target, for the raw read comparisons: it
// gives each target a block device of its own that can be read, flushed and detached without
// touching a device anyone else uses.
type LoopDevice struct {
	Device      string `json:"device"`
	BackingFile string `json:"backingFile"`
	SizeBytes   int64  `json:"sizeBytes"`
	// DirectIO is the loop driver's dio flag: when on, reads reach the backing file with O_DIRECT,
	// so the disk's figure is the disk's and not the page cache holding the image.
	DirectIO bool `json:"directIO"`
}

const loopImageBytes = 1 * probe.GiB

// sysBlock lists the block devices by kernel name.
const sysBlock = "/sys/block"

// attachLoop writes an image of random data (a sparse one would read as zeros without any I/O)
// and attaches it with direct I/O requested.
func attachLoop(ctx context.Context, t *Target, cl *Cleanups) (*LoopDevice, error) {
	img := filepath.Join(t.RefDir, "loop.img")
	if err := writeImage(img, loopImageBytes); err != nil {
		return nil, err
	}
	cl.Add(func() error { return removeIfExists(img) })
	out, _, err := execTool(ctx, []string{"losetup", "--find", "--show", "--direct-io=on", img})
	if err != nil {
		return nil, err
	}
	dev := strings.TrimSpace(out)
	if !strings.HasPrefix(dev, "/dev/loop") {
		return nil, fmt.Errorf("losetup printed %q, not a loop device", dev)
	}
	cl.Add(func() error {
		_, _, err := execTool(context.Background(), []string{"losetup", "--detach", dev})
		return err
	})
	dio := readTrimmed(filepath.Join(sysBlock, filepath.Base(dev), "loop", "dio")) == "1"
	return &LoopDevice{Device: dev, BackingFile: img, SizeBytes: loopImageBytes, DirectIO: dio}, nil
}

func writeImage(path string, n int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	chunk := randomBytes(8 * probe.MiB)
	for written := int64(0); written < n && err == nil; written += int64(len(chunk)) {
		_, err = f.Write(chunk[:min(int64(len(chunk)), n-written)])
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Machine describes where the figures were measured.
type Machine struct {
	Kernel        string            `json:"kernel"`
	CPUModel      string            `json:"cpuModel"`
	Cores         int               `json:"cores"`
	MemoryBytes   int64             `json:"memoryBytes"`
	Virtualized   string            `json:"virtualization,omitempty"`
	GoVersion     string            `json:"goVersion"`
	Tools         map[string]string `json:"tools"`
	LoadAvgStart  string            `json:"loadAverageAtStart"`
	LoadAvgFinish string            `json:"loadAverageAtFinish,omitempty"`
	RunAsRoot     bool              `json:"runAsRoot"`
	// PageReporting says whether the hypervisor takes back the guest's free memory, which is why
	// the benchmark warms memory before every run (see warmMemory).
	PageReporting FreePageReporting `json:"freePageReporting"`
	// WarmMemoryBytes is what was faulted in and freed before every run.
	WarmMemoryBytes int64 `json:"warmMemoryBytes"`
}

func describeMachine(ctx context.Context) Machine {
	var u unix.Utsname
	_ = unix.Uname(&u)
	m := Machine{
		Kernel:        unix.ByteSliceToString(u.Release[:]),
		CPUModel:      procField("/proc/cpuinfo", "model name"),
		Cores:         runtime.NumCPU(),
		Virtualized:   virtualization(),
		GoVersion:     runtime.Version(),
		Tools:         map[string]string{},
		LoadAvgStart:  loadAverage(),
		RunAsRoot:     os.Geteuid() == 0,
		PageReporting: describePageReporting(),
	}
	m.MemoryBytes = meminfoBytes("MemTotal")
	for tool, args := range map[string][]string{"fio": {"fio", "--version"}, "dd": {"dd", "--version"}, "hdparm": {"hdparm", "-V"}} {
		out, _, err := execTool(ctx, args)
		if line, _, _ := strings.Cut(strings.TrimSpace(out), "\n"); err == nil {
			m.Tools[tool] = line
		} else {
			m.Tools[tool] = "unavailable: " + err.Error()
		}
	}
	return m
}

// virtualization names the hypervisor when the CPU says there is one; a virtual disk's figures
// may come from the host's page cache rather than from any physical device.
func virtualization() string {
	if !strings.Contains(" "+procField("/proc/cpuinfo", "flags")+" ", " hypervisor ") {
		return ""
	}
	for _, f := range []string{"/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"} {
		if v := readTrimmed(f); v != "" {
			return "virtual machine (" + v + ")"
		}
	}
	return "virtual machine"
}

func loadAverage() string {
	f := strings.Fields(readTrimmed("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// meminfoBytes reads a "key: N kB" line of /proc/meminfo in bytes; 0 when it cannot.
func meminfoBytes(key string) int64 {
	kb, err := strconv.ParseInt(strings.TrimSuffix(procField("/proc/meminfo", key), " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return kb * 1024
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// TargetInfo is what the report says about a target.
type TargetInfo struct {
	Name       string           `json:"name"`
	Path       string           `json:"path"`
	Kind       probe.Kind       `json:"kind"`
	Provenance probe.Provenance `json:"provenance"`
	// DeviceDriver is the kernel driver of the whole disk (virtio_blk, nvme, sd), which tells a
	// virtual disk from a physical one.
	DeviceDriver string      `json:"deviceDriver,omitempty"`
	Loop         *LoopDevice `json:"loopDevice,omitempty"`
}

func describeTarget(t *Target) TargetInfo {
	_, prov, _ := probe.Inspect(t.Path, probe.DefaultOptions())
	info := TargetInfo{Name: t.Name, Path: t.Path, Kind: t.Kind, Provenance: prov}
	if prov.Device != "" {
		if link, err := os.Readlink(filepath.Join(sysBlock, prov.Device, "device", "driver")); err == nil {
			info.DeviceDriver = filepath.Base(link)
		}
	}
	return info
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// seconds writes a duration as fio's --runtime wants it: seconds, without a unit.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
