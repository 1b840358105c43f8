package cloudvolume_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbtune/scratch-operator/test/cloudvolume"
)

// childEnv makes the test binary a process that opens a volume on the named mount point, reports
// its device, keeps writing to it, and waits to be killed.
const childEnv = "DBTUNE_CLOUDVOLUME_CHILD"

func runChildIfRequested() {
	mountPoint := os.Getenv(childEnv)
	if mountPoint == "" {
		return
	}
	v, err := cloudvolume.Open(cloudvolume.Options{Profile: cloudvolume.GP3, SizeBytes: 128 * cloudvolume.MiB, MountPoint: mountPoint})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("ready %s\n", v.Device())
	// Keep requests in flight, so that the kill finds the FUSE server busy.
	data := make([]byte, cloudvolume.MiB)
	for {
		_ = os.WriteFile(filepath.Join(mountPoint, "busy"), data, 0o644)
	}
}

// TestRecoveryAfterKill kills a process that has a volume open and checks that the next Open
// removes everything it left: the ext4 mount, the loop device's binding, the FUSE mount, the
// backing file and the record.
func TestRecoveryAfterKill(t *testing.T) {
	requireMachine(t)
	mountPoint := t.TempDir()
	device, exited := startAndKillChild(t, mountPoint)
	if left := leftovers(); len(left) == 0 {
		t.Fatal("the killed process left nothing behind, so this test would not notice a recovery that does nothing")
	}
	if _, ok := mountedAt(mountPoint); !ok {
		t.Fatalf("nothing is mounted at %s after the kill: the child did not mount its volume there", mountPoint)
	}

	v := openVolume(t, cloudvolume.GP3, 128*cloudvolume.MiB)
	if source, ok := mountedAt(mountPoint); ok {
		t.Errorf("%s is still mounted at the killed process's mount point %s after the next Open", source, mountPoint)
	}
	if device != v.Device() {
		if backing := backingFile(device); backing != "" {
			t.Errorf("the killed process's loop device %s is still bound to %s after the next Open", device, backing)
		}
	}
	if left := leftovers(); len(left) != 4 {
		t.Errorf("after the next Open, the machine holds more than that volume's FUSE mount, loop device, record and backing directory: %s",
			strings.Join(left, "; "))
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed process has not exited 30 s after the next Open: it still waits for its volume")
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(); len(left) > 0 {
		t.Errorf("after closing every volume, the machine still holds: %s", strings.Join(left, "; "))
	}
}

// startAndKillChild runs a child that opens a volume at mountPoint, SIGKILLs it once the volume is
// ready, and returns the child's loop device and a channel closed once it has exited. It may not
// exit before its volume is undone: a thread of it can wait for the FUSE server it was running.
func startAndKillChild(t *testing.T, mountPoint string) (string, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mountPoint)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("failed to start the child: %v", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	device, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the child did not open its volume (read %q: %v)", line, err)
	}
	time.Sleep(300 * time.Millisecond) // let writes reach the device
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Logf("Killed process %d, which had its volume on %s at %s", cmd.Process.Pid, device, mountPoint)
	return device, exited
}

// leftovers lists what volumes have on this machine: FUSE mounts of the volume file system, loop
// devices bound to files in StateDir, record directories and backing directories.
func leftovers() []string {
	var found []string
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if strings.Contains(line, " fuse.cloudvolume ") {
			found = append(found, "FUSE mount: "+line)
		}
	}
	devices, _ := filepath.Glob("/sys/block/loop*")
	for _, d := range devices {
		if backing := backingFile(filepath.Base(d)); strings.HasPrefix(backing, cloudvolume.StateDir) {
			found = append(found, fmt.Sprintf("loop device %s bound to %s", filepath.Base(d), backing))
		}
	}
	records, _ := filepath.Glob(filepath.Join(cloudvolume.StateDir, "vol-*"))
	backing, _ := filepath.Glob(filepath.Join(cloudvolume.DefaultBackingDir, "dbtune-cloudvolume-*"))
	for _, p := range append(records, backing...) {
		found = append(found, "directory "+p)
	}
	return found
}

func backingFile(device string) string {
	raw, _ := os.ReadFile(fmt.Sprintf("/sys/block/%s/loop/backing_file", filepath.Base(device)))
	return strings.TrimSpace(string(raw))
}

// mountedAt returns the source of the mount at path, if any.
func mountedAt(path string) (string, bool) {
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mountinfo), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && fields[4] == path {
			_, after, _ := strings.Cut(line, " - ")
			if tail := strings.Fields(after); len(tail) > 1 {
				return tail[1], true
			}
		}
	}
	return "", false
}
