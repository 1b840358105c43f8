package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/test/mariadb"
)

// results is everything the JSON file holds.
type results struct {
	Generated time.Time              `json:"generated"`
	Machine   machine                `json:"machine"`
	Settings  settings               `json:"settings"`
	Variants  map[string]*variant    `json:"variants"`
	Runs      map[string][]runResult `json:"runs"`
	Medians   map[string]summary     `json:"medians"`
	// Comparisons are tmpfs's figures against each other variant's: intervals and verdicts.
	// Files from before they were recorded have none; they are drawn again from the runs.
	Comparisons []comparisonRecord `json:"comparisons,omitempty"`

	order []string
}

type machine struct {
	CPUs   int    `json:"cpus"`
	Kernel string `json:"kernel"`
	// Server is the database server measured, "MySQL 9.7.4"; files from before it was recorded
	// have only MariaDB's version, in MariaDB.
	Server  string `json:"server,omitempty"`
	MariaDB string `json:"mariadb,omitempty"`
	// Image is the database test image's name (hack/images), empty for this machine's packages.
	Image string `json:"image,omitempty"`
}

// server is the measured server's name and version.
func (m machine) server() string {
	if m.Server != "" {
		return m.Server
	}
	return "MariaDB " + m.MariaDB
}

// flavor is the server's name without its version: MariaDB, MySQL.
func (m machine) flavor() string {
	name, _, _ := strings.Cut(m.server(), " ")
	return name
}

type settings struct {
	ServerArgs         []string `json:"serverArgs"`
	ScratchVolumeSize  string   `json:"scratchVolumeSize"`
	Rows               int      `json:"rows"`
	Queries            []string `json:"queries"`
	SlapClients        int      `json:"mysqlslapClients"`
	SlapQueries        int      `json:"mysqlslapQueriesPerRun"`
	MixedSeconds       float64  `json:"mixedSeconds"`
	SysbenchThreads    int      `json:"sysbenchThreads"`
	SysbenchTables     []string `json:"sysbenchTables"`
	MixedTempClients   int      `json:"mixedTempClients"`
	RunsPerMeasurement int      `json:"runsPerMeasurement"`
	// Seed drew the variants' order in each round; files from before it was recorded ran them in
	// a fixed order, tmpfs first.
	Seed       int64 `json:"seed,omitempty"`
	BigSortMiB int   `json:"bigSortMiB,omitempty"`
	// BigSortQuery is the large sort's statement; files from before it was recorded ran
	// legacyBigSortQuery.
	BigSortQuery string `json:"bigSortQuery,omitempty"`
	AlterMiB     int    `json:"alterMiB,omitempty"`
	// SessionTablespaces is the injected variant's spec.mysql.sessionTempTablespaces, when set.
	SessionTablespaces string `json:"sessionTempTablespaces,omitempty"`
	// MemoryLimit is the database container's limits.memory; the buffer pool is in ServerArgs.
	MemoryLimit string `json:"memoryLimit,omitempty"`
	// Reports are the reports workload's settings, when it ran.
	Reports *reportSettings `json:"reports,omitempty"`
}

// reportSettings describe the reports runs: how long each lasted, how many jobs ran at once, and
// what each staged and read.
type reportSettings struct {
	Seconds     float64  `json:"seconds"`
	Clients     int      `json:"clients"`
	StageMiB    int      `json:"stageMiB"`
	HoldSeconds float64  `json:"holdSeconds"`
	Statements  []string `json:"statements"`
}

// reportSettingsFor are cfg's reports settings, nil when the reports workload is skipped.
func reportSettingsFor(cfg config) *reportSettings {
	if cfg.reportsDuration <= 0 {
		return nil
	}
	return &reportSettings{
		Seconds: cfg.reportsDuration.Seconds(), Clients: cfg.reportClients, StageMiB: cfg.reportMiB,
		HoldSeconds: cfg.reportHold.Seconds(), Statements: append(stageStatements(cfg.reportMiB), scanStatement),
	}
}

// bigSortQuery is the large sort the results measured.
func (s settings) bigSortQuery() string {
	if s.BigSortQuery != "" {
		return s.BigSortQuery
	}
	rows := bigSortRows(s.BigSortMiB)
	return fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM (SELECT seq, REPEAT(MD5(seq), 30) AS pad FROM bench.seq_1_to_%d ORDER BY pad LIMIT %d) AS sorted", rows, 2*rows)
}

