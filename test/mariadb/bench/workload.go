package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

// The temporary-table workload: a report grouping on a TEXT column (internal temporary tables with
// BLOBs always go to disk, as Aria tables in tmpdir) ordered by an aggregate, and a deep page of a
// listing sorted on TEXT (a filesort too large for sort_buffer_size, merged through files in tmpdir).
const (
	groupQuery = "SELECT grp, COUNT(*) AS n, MAX(note) AS last FROM bench.docs GROUP BY grp ORDER BY last DESC"
	sortQuery  = "SELECT id, note FROM bench.docs ORDER BY note DESC LIMIT 2000 OFFSET 8000"
)

// serverArgs are the settings both variants run with: a modest buffer pool and redo log, enough
// connections for the clients, defaults for everything that decides when temporary data spills.
var serverArgs = []string{
	"--skip-networking",
	"--innodb-buffer-pool-size=256M",
	"--innodb-log-file-size=64M",
	"--max-connections=300",
	"--innodb-buffer-pool-dump-at-shutdown=OFF",
	"--innodb-buffer-pool-load-at-startup=OFF",
}

// dataDir is where the data volume is mounted and the server keeps its data.
const dataDir = "/var/lib/mysql"

// sysbenchTables sizes sysbench's schema.
var sysbenchTables = []string{"--tables=4", "--table-size=10000"}

// variant is one of the two pods compared.
type variant struct {
	name   string
	pod    *mariadb.Pod
	socket string
	// TmpDir is the server's tmpdir and FS the type of filesystem it is on.
	TmpDir string `json:"tmpdir"`
	FS     string `json:"filesystem"`
	// DataFS is the type of filesystem of the data directory.
	DataFS string `json:"dataFilesystem"`
	// DataVolume is the profile of the cloud-shaped volume the data directory is on, if any.
	DataVolume string `json:"dataVolume,omitempty"`
	// DataVolumeWriteMiB is what reached that volume's device during the whole benchmark, loading
	// and warm-up included.
	DataVolumeWriteMiB float64 `json:"dataVolumeWriteMiB,omitempty"`
	// MemoryPeakMiB is the highest charge of the database container's memory cgroup (its
	// limits.memory), and MemoryLimitMiB that limit.
	MemoryPeakMiB  float64 `json:"memoryPeakMiB"`
	MemoryLimitMiB float64 `json:"memoryLimitMiB"`
	// OOMKills counts the container's processes the kernel killed for reaching the limit.
	OOMKills int64 `json:"oomKills,omitempty"`
	// devices are the sysfs statistics files of the block devices the pod writes to: the machine's
	// disk and, when it has one, its cloud-shaped data volume.
	devices []string
	volume  *cloudvolume.Volume
}

func statefulSet(h *mariadb.Host, name string, extraArgs ...string) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/name": name}
	v := h.Server.Version
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "mariadb",
					Image: fmt.Sprintf("mariadb:%d.%d", v.Major, v.Minor),
					Args:  append(slices.Clone(serverArgs), extraArgs...),
					Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: dataClaim, MountPath: dataDir}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: dataClaim}}},
		},
	}
}

func scratchVolume(target string) *v1alpha1.ScratchVolume {
	return &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "scratch"},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: target},
			Size:    resource.MustParse("2Gi"),
			Purpose: v1alpha1.PurposeMySQLTmpdir,
			MySQL:   &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionConfigFile, InnoDBTmpdir: v1alpha1.InnoDBTmpdirDisk},
			Memory:  v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryValidate},
		},
	}
}

// variantNames are the variants every run has, in the order they run.
var variantNames = []string{"tmpfs", "disk"}

// volumeVariant keeps tmpdir in the data directory, on the data volume, as many charts and
// operators do: it runs when the data volume is a cloud-shaped one, whose budget the temporary
// files then share with the redo log.
const volumeVariant = "volume"

// variantsFor lists the variants a run with cfg measures.
func variantsFor(cfg config) []string {
	if cfg.volume == "none" {
		return variantNames
	}
	return append(slices.Clone(variantNames), volumeVariant)
}

