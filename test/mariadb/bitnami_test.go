package mariadb_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

// mariadbChartMyCnf is the Bitnami MariaDB chart's primary my.cnf (its ConfigMap, mounted as the
// start script's defaults file), without basedir and plugin_dir, which point into the image, and
// log-error, so that the server's errors reach the container's log; with a small buffer pool and
// redo log, so that the server starts quickly.
const mariadbChartMyCnf = `[mysqld]
skip-name-resolve
explicit_defaults_for_timestamp
datadir=/bitnami/mariadb/data
port=3306
socket=/opt/bitnami/mariadb/tmp/mysql.sock
tmpdir=/opt/bitnami/mariadb/tmp
max_allowed_packet=16M
bind-address=*
pid-file=/opt/bitnami/mariadb/tmp/mysqld.pid
character-set-server=UTF8
collation-server=utf8_general_ci
slow_query_log=0
long_query_time=10.0
innodb_buffer_pool_size=32M
innodb_log_file_size=16M

[client]
port=3306
socket=/opt/bitnami/mariadb/tmp/mysql.sock
default-character-set=UTF8
`

// mysqlChartMyCnf is the Bitnami MySQL chart's primary my.cnf, cut and sized the same way, with
// utf8mb4 for the chart's UTF8: MySQL 9.7 refuses to start on 'utf8' given as an option ("Character
// set 'utf8' rejected as command line option").
const mysqlChartMyCnf = `[mysqld]
authentication_policy='* ,,'
skip-name-resolve
explicit_defaults_for_timestamp
port=3306
mysqlx=0
mysqlx_port=33060
socket=/opt/bitnami/mysql/tmp/mysql.sock
datadir=/bitnami/mysql/data
tmpdir=/opt/bitnami/mysql/tmp
max_allowed_packet=16M
bind-address=*
pid-file=/opt/bitnami/mysql/tmp/mysqld.pid
character-set-server=utf8mb4
slow_query_log=0
long_query_time=10.0
innodb_buffer_pool_size=32M
innodb_redo_log_capacity=16M

[client]
port=3306
socket=/opt/bitnami/mysql/tmp/mysql.sock
default-character-set=utf8mb4
`

// bitnamiChart is what differs between the Bitnami MySQL and MariaDB charts: the database's name
// in paths and in the container's name, the start script's variable for extra flags, the my.cnf.
type bitnamiChart struct {
	db, extraFlags, myCnf string
}

func bitnamiChartFor(h *mariadb.Host) bitnamiChart {
	if isMySQL(h) {
		return bitnamiChart{db: "mysql", extraFlags: "MYSQL_EXTRA_FLAGS", myCnf: mysqlChartMyCnf}
	}
	return bitnamiChart{db: "mariadb", extraFlags: "MARIADB_EXTRA_FLAGS", myCnf: mariadbChartMyCnf}
}

func (c bitnamiChart) claim() string  { return "/bitnami/" + c.db }
func (c bitnamiChart) appTmp() string { return "/opt/bitnami/" + c.db + "/tmp" }

// TestBitnamiChartExtraFlags runs, on each server, a StatefulSet in the shape of the Bitnami chart
// for it — claim at /bitnami/<db>, the chart's my.cnf as defaults file with tmpdir, socket and pid
// file in /opt/bitnami/<db>/tmp, uid 1001 with fsGroup 1001, the chart's extraFlags in
// <DB>_EXTRA_FLAGS — injected the way the controller chooses for it (ExtraFlags), started as the
// image's run.sh starts the server. The flags beat the chart's tmpdir (and on MySQL put the session
// temporary tablespaces on the tmpfs too); the load and innodb_tmpdir directories are on the claim
// beside the data directory; the socket and pid file stay where the chart put them.
func TestBitnamiChartExtraFlags(t *testing.T) {
	t.Parallel()
	forEachServer(t, testBitnamiChartExtraFlags)
}