// summary holds the medians of one variant's runs.
type summary struct {
	TempSeconds          float64 `json:"tempSeconds"`
	TempQueriesPerSecond float64 `json:"tempQueriesPerSecond"`
	TempDeviceWriteMiB   float64 `json:"tempDeviceWriteMiB"`
	BigSortSeconds       float64 `json:"bigSortSeconds,omitempty"`
	BigSortDeviceMiB     float64 `json:"bigSortDeviceWriteMiB,omitempty"`
	BigSortMemoryMiB     float64 `json:"bigSortMemoryPeakMiB,omitempty"`
	AlterSeconds         float64 `json:"alterSeconds,omitempty"`
	AlterDeviceMiB       float64 `json:"alterDeviceWriteMiB,omitempty"`
	AlterRAMSeconds      float64 `json:"alterRAMSeconds,omitempty"`
	AlterRAMDeviceMiB    float64 `json:"alterRAMDeviceWriteMiB,omitempty"`
	AlterMemoryMiB       float64 `json:"alterMemoryPeakMiB,omitempty"`
	AlterRAMMemoryMiB    float64 `json:"alterRAMMemoryPeakMiB,omitempty"`
	MixedTPS             float64 `json:"mixedTransactionsPerSecond"`
	MixedP95Millis       float64 `json:"mixedP95LatencyMillis"`
	MixedP99Millis       float64 `json:"mixedP99LatencyMillis"`
	MixedQueriesPerSec   float64 `json:"mixedTempQueriesPerSecond"`
	MixedDeviceWriteMiB  float64 `json:"mixedDeviceWriteMiB"`
}

func newResults(h *mariadb.Host, cfg config, variants []*variant) *results {
	var u unix.Utsname
	_ = unix.Uname(&u)
	v := h.Server.Version
	r := &results{
		Generated: time.Now().UTC().Truncate(time.Second),
		Machine: machine{
			CPUs: runtime.NumCPU(), Kernel: unix.ByteSliceToString(u.Release[:]),
			Server: fmt.Sprintf("%s %d.%d.%d", h.Server.Flavor, v.Major, v.Minor, v.Patch),
		},
		Settings: settings{
			ServerArgs: serverArgs(cfg, h.Server.Flavor), ScratchVolumeSize: cfg.scratchSize.String(), Rows: cfg.rows,
			Queries: []string{groupQuery, sortQuery}, SlapClients: cfg.clients, SlapQueries: cfg.queries,
			MixedSeconds: cfg.mixedDuration.Seconds(), SysbenchThreads: cfg.sysbenchThreads,
			SysbenchTables: cfg.sysbenchTables(), MixedTempClients: cfg.tempClients, RunsPerMeasurement: cfg.runs,
			BigSortMiB: cfg.bigSortMiB, BigSortQuery: bigSortQuery(cfg.bigSortMiB),
			SessionTablespaces: cfg.sessionTablespaces, AlterMiB: cfg.alterMiB, MemoryLimit: cfg.memoryLimit.String(),
			Reports: reportSettingsFor(cfg),
		},
		Variants: map[string]*variant{},
		Runs:     map[string][]runResult{},
		Medians:  map[string]summary{},
	}
	for _, v := range variants {
		r.Variants[v.name] = v
		r.order = append(r.order, v.name)
	}
	return r
}

func (r *results) add(variant string, run runResult) { r.Runs[variant] = append(r.Runs[variant], run) }

