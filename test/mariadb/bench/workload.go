package main

import (
	"context"
	"database/sql"
	"errors"
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

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/bench/method"
	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/mariadb"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// The temporary-table workload: a report grouping on a TEXT column (internal temporary tables with
// BLOBs always go to disk, as Aria tables in tmpdir) ordered by an aggregate, and a deep page of a
// listing sorted on TEXT (a filesort too large for sort_buffer_size, merged through files in tmpdir).
const (
	groupQuery = "SELECT grp, COUNT(*) AS n, MAX(note) AS last FROM bench.docs GROUP BY grp ORDER BY last DESC"
	sortQuery  = "SELECT id, note FROM bench.docs ORDER BY note DESC LIMIT 2000 OFFSET 8000"
)

// serverArgs are the settings every variant runs with: cfg's buffer pool, a modest redo log, enough
// connections for the clients, defaults for everything that decides when temporary data spills.
// The buffer pool is on the command line, where the controller reads it to check that the RAM
// volume fits beside it in the memory limit.
// MySQL gets the same redo log through innodb_redo_log_capacity (innodb_log_file_size is gone in
// 9.7) and its binary log off, as MariaDB has it by default, so that a commit fsyncs the redo log
// only on both.
func serverArgs(cfg config, flavor v1alpha1.MySQLFlavor) []string {
	// performance_schema counts the bytes the server moves through its temporary files (on by
	// default on MySQL, off on MariaDB).
	redo, extra := "--innodb-log-file-size=64M", append(make([]string, 0, 2+len(cfg.extraServerArgs)), "--performance-schema=ON")
	if flavor == v1alpha1.FlavorMySQL {
		redo, extra = "--innodb-redo-log-capacity=64M", append(extra, "--skip-log-bin")
	}
	return append([]string{
		"--skip-networking",
		"--innodb-buffer-pool-size=" + mysqldSize(cfg.bufferPool.Value()),
		redo,
		"--max-connections=300",
		"--innodb-buffer-pool-dump-at-shutdown=OFF",
		"--innodb-buffer-pool-load-at-startup=OFF",
	}, append(extra, cfg.extraServerArgs...)...)
}

// seqRows is a derived table of the integers 1 to n in its column seq, read from bench.seq (made by
// load): MariaDB's sequence engine has no counterpart on MySQL.
func seqRows(n int64) string {
	return fmt.Sprintf("(SELECT seq FROM bench.seq WHERE seq <= %d) AS s", n)
}

// text is an SQL expression of 8*words characters that differs for every seq and sorts in no
// relation to it, in functions both servers have: MySQL 9.7 as Debian builds it has no MD5().
func text(words int) string {
	return fmt.Sprintf("REPEAT(LPAD(HEX(CRC32(seq)), 8, '0'), %d)", words)
}

// mysqldSize writes bytes in mysqld's size syntax, with the largest binary suffix that divides it.
func mysqldSize(bytes int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"G", 30}, {"M", 20}, {"K", 10}} {
		if bytes != 0 && bytes%(1<<u.shift) == 0 {
			return strconv.FormatInt(bytes>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(bytes, 10)
}

// dataDir is where the data volume is mounted and the server keeps its data.
const dataDir = "/var/lib/mysql"

// sysbenchTables sizes sysbench's schema: four tables of cfg.sysbenchTableSize rows.
func (cfg config) sysbenchTables() []string {
	return []string{"--tables=4", "--table-size=" + strconv.Itoa(cfg.sysbenchTableSize)}
}

// variant is one of the two pods compared.
type variant struct {
	name   string
	pod    *mariadb.Pod
	socket string
	// TmpDir is the server's tmpdir and FS the type of filesystem it is on.
	TmpDir string `json:"tmpdir"`
	FS     string `json:"filesystem"`
	// InnoDBTmpDir is where online ALTER TABLE sorts (innodb_tmpdir, tmpdir when empty) and
	// InnoDBFS the type of filesystem it is on.
	InnoDBTmpDir string `json:"innodbTmpdir,omitempty"`
	InnoDBFS     string `json:"innodbTmpdirFilesystem,omitempty"`
	// DataFS is the type of filesystem of the data directory.
	DataFS string `json:"dataFilesystem"`
	// TmpfsOptions are the RAM volume's superblock options as the pod's mount table shows them
	// (size=…, and huge=within_size where the node agent gave it large pages).
	TmpfsOptions string `json:"tmpfsOptions,omitempty"`
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
	// dataDevice is the sysfs statistics file of the block device under the data directory: the
	// cloud-shaped volume, or the node's disk without one. nodeDevice is the node's disk's when
	// that is another device.
	dataDevice, nodeDevice string
	volume                 *cloudvolume.Volume
	// sysbenchTables sizes sysbench's schema (config.sysbenchTables).
	sysbenchTables []string
}

func statefulSet(h *mariadb.Host, cfg config, name string, extraArgs ...string) *appsv1.StatefulSet {
	opts := []testenv.StatefulSetOption{testenv.WithImage(h.Server.Image), testenv.WithArgs(append(serverArgs(cfg, h.Server.Flavor), extraArgs...)...),
		testenv.WithMemoryLimit(cfg.memoryLimit.String()), testenv.WithDataMount(dataDir)}
	if h.Server.Root != "" {
		// The image's entrypoint initializes an empty data directory only when told how root
		// logs in; the benchmark logs in as root over the socket.
		opts = append(opts, testenv.WithEnv(corev1.EnvVar{Name: "MYSQL_ALLOW_EMPTY_PASSWORD", Value: "1"}))
	}
	return testenv.StatefulSet("bench", name, opts...)
}

// scratchVolume is the injected variant's ScratchVolume: ConfigFile, innodb_tmpdir on disk, and
// the session temporary tablespaces where cfg says (empty: the controller's default).
func scratchVolume(target string, cfg config) *v1alpha1.ScratchVolume {
	return &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "scratch"},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: target},
			Size:    cfg.scratchSize,
			Purpose: v1alpha1.PurposeMySQLTmpdir,
			MySQL: &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionConfigFile, InnoDBTmpdir: v1alpha1.InnoDBTmpdirDisk,
				SessionTempTablespaces: v1alpha1.TempTablespacePlacement(cfg.sessionTablespaces)},
			Memory: v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryValidate},
		},
	}
}

