package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// pageReportingDir holds the parameters of the kernel's free page reporting, present when a
// balloon device (virtio-balloon with VIRTIO_BALLOON_F_REPORTING) is driving it.
const pageReportingDir = "/sys/module/page_reporting/parameters"

// FreePageReporting describes whether the guest hands its free memory back to the hypervisor.
//
// When it does, a page the kernel allocates from a reported block is unbacked on the host, and its
// first write costs the host a page fault: on the machine this benchmark was written on, a buffered
// 256 MiB write into the page cache runs at ~2.4 GB/s into memory freed moments before and at
// ~0.5 GB/s, with four times the system time, into memory that sat free for a few seconds. Which
// one a run gets depends on what ran before it, so without a remedy it decides a comparison by
// chance. The remedy is warmMemory before every run.
type FreePageReporting struct {
	Active bool `json:"active"`
	// Parameters are the files under /sys/module/page_reporting/parameters, as read at the start.
	Parameters map[string]string `json:"parameters,omitempty"`
	// OrderDuringRun is the page_reporting_order the benchmark ran with, when it raised it (see
	// raiseReportingOrder); the value in Parameters was restored at the end.
	OrderDuringRun string `json:"orderDuringRun,omitempty"`
}

func describePageReporting() FreePageReporting {
	r := FreePageReporting{Active: probe.FreePageReporting("/sys")}
	entries, err := os.ReadDir(pageReportingDir)
	if err != nil {
		return r
	}
	r.Parameters = map[string]string{}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(pageReportingDir, e.Name())); err == nil {
			r.Parameters[e.Name()] = strings.TrimSpace(string(b))
		}
	}
	return r
}

// defaultWarm is 4 GiB, or a quarter of the available memory on a smaller machine. The more
// memory is freed at once, the longer the balloon takes to report all of it, and the run
// allocates while it is still backed. On the machine the benchmark was written on, 2 GiB left
// about a third of the buffered disk writes in the slow mode and 4 GiB none of 12; with more memory
// free later, 4 GiB alone kept only 5 of 12 fast, hence raiseReportingOrder as well.
func defaultWarm() int64 {
	const most = 4 * probe.GiB
	avail := meminfoBytes("MemAvailable")
	if avail <= 0 {
		return most
	}
	return min(most, avail/4)
}

// warmMemory faults in size bytes of anonymous memory and frees it again, untimed, right before a
// run, so that the pages the run then allocates (page cache, the tools' buffers) come from memory
// the hypervisor backs rather than from blocks it reclaimed. Both sides of every comparison get
// it; it changes nothing on a machine without free page reporting except the time it takes.
func warmMemory(size int64) error {
	if size <= 0 {
		return nil
	}
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE|unix.MAP_NORESERVE)
	if err != nil {
		return fmt.Errorf("failed to fault in %d bytes of memory before the run: %w", size, err)
	}
	return unix.Munmap(b)
}

// raiseReportingOrder sets the kernel's page_reporting_order to the largest buddy order for the
// rest of the run, so that the balloon is only handed free blocks of that size (4 MiB on x86)
// rather than 2 MiB ones, and registers the restore of the original value with cl. Together with
// warmMemory this kept 18 of 20 buffered 256 MiB writes in the fast mode on the machine the
// benchmark was written on, where warmMemory alone kept between 5 and 12 of 12, depending on how
// much memory was free. It returns the value set, or "" when there is nothing to raise.
func raiseReportingOrder(cl *Cleanups) (string, error) {
	path := filepath.Join(pageReportingDir, "page_reporting_order")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // a kernel without free page reporting
	}
	if err != nil {
		return "", err
	}
	original := strings.TrimSpace(string(b))
	orders, err := buddyOrders("/proc/buddyinfo")
	if err != nil {
		return "", err
	}
	largest := strconv.Itoa(orders - 1)
	if original == largest {
		return "", nil
	}
	if err := os.WriteFile(path, []byte(largest), 0o644); err != nil {
		return "", fmt.Errorf("failed to set %s to %s (--raise-reporting-order=false leaves it alone): %w", path, largest, err)
	}
	cl.Add(func() error {
		if err := os.WriteFile(path, []byte(original), 0o644); err != nil {
			return fmt.Errorf("failed to restore %s to %s: %w", path, original, err)
		}
		return nil
	})
	return largest, nil
}

// buddyOrders counts the orders the buddy allocator keeps free lists for: the columns of a zone's
// line in /proc/buddyinfo ("Node 0, zone   Normal  12385  9804 …").
func buddyOrders(buddyinfo string) (int, error) {
	b, err := os.ReadFile(buddyinfo)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		_, counts, ok := strings.Cut(line, "zone")
		if f := strings.Fields(counts); ok && len(f) > 1 {
			return len(f) - 1, nil
		}
	}
	return 0, fmt.Errorf("no zone in %s", buddyinfo)
}