// startVariants starts the injected pod and the pod as written, each on a cloud-shaped data volume
// when cfg asks for one, and loads the same data into both. Each variant is added to out as soon as
// it exists, so that the caller can shut down what was made when a later step fails.
func startVariants(ctx context.Context, h *mariadb.Host, cfg config, out *[]*variant) error {
	for _, name := range variantsFor(cfg) {
		var extraArgs []string
		if name == volumeVariant {
			extraArgs = append(extraArgs, "--tmpdir="+dataDir)
		}
		sts := statefulSet(h, "bench-"+name, extraArgs...)
		var svs []*v1alpha1.ScratchVolume
		if name == "tmpfs" {
			svs = append(svs, scratchVolume(sts.Name))
		}
		pod, err := h.NewPod(sts, svs...)
		if err != nil {
			return err
		}
		v := &variant{name: name, pod: pod}
		*out = append(*out, v)
		if err := v.attachVolume(cfg); err != nil {
			return err
		}
		if err := pod.Start(ctx); err != nil {
			return err
		}
		if err := v.inspect(ctx, h); err != nil {
			return err
		}
		if (name == "tmpfs") != (v.FS == "tmpfs") {
			return fmt.Errorf("the %s variant's tmpdir %s is on %s", name, v.TmpDir, v.FS)
		}
		if err := v.load(ctx, cfg); err != nil {
			return fmt.Errorf("failed to load the %s variant: %w", name, err)
		}
	}
	return nil
}

// attachVolume puts the variant's data claim on a cloud-shaped volume when cfg.volume names one.
func (v *variant) attachVolume(cfg config) error {
	p, ok, err := profileFor(cfg.volume)
	if err != nil || !ok {
		return err
	}
	if v.volume, err = attachDataVolume(v.pod, p, cfg.volumeSize<<30); err != nil {
		return err
	}
	v.DataVolume = p.String()
	return nil
}

// recordUsage notes what the variant's container was charged and what reached its data volume.
func (v *variant) recordUsage() error {
	u, err := v.pod.MemoryUsage()
	if err != nil {
		return fmt.Errorf("failed to read the %s variant's memory cgroup: %w", v.name, err)
	}
	v.MemoryPeakMiB, v.MemoryLimitMiB, v.OOMKills = float64(u.PeakBytes)/(1<<20), float64(u.LimitBytes)/(1<<20), u.OOMKills
	if v.volume != nil {
		v.DataVolumeWriteMiB = float64(v.volume.Stats().WriteBytes) / (1 << 20)
	}
	return nil
}

// inspect records where the server keeps its temporary files and data.
func (v *variant) inspect(ctx context.Context, h *mariadb.Host) error {
	var err error
	if v.socket, err = v.pod.Socket(); err != nil {
		return err
	}
	if err := v.pod.DB().QueryRowContext(ctx, "SELECT @@tmpdir").Scan(&v.TmpDir); err != nil {
		return err
	}
	if v.FS, err = fsType(v.pod, v.TmpDir); err != nil {
		return err
	}
	if v.DataFS, err = fsType(v.pod, v.pod.DataDir); err != nil {
		return err
	}
	v.devices = nil
	for _, dir := range []string{h.Dir(), v.pod.ClaimDir(dataClaim)} {
		if d := blockDevice(dir); d != "" && !slices.Contains(v.devices, d) {
			v.devices = append(v.devices, d)
		}
	}
	return nil
}

func fsType(pod *mariadb.Pod, dir string) (string, error) {
	p, err := pod.Path(dir)
	if err != nil {
		return "", err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return "", err
	}
	switch st.Type {
	case unix.TMPFS_MAGIC:
		return "tmpfs", nil
	case unix.EXT4_SUPER_MAGIC:
		return "ext4", nil
	case unix.XFS_SUPER_MAGIC:
		return "xfs", nil
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs", nil
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay", nil
	}
	return fmt.Sprintf("%#x", st.Type), nil
}

// load creates the table the temporary-table queries read and sysbench's tables.
func (v *variant) load(ctx context.Context, cfg config) error {
	groups := max(cfg.rows/4, 1)
	for _, q := range []string{
		"CREATE DATABASE bench",
		"CREATE DATABASE sbtest",
		"CREATE TABLE bench.docs (id INT PRIMARY KEY, grp TEXT, note TEXT) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bench.docs SELECT seq, CONCAT('group-', seq %% %d), REPEAT(MD5(seq), 10) FROM bench.seq_1_to_%d", groups, cfg.rows),
		"ANALYZE TABLE bench.docs",
	} {
		if _, err := v.pod.DB().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	_, err := v.sysbench(ctx, "prepare")
	return err
}