// variantNames are the variants every run has, in the order they run: the RAM volume as a
// ScratchVolume runs it (large pages), the same volume as the kubelet mounts it, and the node's
// disk.
var variantNames = []string{"tmpfs", smallPagesVariant, "disk"}

// smallPagesVariant is the RAM volume with spec.largePages Never: the tmpfs as the kubelet mounts
// a memory emptyDir, in 4 KiB pages.
const smallPagesVariant = "tmpfs-4k"

// inRAM tells the variants whose tmpdir is a RAM volume.
func inRAM(name string) bool { return name == "tmpfs" || name == smallPagesVariant }

// volumeVariant keeps tmpdir in the data directory, on the data volume, as many charts and
// operators do: it runs when the data volume is a cloud-shaped one, whose budget the temporary
// files then share with the redo log.
const volumeVariant = "volume"

// variantsFor lists the variants a run with cfg measures: those of cfg.variantList, when it
// names any.
func variantsFor(cfg config) ([]string, error) {
	all := variantNames
	if cfg.volume != "none" {
		all = append(slices.Clone(variantNames), volumeVariant)
	}
	if len(cfg.variantList) == 0 {
		return all, nil
	}
	if !slices.Contains(cfg.variantList, "tmpfs") {
		return nil, errors.New("-variants: every run compares tmpfs with the others, and has it")
	}
	for _, name := range cfg.variantList {
		if !slices.Contains(all, name) {
			return nil, fmt.Errorf("-variants: %q is not a variant of this run (it has %s)", name, strings.Join(all, ", "))
		}
	}
	return cfg.variantList, nil
}

