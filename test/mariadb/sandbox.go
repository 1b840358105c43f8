package mariadb

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
)

// sandboxEnv carries the path of a sandbox's spec to the re-executed binary.
const sandboxEnv = "DBTUNE_MARIADB_SANDBOX"

// sandboxSpec is one run of a pod, as the sandbox process performs it. All paths outside a
// container's Binds targets are paths on this machine.
type sandboxSpec struct {
	// Tmpfs are mounted first; containers bind them like any other directory.
	Tmpfs []tmpfsSpec `json:"tmpfs"`
	// Containers run in order: each init container to completion, then the main container, whose last
	// process runs until the sandbox is told to stop.
	Containers []containerSpec `json:"containers"`
}

type tmpfsSpec struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Huge is the huge= option the node agent sets on the mounted tmpfs, the way it does it
	// (tmpfspages.Set); empty leaves the mount as the kubelet makes it.
	Huge string `json:"huge,omitempty"`
}

type containerSpec struct {
	Name string `json:"name"`
	// Rootfs is the container's root directory: its writable layer over this machine's system
	// directories, or, with Image set, an overlay of its writable layer (Rootfs.upper) on Image.
	Rootfs string `json:"rootfs"`
	// Image, when set, is the image's unpacked file system.
	Image string `json:"image,omitempty"`
	// Binds are mounted in order onto paths inside Rootfs.
	Binds     []bindSpec    `json:"binds"`
	Processes []processSpec `json:"processes"`
	// Log receives the standard output and error of every process.
	Log string `json:"log"`
	// MemoryCgroup, when set, is the cgroup.procs file of the container's memory cgroup: the
	// sandbox moves itself there before starting the container's processes, which inherit it.
	MemoryCgroup string `json:"memoryCgroup,omitempty"`
}

type bindSpec struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

type processSpec struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	UID  uint32   `json:"uid"`
	GID  uint32   `json:"gid"`
	// Groups are the supplementary groups: the pod's fsGroup, as the kubelet adds it.
	Groups []uint32 `json:"groups,omitempty"`
}

// RunSandboxIfRequested turns this process into a pod's sandbox when the harness started it as one,
// and never returns in that case. It must be the first statement of TestMain, or of main in a
// program using the harness: pods run in this same binary, re-executed in new namespaces, because a
// Go program cannot make mounts between fork and exec.
func RunSandboxIfRequested() {
	spec := os.Getenv(sandboxEnv)
	if spec == "" {
		return
	}
	err := runSandbox(spec)
	if err == nil {
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() > 0 {
		os.Exit(exit.ExitCode())
	}
	os.Exit(1)
}

// errStopped says that the sandbox was told to stop while it was still preparing the pod.
var errStopped = errors.New("stopped before the pod's main process started")

func runSandbox(specPath string) error {
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return fmt.Errorf("failed to read the spec: %w", err)
	}
	var spec sandboxSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("failed to decode the spec: %w", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, unix.SIGTERM, unix.SIGINT)
	// A shared propagation would leak every bind below into the caller's namespace, where removing
	// the host directory would then reach the machine's /usr. Slave, not private: unmounts made
	// outside still reach this namespace's copies, so that a volume the caller mounted before
	// the pod started (a cloud-shaped data volume, say) is not held here after the caller
	// unmounts it.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("failed to make the mount namespace a slave of the caller's: %w", err)
	}
	for _, fs := range spec.Tmpfs {
		opts := fmt.Sprintf("size=%d,mode=0777", fs.Size)
		if err := unix.Mount("tmpfs", fs.Path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("failed to mount a tmpfs (%s) at %s: %w", opts, fs.Path, err)
		}
		if fs.Huge == "" {
			continue
		}
		if _, err := tmpfspages.Set(tmpfspages.Paths{}, fs.Path, fs.Huge); err != nil {
			return fmt.Errorf("failed to give the tmpfs at %s the node agent's pages: %w", fs.Path, err)
		}
	}
	for i, c := range spec.Containers {
		if err := buildRootfs(c); err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
		if err := joinCgroup(c.MemoryCgroup); err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
		for j, p := range c.Processes {
			main := i == len(spec.Containers)-1 && j == len(c.Processes)-1
			if err := runProcess(c, p, main, stop); err != nil {
				return fmt.Errorf("container %s: %s: %w", c.Name, p.Argv[0], err)
			}
		}
	}
	return nil
}

// joinCgroup moves the sandbox into the container's memory cgroup, so that the processes it starts
// from now on are born there and every page they touch is charged there from the first. What the
// sandbox itself allocated before stays charged where it was; it allocates almost nothing after.
func joinCgroup(procs string) error {
	if procs == "" {
		return nil
	}
	// 0 names the writing process, whatever its PID in this PID namespace.
	if err := os.WriteFile(procs, []byte("0"), 0o644); err != nil {
		return fmt.Errorf("failed to join the memory cgroup (%s): %w", procs, err)
	}
	return nil
}

// runProcess runs p chrooted into the container's root directory. Only the main process may be
// stopped by a signal without that being an error: it is how the pod shuts down.
func runProcess(c containerSpec, p processSpec, main bool, stop <-chan os.Signal) error {
	log, err := os.OpenFile(c.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := &exec.Cmd{
		Path: p.Argv[0], Args: p.Argv, Env: p.Env, Dir: "/", Stdout: log, Stderr: log,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     c.Rootfs,
			Credential: &syscall.Credential{Uid: p.UID, Gid: p.GID, Groups: append([]uint32{}, p.Groups...)},
		},
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil && main {
			return errors.New("exited without being asked to")
		}
		return err
	case <-stop:
		_ = cmd.Process.Signal(unix.SIGTERM)
		err := <-done
		if !main {
			return errors.Join(errStopped, err)
		}
		return err
	}
}