func (r *results) summarize() {
	defer func() { r.Comparisons = r.comparisons() }()
	for name, runs := range r.Runs {
		// A failed run has no figures: the median is of those that completed.
		pick := func(workload string, f func(runResult) float64) float64 {
			var xs []float64
			for _, run := range runs {
				if run.Workload == workload && run.Failed == "" {
					xs = append(xs, f(run))
				}
			}
			return median(xs)
		}
		r.Medians[name] = summary{
			TempSeconds:          pick("temp", func(x runResult) float64 { return x.Seconds }),
			TempQueriesPerSecond: pick("temp", func(x runResult) float64 { return x.QueriesPerSecond }),
			TempDeviceWriteMiB:   pick("temp", func(x runResult) float64 { return x.DeviceWriteMiB }),
			BigSortSeconds:       pick("bigsort", func(x runResult) float64 { return x.Seconds }),
			BigSortDeviceMiB:     pick("bigsort", func(x runResult) float64 { return x.DeviceWriteMiB }),
			BigSortMemoryMiB:     pick("bigsort", func(x runResult) float64 { return x.MemoryPeakMiB }),
			AlterSeconds:         pick("alter", func(x runResult) float64 { return x.Seconds }),
			AlterDeviceMiB:       pick("alter", func(x runResult) float64 { return x.DeviceWriteMiB }),
			AlterRAMSeconds:      pick(alterRAM, func(x runResult) float64 { return x.Seconds }),
			AlterRAMDeviceMiB:    pick(alterRAM, func(x runResult) float64 { return x.DeviceWriteMiB }),
			AlterMemoryMiB:       pick("alter", func(x runResult) float64 { return x.MemoryPeakMiB }),
			AlterRAMMemoryMiB:    pick(alterRAM, func(x runResult) float64 { return x.MemoryPeakMiB }),
			MixedTPS:             pick("mixed", func(x runResult) float64 { return x.TPS }),
			MixedP95Millis:       pick("mixed", func(x runResult) float64 { return x.P95Millis }),
			MixedP99Millis:       pick("mixed", func(x runResult) float64 { return x.P99Millis }),
			MixedQueriesPerSec:   pick("mixed", func(x runResult) float64 { return x.QueriesPerSecond }),
			MixedDeviceWriteMiB:  pick("mixed", func(x runResult) float64 { return x.DeviceWriteMiB }),
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// write saves the JSON and the chart under dir and prints the Markdown section to md.
func (r *results) write(dir string, md io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(dir, r.baseName()+".json")
	if err := os.WriteFile(jsonPath, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	pngPath, err := r.writeChart(dir, r.baseName())
	if err != nil {
		return err
	}
	_, err = io.WriteString(md, r.markdown(pngPath, jsonPath))
	return err
}

// baseName names the results' files: the runs on a cloud-shaped volume apart from those on this
// machine's disk, so that both can sit side by side in one directory, and those of an image's
// server by its flavor and version (mysql-9.7-tmpdir).
func (r *results) baseName() string {
	prefix := "mariadb"
	if r.Machine.Image != "" {
		v := strings.SplitN(strings.TrimPrefix(r.Machine.server(), r.Machine.flavor()+" "), ".", 3)
		prefix = strings.ToLower(r.Machine.flavor()) + "-" + strings.Join(v[:min(2, len(v))], ".")
	}
	if r.Settings.SessionTablespaces != "" {
		prefix += "-session-tablespaces-" + strings.ToLower(r.Settings.SessionTablespaces)
	}
	v := r.Variants["tmpfs"]
	switch {
	case v != nil && v.DataVolume != "" && r.onlyReports():
		profile, _, _ := strings.Cut(v.DataVolume, " ")
		return prefix + "-reports-" + profile
	case v != nil && v.DataVolume != "":
		return prefix + "-cloudvolume"
	}
	return prefix + "-tmpdir"
}

// onlyReports says whether the reports workload is all the results hold.
func (r *results) onlyReports() bool {
	for _, runs := range r.Runs {
		for _, run := range runs {
			if run.Workload != reportsWorkload {
				return false
			}
		}
	}
	return r.hasRuns(reportsWorkload)
}

// writeChart draws the chart to dir/<base>.png and returns that path.
func (r *results) writeChart(dir, base string) (string, error) {
	var png bytes.Buffer
	if err := r.chart().WritePNG(&png); err != nil {
		return "", err
	}
	pngPath := filepath.Join(dir, base+".png")
	return pngPath, os.WriteFile(pngPath, png.Bytes(), 0o644)
}

// readResults reads a results file of the benchmark. Its variants' order is not in the file: they
// are put in the order the benchmark lists them, tmpfs first.
func readResults(path string) (*results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", path, err)
	}
	for _, name := range append(slices.Clone(variantNames), volumeVariant) {
		if r.Variants[name] != nil && len(r.Runs[name]) > 0 {
			r.order = append(r.order, name)
		}
	}
	if len(r.order) < 2 || r.order[0] != "tmpfs" {
		return nil, fmt.Errorf("%s has no runs of tmpfs and another variant: not the benchmark's results", path)
	}
	return &r, nil
}

// mountedWith gives a RAM variant's mount options, for results that recorded them.
func mountedWith(v *variant) string {
	if v.TmpfsOptions == "" {
		return ""
	}
	return ", mounted `" + v.TmpfsOptions + "`"
}

// serverFlag is the -server flag that measured an image's server, "" for this machine's.
func (r *results) serverFlag() string {
	if r.Machine.Image == "" {
		return ""
	}
	return " -server " + r.Machine.Image
}

// markdown is the section for docs/benchmarks.md.
func (r *results) markdown(pngPath, jsonPath string) string {
	if r.onlyReports() {
		return r.reportsMarkdown(pngPath, jsonPath)
	}
	vt := r.Variants["tmpfs"]
	vd := r.Variants["disk"]
	var b strings.Builder
	if vt.DataVolume != "" {
		fmt.Fprintf(&b, "## %s tmpdir on a cloud-shaped volume, in a %s pod\n\n", r.Machine.flavor(), r.Settings.MemoryLimit)
	} else {
		fmt.Fprintf(&b, "## %s tmpdir: tmpfs vs disk\n\n", r.Machine.server())
	}
	fmt.Fprintf(&b, "Measured %s on %d CPUs, Linux %s, %s, by `go run ./test/mariadb/bench%s` (as root). ",
		r.Generated.Format("2006-01-02"), r.Machine.CPUs, r.Machine.Kernel, r.Machine.server(), r.serverFlag())
	fmt.Fprintf(&b, "One StatefulSet, run %d times side by side by the real-server harness with the same server settings (`%s`): ",
		len(r.order), strings.Join(r.Settings.ServerArgs, " "))
	sessions := ""
	if r.Settings.SessionTablespaces != "" {
		sessions = fmt.Sprintf(", `sessionTempTablespaces: %s`", r.Settings.SessionTablespaces)
	}
	fmt.Fprintf(&b, "injected with a %s ScratchVolume%s (tmpdir `%s` on %s%s), ",
		r.Settings.ScratchVolumeSize, sessions, vt.TmpDir, vt.FS, mountedWith(vt))
	if v4 := r.Variants[smallPagesVariant]; v4 != nil {
		fmt.Fprintf(&b, "the same with `spec.largePages: Never` (%s: the kubelet's 4 KiB pages%s), ", smallPagesVariant, mountedWith(v4))
	}
	fmt.Fprintf(&b, "and as written (tmpdir `%s` in the container's writable layer, on %s, %s). ", vd.TmpDir, vd.FS, r.diskVariantPlace())
	fmt.Fprintf(&b, "Runs alternate between the variants, %s.\n\n", r.orderText())
	table := "an on-disk Aria temporary table in tmpdir"
	if r.Machine.flavor() == "MySQL" {
		table = "a TempTable table, in memory up to temptable_max_ram, then in the session temporary tablespace on the RAM volume"
	}
	fmt.Fprintf(&b, "- **temp**: mysqlslap, %d concurrent clients, %d queries over a %d-row table: a GROUP BY on a TEXT column (%s) ordered by an aggregate, and a deep page of a TEXT sort (merging filesort in tmpdir).\n",
		r.Settings.SlapClients, r.Settings.SlapQueries, r.Settings.Rows, table)
	if r.Settings.BigSortMiB > 0 {
		fmt.Fprintf(&b, "- **bigsort**: one query ordering %d MiB of generated rows (`%s`): a filesort merging through temporary files larger than what the kernel lets stay dirty.\n",
			r.Settings.BigSortMiB, r.Settings.bigSortQuery())
	}
	if a := r.Settings.AlterMiB; a > 0 {
		fmt.Fprintf(&b, "- **alter**: `%s` on a table of %d rows, %d MiB of %d-byte keys, an online index build sorting through files in innodb_tmpdir (tmpfs: `%s` on %s, where the operator keeps it; disk: `%s` on %s). **alter-ram**: the same on the tmpfs variant with `SET SESSION innodb_tmpdir` to its RAM volume, what `spec.mysql.innodbTmpdir: Memory` would do.\n",
			addIndex, int64(a)<<20/alterKeyBytes, a, alterKeyBytes, vt.InnoDBTmpDir, vt.InnoDBFS, vd.InnoDBTmpDir, vd.InnoDBFS)
	}
	fmt.Fprintf(&b, "- **mixed**: sysbench oltp_write_only (%d threads, %s, %.0f s; every transaction ends with a commit that fsyncs the redo log, and its latency is the transaction's) while %d clients run the same queries back to back.\n\n",
		r.Settings.SysbenchThreads, strings.Join(r.Settings.SysbenchTables, " "), r.Settings.MixedSeconds, r.Settings.MixedTempClients)
	b.WriteString(r.block())
	if vt.DataVolume != "" {
		fmt.Fprintf(&b, "\nThe data directory is on a cloud-shaped volume, %s, one per pod. Data volume writes are what its block device received during the run, the pod's own writes only; the disk variant's temporary files go to the node's disk instead, whose writes (`nodeDiskWriteMiB` in the JSON) include the cloud volumes' backing files and the rest of the machine and compare with nothing. ", vt.DataVolume)
	} else {
		fmt.Fprintf(&b, "\nData volume writes are the node's disk's, under the data directory, other activity on the machine included. ")
	}
	if v := r.Variants[volumeVariant]; v != nil {
		fmt.Fprintf(&b, "The %s variant keeps tmpdir in the data directory (`%s`), on the data volume. ", volumeVariant, v.TmpDir)
	}
	if vt.MemoryLimitMiB > 0 {
		fmt.Fprintf(&b, "The database container runs in a memory cgroup limited to its limits.memory (%.0f MiB), which is charged for the tmpfs pages and the page cache as a kubelet's would be (OOM kills: %s). ",
			vt.MemoryLimitMiB, r.oomKills())
	}
	fmt.Fprintf(&b, "Every run, chart and raw figure: `%s`, `%s`.\n\n", filepath.Base(pngPath), filepath.Base(jsonPath))
	fmt.Fprintf(&b, "![%s tmpdir on tmpfs vs disk](%s)\n", r.Machine.flavor(), filepath.Base(pngPath))
	return b.String()
}

// orderText says in which order the variants of a round ran.
func (r *results) orderText() string {
	if r.Settings.Seed != 0 {
		return fmt.Sprintf("in an order drawn anew for each round (seed %d)", r.Settings.Seed)
	}
	return "in a fixed order, tmpfs first"
}

// diskVariantPlace says where the as-written variant's tmpdir is relative to the data volume.
func (r *results) diskVariantPlace() string {
	switch {
	case r.Variants["tmpfs"].DataVolume != "":
		return "the node's disk, outside the data volume"
	case r.Variants["disk"].FS == "overlay":
		// An image's container root is an overlay whose upper layer is on this machine's disk.
		return "an overlay whose writable layer is on the node's disk, the disk of the data volume"
	}
	return "the filesystem of the data volume"
}

// oomKills lists the OOM kills of each variant's container.
func (r *results) oomKills() string {
	parts := make([]string, 0, len(r.order))
	for _, name := range r.order {
		parts = append(parts, fmt.Sprintf("%s %d", name, r.Variants[name].OOMKills))
	}
	return strings.Join(parts, ", ")
}

// reportsMarkdown is the section for docs/benchmarks.md of a run of the reports workload alone.
func (r *results) reportsMarkdown(pngPath, jsonPath string) string {
	var b strings.Builder
	rs := r.Settings.Reports
	fmt.Fprintf(&b, "## %s: reports beside a write load, in a %s pod\n\n", r.Machine.server(), r.Settings.MemoryLimit)
	fmt.Fprintf(&b, "Measured %s on %d CPUs, Linux %s, by `go run ./test/mariadb/bench%s` (as root), server settings `%s`, variants %s, %s. ",
		r.Generated.Format("2006-01-02"), r.Machine.CPUs, r.Machine.Kernel, r.serverFlag(), strings.Join(r.Settings.ServerArgs, " "),
		strings.Join(r.order, ", "), r.orderText())
	if rs != nil {
		fmt.Fprintf(&b, "Each run: sysbench oltp_write_only (%d threads, %s) for %.0f s while %d report jobs each stage %d MiB in a temporary table and read it for %.0f s (`%s`).\n\n",
			r.Settings.SysbenchThreads, strings.Join(r.Settings.SysbenchTables, " "), rs.Seconds, rs.Clients, rs.StageMiB, rs.HoldSeconds, strings.Join(rs.Statements, "; "))
	}
	b.WriteString(r.block())
	fmt.Fprintf(&b, "\nEvery run, chart and raw figure: `%s`, `%s`.\n", filepath.Base(pngPath), filepath.Base(jsonPath))
	return b.String()
}