// startVariants starts the injected pod and the pod as written, each on a cloud-shaped data volume
// when cfg asks for one, and loads the same data into both. Each variant is added to out as soon as
// it exists, so that the caller can shut down what was made when a later step fails.
func startVariants(ctx context.Context, h *mariadb.Host, cfg config, out *[]*variant) error {
	names, err := variantsFor(cfg)
	if err != nil {
		return err
	}
	for _, name := range names {
		var extraArgs []string
		if name == volumeVariant {
			extraArgs = append(extraArgs, "--tmpdir="+dataDir)
		}
		sts := statefulSet(h, cfg, "bench-"+name, extraArgs...)
		var svs []*v1alpha1.ScratchVolume
		if inRAM(name) {
			sv := scratchVolume(sts.Name, cfg)
			if name == smallPagesVariant {
				sv.Spec.LargePages = v1alpha1.LargePagesNever
			}
			svs = append(svs, sv)
		}
		pod, err := h.NewPod(sts, svs...)
		if err != nil {
			return err
		}
		v := &variant{name: name, pod: pod, sysbenchTables: cfg.sysbenchTables()}
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
		if inRAM(name) != (v.FS == "tmpfs") {
			return fmt.Errorf("the %s variant's tmpdir %s is on %s", name, v.TmpDir, v.FS)
		}
		if inRAM(name) {
			if v.TmpfsOptions, err = pod.TmpfsOptions(pod.Plans[0].Volume.Name); err != nil {
				return err
			}
			if large := strings.Contains(v.TmpfsOptions, "huge=within_size"); large != (name == "tmpfs") {
				return fmt.Errorf("the %s variant's RAM volume has options %s", name, v.TmpfsOptions)
			}
		}
		if name == "tmpfs" && cfg.alterMiB > 0 {
			// alter-ram needs it, late in the run: find out now whether the server takes it.
			if err := v.tryInnoDBTmpdir(ctx, v.TmpDir); err != nil {
				return err
			}
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
	if err := v.pod.DB().QueryRowContext(ctx, "SELECT COALESCE(NULLIF(@@innodb_tmpdir, ''), @@tmpdir)").Scan(&v.InnoDBTmpDir); err != nil {
		return err
	}
	if v.InnoDBFS, err = fsType(v.pod, v.InnoDBTmpDir); err != nil {
		return err
	}
	if v.DataFS, err = fsType(v.pod, v.pod.DataDir); err != nil {
		return err
	}
	v.dataDevice, v.nodeDevice = blockDevice(v.pod.ClaimDir(dataClaim)), blockDevice(h.Dir())
	if v.nodeDevice == v.dataDevice {
		v.nodeDevice = ""
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
	for _, q := range append(seqLoad(max(int64(cfg.rows), bigSortRows(cfg.bigSortMiB), alterRows(cfg.alterMiB), stageRows(cfg.reportMiB))),
		"CREATE DATABASE sbtest",
		"CREATE TABLE bench.docs (id INT PRIMARY KEY, grp TEXT, note TEXT) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bench.docs SELECT seq, CONCAT('group-', seq %% %d), %s FROM %s", groups, text(40), seqRows(int64(cfg.rows))),
		"ANALYZE TABLE bench.docs",
	) {
		if _, err := v.pod.DB().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	for _, q := range alterTableLoad(cfg.alterMiB) {
		if cfg.alterMiB <= 0 {
			break
		}
		if _, err := v.pod.DB().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("failed to load the table the ALTER indexes: %s: %w", q, err)
		}
	}
	if _, err := v.sysbench(ctx, "prepare"); err != nil {
		return err
	}
	return v.flushDirtyPages(ctx)
}

// seqLoad creates bench and its table of the integers 1 to n, a million rows at a time.
func seqLoad(n int64) []string {
	qs := []string{"CREATE DATABASE bench", "CREATE TABLE bench.seq (seq INT PRIMARY KEY) ENGINE=InnoDB"}
	for base := int64(0); base < n; base += 1_000_000 {
		qs = append(qs, fmt.Sprintf("INSERT INTO bench.seq SELECT %d + seq FROM %s WHERE %d + seq <= %d", base, mariadb.Seq(1_000_000), base, n))
	}
	return qs
}

// Bounds on flushDirtyPages: a few pages stay dirty in a quiet server (its own bookkeeping).
const (
	cleanEnoughPages = 100
	flushTimeout     = 3 * time.Minute
)

// flushDirtyPages writes what loading left dirty in the buffer pool before anything is measured.
// A buffer pool of gigabytes holds all of it, and the first statement that forces a checkpoint (an
// ALTER TABLE does) would otherwise pay for writing it to the volume.
func (v *variant) flushDirtyPages(ctx context.Context) error {
	db := v.pod.DB()
	var pct string
	if err := db.QueryRowContext(ctx, "SELECT @@innodb_max_dirty_pages_pct").Scan(&pct); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	err := waitForDirtyPages(ctx, db, cleanEnoughPages)
	if _, rerr := db.ExecContext(context.WithoutCancel(ctx), "SET GLOBAL innodb_max_dirty_pages_pct = "+pct); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// waitForDirtyPages waits until the buffer pool has at most pages dirty pages.
func waitForDirtyPages(ctx context.Context, db *sql.DB, pages int64) error {
	for {
		var name string
		var dirty int64
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &dirty); err != nil {
			return fmt.Errorf("failed to flush the buffer pool after loading: %w", err)
		}
		if dirty <= pages {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the buffer pool still had %d dirty pages: %w", dirty, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func (v *variant) sysbench(ctx context.Context, args ...string) (string, error) {
	argv := append([]string{"oltp_write_only", "--db-driver=mysql", "--mysql-socket=" + v.socket, "--mysql-user=root",
		"--mysql-db=sbtest"}, v.sysbenchTables...)
	out, err := exec.CommandContext(ctx, "sysbench", append(argv, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sysbench %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// runResult is one run of one workload on one variant.
type runResult struct {
	Workload string `json:"workload"`
	// Round counts the rounds of the workload from 1; Position is the run's place in its round's
	// order, from 1.
	Round    int `json:"round,omitempty"`
	Position int `json:"position,omitempty"`
	// Seconds is how long mysqlslap took for all its queries (temp), or the one large sort took
	// (bigsort).
	Seconds float64 `json:"seconds,omitempty"`
	// QueriesPerSecond counts temporary-table queries completed (temp and mixed).
	QueriesPerSecond float64 `json:"queriesPerSecond"`
	// TPS, P95Millis and P99Millis are sysbench's (mixed).
	TPS       float64 `json:"transactionsPerSecond,omitempty"`
	P95Millis float64 `json:"p95LatencyMillis,omitempty"`
	P99Millis float64 `json:"p99LatencyMillis,omitempty"`
	// Failed is the error of a run that filled the disk or the RAM volume it wrote to: a finding,
	// not a fault of the benchmark, so the other runs go on.
	Failed string `json:"failed,omitempty"`
	// TmpdirMiB is what the server read and wrote through its temporary files over the run, from
	// performance_schema's file I/O of the instruments of tmpdir's files: sort and temporary
	// files (sql/io_cache) and InnoDB's session temporary tablespaces (innodb/innodb_temp_file).
	// MariaDB does not instrument its Aria temporary tables nor, in these versions, its sort
	// files, so there it covers little: IOMiB does.
	TmpdirMiB float64 `json:"tmpdirMiB,omitempty"`
	// IOMiB is what the database container's processes passed through read and write calls over
	// the run (rchar and wchar): its temporary files above all in these workloads, but also the
	// result sets it sent and its InnoDB files.
	IOMiB float64 `json:"ioMiB,omitempty"`
	// TmpDiskTables, TmpFiles and SortMergePasses are the server's counters over the run.
	TmpDiskTables   int64 `json:"createdTmpDiskTables"`
	TmpFiles        int64 `json:"createdTmpFiles"`
	SortMergePasses int64 `json:"sortMergePasses"`
	// DeviceWriteMiB is what the block device under the data directory wrote during the run, from
	// /sys/dev/block/*/stat: exactly the pod's own writes on a cloud-shaped volume; without one,
	// the node's disk, other activity on the machine included.
	DeviceWriteMiB float64 `json:"deviceWriteMiB"`
	// NodeDiskWriteMiB is, with a cloud-shaped volume, what the node's disk wrote: the temporary
	// files of a tmpdir outside the volume, but also the cloud volumes' backing files and the rest
	// of the machine's activity.
	NodeDiskWriteMiB float64 `json:"nodeDiskWriteMiB,omitempty"`
	// MemoryPeakMiB is the highest charge of the container's memory cgroup seen during the run,
	// sampled every memorySampleInterval: the server, the page cache of its files and the tmpfs.
	MemoryPeakMiB float64 `json:"memoryPeakMiB,omitempty"`
	// Reports counts the report jobs that staged, read and dropped their table (reports);
	// StageSeconds is the median time a job took to stage it, and ScanMiBPerSecond how many MiB
	// of staged rows the jobs read per second, together.
	Reports          int64   `json:"reports,omitempty"`
	StageSeconds     float64 `json:"stageSeconds,omitempty"`
	ScanMiBPerSecond float64 `json:"scanMiBPerSecond,omitempty"`
	// VolumeRequestsPerSecond is the rate of requests, reads and writes, the cloud-shaped data
	// volume served over the run (its IOPS), and VolumeReadMiB what it read; files from before
	// they were recorded, and runs without such a volume, have neither.
	VolumeRequestsPerSecond float64 `json:"volumeRequestsPerSecond,omitempty"`
	VolumeReadMiB           float64 `json:"volumeReadMiB,omitempty"`
	// BufferPoolFreePercent is the share of the buffer pool's pages that were free when the run
	// began; files from before it was recorded have none.
	BufferPoolFreePercent *float64 `json:"bufferPoolFreePercent,omitempty"`
	// Conditions are the machine's when the run started; files from before they were recorded
	// have none.
	Conditions *method.Conditions `json:"conditions,omitempty"`
}

// memorySampleInterval is how often a run samples the memory cgroup's charge. The cgroup's own peak
// covers the pod's whole life; the samples tell the workloads apart.
const memorySampleInterval = 100 * time.Millisecond

// bigSortRowBytes is the size of one row of bigSortQuery's result.
const bigSortRowBytes = 960

// bigSortRows is the number of rows of about mib MiB that bigSortQuery orders.
func bigSortRows(mib int) int64 { return int64(mib) << 20 / bigSortRowBytes }

// bigSortQuery orders about mib MiB of generated rows. The derived table's LIMIT, above the row
// count, keeps the ORDER BY from being dropped without turning it into an in-memory top-N; the
// sum keeps the result to one row, so that the client's reading costs nothing.
func bigSortQuery(mib int) string {
	rows := bigSortRows(mib)
	return fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM (SELECT seq, %s AS pad FROM %s ORDER BY pad LIMIT %d) AS sorted",
		text(bigSortRowBytes/8), seqRows(rows), 2*rows)
}

// bigSort times bigSortQuery once.
func (v *variant) bigSort(ctx context.Context, cfg config) (runResult, error) {
	r := runResult{Workload: "bigsort"}
	err := v.measure(ctx, &r, func() error {
		start := time.Now()
		var sum sql.NullInt64
		err := v.pod.DB().QueryRowContext(ctx, bigSortQuery(cfg.bigSortMiB)).Scan(&sum)
		if err := r.settle(err, start); err != nil {
			return fmt.Errorf("the large sort: %w", err)
		}
		return nil
	})
	return r, err
}

// settle records the time since start of a statement that ended with err, or, when err says the
// statement's temporary files filled their filesystem, its failure; it returns any other error.
func (r *runResult) settle(err error, start time.Time) error {
	switch {
	case err == nil:
		r.Seconds = time.Since(start).Seconds()
	case filledUp(err):
		r.Failed = err.Error()
	default:
		return err
	}
	return nil
}

// filledUp says whether a server error reports a full filesystem or table: the answer of a RAM
// volume too small for the statement, which gets ENOSPC where a disk would have had room.
func filledUp(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 3, 1021, 1030, 1114, 1878: // error writing a file, disk full, errno from the engine, table full, temporary file write failure
		return true
	}
	return false
}

// brief is a run's figures in a few words, for the progress lines.
func (r runResult) brief() string {
	switch {
	case r.Failed != "":
		return "failed: " + r.Failed
	case r.Workload == reportsWorkload:
		return fmt.Sprintf("%.0f tps, p99 %.1f ms, %d reports, staged in %.1f s, %.0f MiB/s scanned, %.1f MiB written, %.1f MiB read, %.0f requests/s",
			r.TPS, r.P99Millis, r.Reports, r.StageSeconds, r.ScanMiBPerSecond, r.DeviceWriteMiB, r.VolumeReadMiB, r.VolumeRequestsPerSecond)
	case r.Workload == "mixed":
		return fmt.Sprintf("%.0f tps, p95 %.1f ms, p99 %.1f ms", r.TPS, r.P95Millis, r.P99Millis)
	}
	return fmt.Sprintf("%.2f s, %.1f MiB written", r.Seconds, r.DeviceWriteMiB)
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
	free := bufferPoolFreePercent(before)
	r.BufferPoolFreePercent = &free
	data, node := deviceWritten(v.dataDevice), deviceWritten(v.nodeDevice)
	ioRead, ioWritten, err := v.pod.IOBytes()
	if err != nil {
		return err
	}
	volumeBefore, began := v.volumeStats(), time.Now()
	stopWatching := v.watchMemory()
	err = workload()
	r.MemoryPeakMiB = float64(stopWatching()) / (1 << 20)
	if err != nil {
		return err
	}
	r.recordVolume(volumeBefore, v.volumeStats(), time.Since(began))
	r.DeviceWriteMiB = float64(deviceWritten(v.dataDevice)-data) / (1 << 20)
	if v.nodeDevice != "" {
		r.NodeDiskWriteMiB = float64(deviceWritten(v.nodeDevice)-node) / (1 << 20)
	}
	after, err := v.counters(ctx)
	if err != nil {
		return err
	}
	r.TmpdirMiB = float64(after[tmpdirBytes]-before[tmpdirBytes]) / (1 << 20)
	if read, written, err := v.pod.IOBytes(); err == nil {
		r.IOMiB = float64(read+written-ioRead-ioWritten) / (1 << 20)
	}
	r.TmpDiskTables = after["Created_tmp_disk_tables"] - before["Created_tmp_disk_tables"]
	r.TmpFiles = after["Created_tmp_files"] - before["Created_tmp_files"]
	r.SortMergePasses = after["Sort_merge_passes"] - before["Sort_merge_passes"]
	return nil
}

// volumeStats are the cloud-shaped data volume's counters, nil without one.
func (v *variant) volumeStats() *cloudvolume.Stats {
	if v.volume == nil {
		return nil
	}
	s := v.volume.Stats()
	return &s
}

// recordVolume notes the requests the cloud-shaped volume served over a run of length d, and the
// bytes it read, from its counters before and after; nothing without a volume.
func (r *runResult) recordVolume(before, after *cloudvolume.Stats, d time.Duration) {
	if before == nil || after == nil || d <= 0 {
		return
	}
	requests := float64(after.Reads + after.Writes - before.Reads - before.Writes)
	r.VolumeRequestsPerSecond = requests / d.Seconds()
	r.VolumeReadMiB = float64(after.ReadBytes-before.ReadBytes) / (1 << 20)
}

// watchMemory samples the container's memory charge until stop is called, which returns the
// highest sample in bytes.
func (v *variant) watchMemory() (stop func() int64) {
	done, peak := make(chan struct{}), make(chan int64, 1)
	go func() {
		tick := time.NewTicker(memorySampleInterval)
		defer tick.Stop()
		var highest int64
		for {
			if u, err := v.pod.MemoryUsage(); err == nil {
				highest = max(highest, u.CurrentBytes)
			}
			select {
			case <-done:
				peak <- highest
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		return <-peak
	}
}

// tmpdirBytes is the key of counters' sum of performance_schema's temporary-file I/O.
const tmpdirBytes = "tmpdir bytes"

// tmpdirInstruments are the performance_schema file instruments of the files in tmpdir.
const tmpdirInstruments = "'wait/io/file/sql/io_cache', 'wait/io/file/innodb/innodb_temp_file'"

func (v *variant) counters(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	var moved int64
	if err := v.pod.DB().QueryRowContext(ctx, "SELECT COALESCE(SUM(SUM_NUMBER_OF_BYTES_READ + SUM_NUMBER_OF_BYTES_WRITE), 0)"+
		" FROM performance_schema.file_summary_by_event_name WHERE EVENT_NAME IN ("+tmpdirInstruments+")").Scan(&moved); err != nil {
		return nil, fmt.Errorf("failed to read performance_schema's temporary-file I/O: %w", err)
	}
	out[tmpdirBytes] = moved
	rows, err := v.pod.DB().QueryContext(ctx,
		"SHOW GLOBAL STATUS WHERE Variable_name IN ('Created_tmp_disk_tables', 'Created_tmp_files', 'Sort_merge_passes', "+
			"'Innodb_buffer_pool_pages_free', 'Innodb_buffer_pool_pages_total')")
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
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

// deviceWritten is the bytes a device has written since boot (or since a loop device was bound),
// or 0 for "", no device.
func deviceWritten(statFile string) int64 {
	if statFile == "" {
		return 0
	}
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