func (v *variant) sysbench(ctx context.Context, args ...string) (string, error) {
	argv := append([]string{"oltp_write_only", "--db-driver=mysql", "--mysql-socket=" + v.socket, "--mysql-user=root",
		"--mysql-db=sbtest"}, sysbenchTables...)
	out, err := exec.CommandContext(ctx, "sysbench", append(argv, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sysbench %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// runResult is one run of one workload on one variant.
type runResult struct {
	Workload string `json:"workload"`
	// Seconds is how long mysqlslap took for all its queries (temp), or the one large sort took
	// (bigsort).
	Seconds float64 `json:"seconds,omitempty"`
	// QueriesPerSecond counts temporary-table queries completed (temp and mixed).
	QueriesPerSecond float64 `json:"queriesPerSecond"`
	// TPS, P95Millis and P99Millis are sysbench's (mixed).
	TPS       float64 `json:"transactionsPerSecond,omitempty"`
	P95Millis float64 `json:"p95LatencyMillis,omitempty"`
	P99Millis float64 `json:"p99LatencyMillis,omitempty"`
	// TmpDiskTables, TmpFiles and SortMergePasses are the server's counters over the run.
	TmpDiskTables   int64 `json:"createdTmpDiskTables"`
	TmpFiles        int64 `json:"createdTmpFiles"`
	SortMergePasses int64 `json:"sortMergePasses"`
	// DeviceWriteMiB is what the block device under the data volume wrote during the run, from
	// /sys/dev/block/*/stat: the whole device, other activity included.
	DeviceWriteMiB float64 `json:"deviceWriteMiB"`
}

// bigSortRowBytes is the size of one row of bigSortQuery's result.
const bigSortRowBytes = 960

// bigSortQuery orders about mib MiB of generated rows. The derived table's LIMIT, above the row
// count, keeps the ORDER BY from being dropped without turning it into an in-memory top-N; the
// sum keeps the result to one row, so that the client's reading costs nothing.
func bigSortQuery(mib int) string {
	rows := int64(mib) << 20 / bigSortRowBytes
	return fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM (SELECT seq, REPEAT(MD5(seq), 30) AS pad FROM bench.seq_1_to_%d ORDER BY pad LIMIT %d) AS sorted",
		rows, 2*rows)
}

// bigSort times bigSortQuery once.
func (v *variant) bigSort(ctx context.Context, cfg config) (runResult, error) {
	r := runResult{Workload: "bigsort"}
	err := v.measure(ctx, &r, func() error {
		start := time.Now()
		var sum sql.NullInt64
		if err := v.pod.DB().QueryRowContext(ctx, bigSortQuery(cfg.bigSortMiB)).Scan(&sum); err != nil {
			return fmt.Errorf("the large sort: %w", err)
		}
		r.Seconds = time.Since(start).Seconds()
		return nil
	})
	return r, err
}

var slapSeconds = regexp.MustCompile(`Average number of seconds to run all queries: ([0-9.]+) seconds`)

// temp runs mysqlslap: cfg.clients clients sharing cfg.queries queries, half of each kind.
func (v *variant) temp(ctx context.Context, cfg config) (runResult, error) {
	r := runResult{Workload: "temp"}
	err := v.measure(ctx, &r, func() error {
		out, err := exec.CommandContext(ctx, "mysqlslap", "--socket="+v.socket, "--user=root", "--create-schema=bench", "--no-drop",
			"--iterations=1", "--concurrency="+strconv.Itoa(cfg.clients), "--number-of-queries="+strconv.Itoa(cfg.queries),
			"--delimiter=;", "--query="+groupQuery+";"+sortQuery).CombinedOutput()
		if err != nil {
			return fmt.Errorf("mysqlslap: %w\n%s", err, out)
		}
		m := slapSeconds.FindSubmatch(out)
		if m == nil {
			return fmt.Errorf("mysqlslap printed no timing:\n%s", out)
		}
		r.Seconds, _ = strconv.ParseFloat(string(m[1]), 64)
		if r.Seconds > 0 {
			r.QueriesPerSecond = float64(cfg.queries) / r.Seconds
		}
		return nil
	})
	return r, err
}

// mixed runs sysbench oltp_write_only while cfg.tempClients clients run the temporary-table
// queries back to back; each finishes its query in progress when sysbench is done.
func (v *variant) mixed(ctx context.Context, cfg config) (runResult, error) {
	r := runResult{Workload: "mixed"}
	err := v.measure(ctx, &r, func() error {
		var stop atomic.Bool
		var done atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for i := range cfg.tempClients {
			q := []string{groupQuery, sortQuery}[i%2]
			wg.Go(func() {
				for !stop.Load() {
					if drain(ctx, v.pod.DB(), q) == nil {
						done.Add(1)
					}
				}
			})
		}
		out, err := v.sysbench(ctx, "--threads="+strconv.Itoa(cfg.sysbenchThreads), "--time="+strconv.Itoa(int(cfg.mixedDuration.Seconds())),
			"--report-interval=0", "--histogram=on", "run")
		stop.Store(true)
		wg.Wait()
		r.QueriesPerSecond = float64(done.Load()) / time.Since(start).Seconds()
		if err != nil {
			return err
		}
		return parseSysbench(out, &r)
	})
	return r, err
}

// measure runs a workload between two readings of the server's temporary-data counters and of the
// block device's writes.
func (v *variant) measure(ctx context.Context, r *runResult, workload func() error) error {
	before, err := v.counters(ctx)
	if err != nil {
		return err
	}
	written := deviceWrites(v.devices)
	if err := workload(); err != nil {
		return err
	}
	r.DeviceWriteMiB = float64(deviceWrites(v.devices)-written) / (1 << 20)
	after, err := v.counters(ctx)
	if err != nil {
		return err
	}
	r.TmpDiskTables = after["Created_tmp_disk_tables"] - before["Created_tmp_disk_tables"]
	r.TmpFiles = after["Created_tmp_files"] - before["Created_tmp_files"]
	r.SortMergePasses = after["Sort_merge_passes"] - before["Sort_merge_passes"]
	return nil
}

func (v *variant) counters(ctx context.Context) (map[string]int64, error) {
	rows, err := v.pod.DB().QueryContext(ctx,
		"SHOW GLOBAL STATUS WHERE Variable_name IN ('Created_tmp_disk_tables', 'Created_tmp_files', 'Sort_merge_passes')")
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}

// drain runs a query and reads all its rows, as a client showing a report does.
func drain(ctx context.Context, db *sql.DB, query string) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
	}
	return rows.Err()
}

