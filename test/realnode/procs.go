package realnode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// killShims kills the runc shims of the node's containerd, found by the containerd address on their
// command line. They run in their own process groups, outside any cgroup of the node, and outlive
// containerd by design; a shim left behind would keep a container's mounts and namespaces alive.
func killShims(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := shimPIDs()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("runc shims %v still run after SIGKILL", pids)
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shimPIDs lists the processes whose command line is a containerd-shim-runc-v2 with the node's
// containerd address. Zombies count as gone.
func shimPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
		if filepath.Base(string(args[0])) != "containerd-shim-runc-v2" {
			continue
		}
		for _, a := range args[1:] {
			if string(a) == containerdSocket {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