func testBitnamiChartExtraFlags(t *testing.T, h *mariadb.Host) {
	const chartFlags = "--skip-networking --max-connections=50"
	chart := bitnamiChartFor(h)
	sts := bitnamiStatefulSet(h, "bitnami", chartFlags)
	// On MySQL the spilling query below (its InnoDB temporary table and filesort) fails with no space
	// left in 64Mi.
	sv := scratchVolume(sts.Name, "256Mi", "", v1alpha1.InnoDBTmpdirDisk)
	sv.Spec.MySQL = nil // as a user writes it: the controller picks the mode for the image
	pod := newPod(t, h, sts, sv)
	pod.ConfigMaps["bitnami"] = map[string]string{"my.cnf": chart.myCnf}
	start(t, pod)
	plan := pod.Plans[0]
	if plan.Injection != v1alpha1.InjectionExtraFlags {
		t.Fatalf("the controller chose %s injection for a Bitnami image, want ExtraFlags", plan.Injection)
	}
	db := pod.DB()
	tmpdir := queryString(t, db, "SELECT @@tmpdir")
	if tmpdir != plan.Layout.TmpDir {
		t.Errorf("@@tmpdir = %q, want %q: the chart's my.cnf (tmpdir=%s) won over %s", tmpdir, plan.Layout.TmpDir, chart.appTmp(), chart.extraFlags)
	}
	checkTmpfs(t, pod, tmpdir, plan.Volume.EmptyDir.SizeLimit.Value())
	if isMySQL(h) {
		checkSessionTablespaces(t, pod, plan.Layout.TmpDir)
	}
	for _, v := range []string{plan.Profile.ReplicaLoadOption, "innodb_tmpdir"} {
		dir := queryString(t, db, "SELECT @@"+v)
		checkOnClaimBesideData(t, pod, chart.claim(), dir)
	}
	if got := queryInt(t, db, "SELECT @@max_connections"); got != 50 {
		t.Errorf("@@max_connections = %d: the chart's own extraFlags were lost", got)
	}
	if got := queryString(t, db, "SELECT @@socket"); got != chart.appTmp()+"/mysql.sock" {
		t.Errorf("@@socket = %q, want the chart's", got)
	}
	for _, f := range []string{"mysql.sock", "mysqld.pid"} {
		p := mustPath(t, pod, chart.appTmp()+"/"+f)
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the chart's %s is not in %s: %v", f, chart.appTmp(), err)
		}
		if st := statfs(t, pod, chart.appTmp()); st.Type == unix.TMPFS_MAGIC {
			t.Errorf("%s became a tmpfs", chart.appTmp())
		}
	}
	if _, err := os.Stat(filepath.Join(pod.ClaimDir("data"), "data", mysql.PersistentDirName)); err == nil {
		t.Errorf("the operator's directory is inside the data directory the image's scripts manage")
	}
	checkDatabases(t, pod, systemDatabases)
	// A spilling query's temporary table and sort files land on the tmpfs.
	fillRows(t, db, 50000)
	conn, err := db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	mustExec(t, conn, spillToDisk)
	baseline := tmpfsUsed(t, pod, tmpdir)
	watch := watchUsage(t, pod, tmpdir)
	countRows(t, conn, spillQuery)
	if peak, _ := watch(); peak-baseline < 1<<20 {
		t.Errorf("the tmpfs grew by %d bytes while a query spilled to disk", peak-baseline)
	}

	// Revert gives the container exactly the chart's value back.
	reverted := inject.Strip(pod.Template)
	if got := envOf(&reverted.Spec.Containers[0], chart.extraFlags); got != chartFlags {
		t.Errorf("after revert %s = %q, want the chart's %q", chart.extraFlags, got, chartFlags)
	}
	t.Logf("%s in the injected template: %s", chart.extraFlags, envOf(pod.DatabaseContainer(), chart.extraFlags))
}

// checkOnClaimBesideData asserts that dir is on the claim mounted at claim, outside the data
// directory, created before the server started.
func checkOnClaimBesideData(t *testing.T, pod *mariadb.Pod, claim, dir string) {
	t.Helper()
	rel, err := filepath.Rel(claim, dir)
	if err != nil || !filepath.IsLocal(rel) || strings.HasPrefix(dir, pod.DataDir+"/") {
		t.Errorf("%s is not on the claim %s beside the data directory %s", dir, claim, pod.DataDir)
		return
	}
	seen, err := os.Stat(mustPath(t, pod, dir))
	if err != nil {
		t.Errorf("%s does not exist in the container: %v", dir, err)
		return
	}
	onClaim, err := os.Stat(filepath.Join(pod.ClaimDir("data"), rel))
	if err != nil || !os.SameFile(seen, onClaim) {
		t.Errorf("the container's %s is not the directory on the claim (%v)", dir, err)
	}
}

func envOf(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// bitnamiStatefulSet is the primary StatefulSet of the Bitnami chart for the host's server and its
// release line, with the chart's extraFlags value. Kept apart: it builds the chart for a server this
// machine runs, with the host's memory limit and only the volume kinds the harness makes (no Secret).
func bitnamiStatefulSet(h *mariadb.Host, name, extraFlags string) *appsv1.StatefulSet {
	chart := bitnamiChartFor(h)
	labels := map[string]string{"app.kubernetes.io/instance": name, "app.kubernetes.io/name": chart.db}
	v := h.Server.Version
	image := fmt.Sprintf("docker.io/bitnami/%s:%d.%d", chart.db, v.Major, v.Minor)
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
		RunAsUser: ptr.To[int64](1001), RunAsGroup: ptr.To[int64](1001),
	}
	sub := func(path, subPath string) corev1.VolumeMount {
		return corev1.VolumeMount{Name: "empty-dir", MountPath: path, SubPath: subPath}
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: name + "-headless",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1001)},
					Containers: []corev1.Container{{
						Name: chart.db, Image: image, SecurityContext: sc,
						Env: []corev1.EnvVar{
							{Name: "BITNAMI_DEBUG", Value: "false"},
							{Name: chart.extraFlags, Value: extraFlags},
						},
						Resources: corev1.ResourceRequirements{
							Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(serverMemoryLimit(h))},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "data", MountPath: chart.claim()},
							sub("/tmp", "tmp-dir"), sub(chart.appTmp(), "app-tmp-dir"),
							sub("/opt/bitnami/"+chart.db+"/logs", "app-logs-dir"),
							{Name: "config", MountPath: "/opt/bitnami/" + chart.db + "/conf/my.cnf", SubPath: "my.cnf"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "empty-dir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
					},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					},
				},
			}},
		},
	}
}