// systemDirs are the machine's directories a container sees read-only: they hold the programs and
// libraries the stand-in image runs, and /etc the users and the option files.
var systemDirs = map[string]bool{
	"usr": true, "etc": true, "bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true, "libx32": true,
}

// buildRootfs makes the container's root directory: the machine's system directories, /dev, a
// fresh /proc and /sys, an empty writable /tmp, the image's /etc/mysql and the volume mounts. Every
// other directory (/var, /run, …) starts empty in the writable layer, as in an image that has none.
func buildRootfs(c containerSpec) error {
	if err := os.MkdirAll(c.Rootfs, 0o755); err != nil {
		return err
	}
	if c.Image != "" {
		if err := mountImage(c); err != nil {
			return err
		}
	} else if err := bindSystemDirs(c.Rootfs); err != nil {
		return err
	}
	tmp := filepath.Join(c.Rootfs, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		return err
	}
	// mariadbd reads /etc/my.cnf before /etc/mysql/my.cnf; the stand-in image has none, whatever
	// the machine has.
	if _, err := os.Stat("/etc/my.cnf"); err == nil && c.Image == "" {
		if err := bindMount("/dev/null", filepath.Join(c.Rootfs, "etc", "my.cnf"), true, false); err != nil {
			return err
		}
	}
	binds := append([]bindSpec{}, c.Binds...)
	sort.SliceStable(binds, func(i, j int) bool { return depth(binds[i].Target) < depth(binds[j].Target) })
	for _, b := range binds {
		if err := bind(c.Rootfs, b); err != nil {
			return err
		}
	}
	return nil
}

// bindSystemDirs gives rootfs this machine's system directories, read-only, /dev, /sys and a fresh
// /proc: the stand-in image of this machine's packages.
func bindSystemDirs(rootfs string) error {
	entries, err := os.ReadDir("/")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := addSystemEntry(rootfs, e); err != nil {
			return err
		}
	}
	return nil
}

// mountImage makes the container's root an overlay of a writable layer on the image's file
// system, as a runtime's overlayfs snapshotter does, with /dev, /sys and a fresh /proc.
func mountImage(c containerSpec) error {
	upper, work := c.Rootfs+".upper", c.Rootfs+".work"
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", c.Image, upper, work)
	if err := unix.Mount("overlay", c.Rootfs, "overlay", 0, opts); err != nil {
		return fmt.Errorf("failed to mount the image's file system (overlay %s) at %s: %w", opts, c.Rootfs, err)
	}
	for _, name := range []string{"dev", "sys"} {
		if err := bindMount("/"+name, filepath.Join(c.Rootfs, name), name == "sys", name == "dev"); err != nil {
			return err
		}
	}
	target := filepath.Join(c.Rootfs, "proc")
	if err := os.MkdirAll(target, 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", target, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("failed to mount proc at %s: %w", target, err)
	}
	return nil
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

func addSystemEntry(rootfs string, e os.DirEntry) error {
	name := e.Name()
	host, target := "/"+name, filepath.Join(rootfs, name)
	switch {
	case systemDirs[name] && e.Type()&os.ModeSymlink != 0:
		link, err := os.Readlink(host)
		if err != nil {
			return err
		}
		if err := os.Symlink(link, target); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		return nil
	case systemDirs[name] && e.IsDir():
		return bindMount(host, target, true, false)
	case name == "dev":
		return bindMount(host, target, false, true)
	case name == "sys":
		return bindMount(host, target, true, false)
	case name == "proc":
		if err := os.MkdirAll(target, 0o555); err != nil {
			return err
		}
		if err := unix.Mount("proc", target, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("failed to mount proc at %s: %w", target, err)
		}
	}
	return nil
}

// bind mounts a volume onto its mount path inside rootfs, creating the mount point in the writable
// layer. A mount point missing under a read-only system directory cannot be created, which is where
// the stand-in image differs from a real one.
func bind(rootfs string, b bindSpec) error {
	if _, err := os.Stat(b.Source); err != nil {
		return fmt.Errorf("volume source for %s: %w", b.Target, err)
	}
	target := filepath.Join(rootfs, b.Target)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("failed to create the mount point %s: %w", b.Target, err)
	}
	return bindMount(b.Source, target, b.ReadOnly, false)
}

// bindMount binds source onto target, creating target as a directory or an empty file like source.
func bindMount(source, target string, readOnly, recursive bool) error {
	st, err := os.Stat(source)
	if err != nil {
		return err
	}
	if st.IsDir() {
		err = os.MkdirAll(target, 0o755)
	} else if _, serr := os.Stat(target); errors.Is(serr, os.ErrNotExist) {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("failed to create the mount point %s: %w", target, err)
	}
	flags := uintptr(unix.MS_BIND)
	if recursive {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(source, target, "", flags, ""); err != nil {
		return fmt.Errorf("failed to bind %s onto %s: %w", source, target, err)
	}
	if readOnly {
		if err := unix.Mount("", target, "", flags|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("failed to make %s read-only: %w", target, err)
		}
	}
	return nil
}
