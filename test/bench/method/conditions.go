package method

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Conditions are what the machine was like when a run started: what can make the same benchmark
// give other figures on another day. A benchmark records them with every run.
type Conditions struct {
	Time     time.Time `json:"time"`
	CPUModel string    `json:"cpuModel"`
	Kernel   string    `json:"kernel"`
	// Cgroup is the version of the memory cgroup hierarchy: v2, or v1, where writeback is not
	// charged to the cgroup that dirtied the pages ("v1 (hybrid)" when a v2 hierarchy is mounted
	// beside it without the memory controller).
	Cgroup string `json:"cgroup"`
	// The kernel's writeback settings (/proc/sys/vm): how much dirty page cache it lets
	// accumulate, and after how long it writes it back.
	DirtyRatio              int `json:"vmDirtyRatio"`
	DirtyBackgroundRatio    int `json:"vmDirtyBackgroundRatio"`
	DirtyExpireCentisecs    int `json:"vmDirtyExpireCentisecs"`
	DirtyWritebackCentisecs int `json:"vmDirtyWritebackCentisecs"`
	// LoadAverage1m is the 1-minute load average: other work on a shared machine.
	LoadAverage1m     float64 `json:"loadAverage1m"`
	MemAvailableBytes int64   `json:"memAvailableBytes"`
	// Versions are the tools and servers the benchmark ran, by name, as the caller gives them.
	Versions map[string]string `json:"versions,omitempty"`
	// Unreadable lists what could not be read; its figures above are zero.
	Unreadable []string `json:"unreadable,omitempty"`
}

// Record reads the conditions of this machine now. versions are added as they are.
func Record(versions map[string]string) Conditions {
	return RecordAt("/", time.Now(), versions)
}

// RecordAt reads the conditions from the /proc and /sys under root, at the time now.
func RecordAt(root string, now time.Time, versions map[string]string) Conditions {
	r := reader{root: root}
	c := Conditions{
		Time:     now.UTC().Truncate(time.Millisecond),
		CPUModel: r.cpuModel(),
		Kernel:   r.line("proc/sys/kernel/osrelease"),
		Cgroup:   r.cgroup(),
		Versions: versions,
	}
	c.DirtyRatio = r.integer("proc/sys/vm/dirty_ratio")
	c.DirtyBackgroundRatio = r.integer("proc/sys/vm/dirty_background_ratio")
	c.DirtyExpireCentisecs = r.integer("proc/sys/vm/dirty_expire_centisecs")
	c.DirtyWritebackCentisecs = r.integer("proc/sys/vm/dirty_writeback_centisecs")
	c.LoadAverage1m = r.load()
	c.MemAvailableBytes = r.memAvailable()
	c.Unreadable = r.missing
	return c
}

// reader reads files under root and notes those it could not read.
type reader struct {
	root    string
	missing []string
}

func (r *reader) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		r.missing = append(r.missing, "/"+rel)
		return ""
	}
	return string(b)
}

func (r *reader) line(rel string) string { return strings.TrimSpace(r.read(rel)) }

func (r *reader) integer(rel string) int {
	s := r.line(rel)
	n, err := strconv.Atoi(s)
	if err != nil && s != "" {
		r.missing = append(r.missing, "/"+rel)
	}
	return n
}

// cpuModel is the first "model name" of /proc/cpuinfo, or its "Hardware" where there is none.
func (r *reader) cpuModel() string {
	info := r.read("proc/cpuinfo")
	for _, key := range []string{"model name", "Hardware"} {
		for _, line := range strings.Split(info, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}

// cgroup tells v2 (cgroup.controllers at the root of /sys/fs/cgroup) from v1.
func (r *reader) cgroup() string {
	dir := filepath.Join(r.root, "sys", "fs", "cgroup")
	if _, err := os.Stat(filepath.Join(dir, "cgroup.controllers")); err == nil {
		return "v2"
	}
	if _, err := os.Stat(dir); err != nil {
		r.missing = append(r.missing, "/sys/fs/cgroup")
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "unified", "cgroup.controllers")); err == nil {
		return "v1 (hybrid)"
	}
	return "v1"
}

func (r *reader) load() float64 {
	f := strings.Fields(r.read("proc/loadavg"))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func (r *reader) memAvailable() int64 {
	for _, line := range strings.Split(r.read("proc/meminfo"), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kib, _ := strconv.ParseInt(f[0], 10, 64)
				return kib << 10
			}
		}
	}
	return 0
}

// Summary describes the conditions of many runs in one line: what every run shared, and the
// range of what changed between them. A benchmark prints it beside its figures.
func Summary(cs []Conditions) string {
	if len(cs) == 0 {
		return "conditions not recorded"
	}
	var loads, avail []float64
	for _, c := range cs {
		loads, avail = append(loads, c.LoadAverage1m), append(avail, float64(c.MemAvailableBytes)/(1<<30))
	}
	parts := []string{
		distinct(cs, func(c Conditions) string { return c.CPUModel }),
		"Linux " + distinct(cs, func(c Conditions) string { return c.Kernel }),
		"cgroup " + distinct(cs, func(c Conditions) string { return c.Cgroup }),
		"vm.dirty_ratio " + distinct(cs, func(c Conditions) string { return strconv.Itoa(c.DirtyRatio) }) +
			", dirty_background_ratio " + distinct(cs, func(c Conditions) string { return strconv.Itoa(c.DirtyBackgroundRatio) }) +
			", dirty_expire_centisecs " + distinct(cs, func(c Conditions) string { return strconv.Itoa(c.DirtyExpireCentisecs) }) +
			", dirty_writeback_centisecs " + distinct(cs, func(c Conditions) string { return strconv.Itoa(c.DirtyWritebackCentisecs) }),
		"load average (1 min) " + span(loads, 2),
		"memory available " + span(avail, 1) + " GiB",
	}
	return strings.Join(parts, "; ")
}

// distinct lists the different values of f over cs, in the order they first appear.
func distinct(cs []Conditions, f func(Conditions) string) string {
	var seen []string
	for _, c := range cs {
		if v := f(c); !slices.Contains(seen, v) {
			seen = append(seen, v)
		}
	}
	if len(seen) > 1 {
		return strings.Join(seen, " / ") + " (changed between runs)"
	}
	return seen[0]
}

// span is "lo–hi" of xs with the given decimals, or one figure when they are all the same.
func span(xs []float64, decimals int) string {
	lo, hi := strconv.FormatFloat(slices.Min(xs), 'f', decimals, 64), strconv.FormatFloat(slices.Max(xs), 'f', decimals, 64)
	if lo == hi {
		return lo
	}
	return lo + "–" + hi
}