var (
	sysbenchTPS    = regexp.MustCompile(`transactions:\s+\d+\s+\(([0-9.]+) per sec\.\)`)
	histogramEntry = regexp.MustCompile(`(?m)^\s*([0-9.]+) \|\**\s+(\d+)$`)
)

// parseSysbench reads transactions per second and the 95th and 99th percentile latencies, the
// latter from the latency histogram (sysbench prints only one percentile).
func parseSysbench(out string, r *runResult) error {
	m := sysbenchTPS.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("sysbench printed no transaction rate:\n%s", out)
	}
	r.TPS, _ = strconv.ParseFloat(m[1], 64)
	var values []float64
	var counts []int64
	for _, e := range histogramEntry.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(e[1], 64)
		n, _ := strconv.ParseInt(e[2], 10, 64)
		values, counts = append(values, v), append(counts, n)
	}
	if len(values) == 0 {
		return fmt.Errorf("sysbench printed no latency histogram:\n%s", out)
	}
	r.P95Millis = percentile(values, counts, 0.95)
	r.P99Millis = percentile(values, counts, 0.99)
	return nil
}

// percentile is the smallest histogram value at or below which a fraction p of the counts lie.
func percentile(values []float64, counts []int64, p float64) float64 {
	var total int64
	for _, n := range counts {
		total += n
	}
	var seen int64
	for i, n := range counts {
		seen += n
		if float64(seen) >= p*float64(total) {
			return values[i]
		}
	}
	return slices.Max(values)
}

// blockDevice finds the sysfs statistics file of the device holding dir, or "" when there is none
// (a filesystem on no block device).
func blockDevice(dir string) string {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return ""
	}
	p := fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(st.Dev), unix.Minor(st.Dev))
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// deviceWrites is the bytes the devices have written since boot (or since a loop device was bound).
func deviceWrites(statFiles []string) int64 {
	var total int64
	for _, f := range statFiles {
		total += deviceWritten(f)
	}
	return total
}

func deviceWritten(statFile string) int64 {
	raw, err := os.ReadFile(statFile)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) < 7 {
		return 0
	}
	sectors, _ := strconv.ParseInt(f[6], 10, 64)
	return sectors * 512
}
