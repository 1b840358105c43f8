package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat. The kernel reports them in
// this unit whatever its internal tick rate, and it is 100 on every Linux architecture Go supports.
const clockTicks = 100

// ParseProcStatCPU returns the user plus system CPU seconds of /proc/<pid>/stat, all threads
// included. The command name in field 2 may contain spaces and parentheses, so the fields are
// counted from the last closing parenthesis.
func ParseProcStatCPU(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("no command name in /proc/<pid>/stat")
	}
	// After the name come state (field 3), …, utime (field 14) and stime (field 15).
	f := strings.Fields(stat[end+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/<pid>/stat has %d fields after the name, want at least 13", len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("failed to parse the CPU times in /proc/<pid>/stat: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// ParseProcStatusMemory returns VmRSS and VmHWM (peak RSS) of /proc/<pid>/status in bytes.
func ParseProcStatusMemory(r io.Reader) (rss, hwm int64, err error) {
	sc := bufio.NewScanner(r)
	found := 0
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("failed to parse %s in /proc/<pid>/status: %w", key, err)
		}
		if key == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found < 2 {
		return 0, 0, errors.New("no VmRSS or VmHWM in /proc/<pid>/status (a kernel thread, or the process has exited)")
	}
	return rss, hwm, nil
}
