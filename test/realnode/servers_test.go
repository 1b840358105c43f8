//go:build realnode

package realnode_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	harness "github.com/dbtune/scratch-operator/test/mariadb"
)

// serverCase is a database StatefulSet in the official image's shape that the installed operator
// is tried with beside the MariaDB 10.11 one: the image of hack/images that runs it, and the
// injection its ScratchVolume asks for (empty: the controller's choice).
type serverCase struct {
	name      string
	database  string
	injection v1alpha1.InjectionMode
}

// serverCases are MySQL 9.7 in both modes its official image allows and MariaDB 11.8, both from
// Debian's development suite.
var serverCases = []serverCase{
	{name: "mysql-args", database: "mysql-sid", injection: v1alpha1.InjectionArgs},
	{name: "mysql-configfile", database: "mysql-sid", injection: v1alpha1.InjectionConfigFile},
	{name: "mariadb-11", database: "mariadb-sid"},
}

func (sc serverCase) isMySQL() bool { return strings.HasPrefix(sc.database, "mysql") }

// client is the command-line client of the image, with the root password.
func (sc serverCase) client(statements string) []string {
	prog := "mariadb"
	if sc.isMySQL() {
		prog = "mysql"
	}
	return []string{prog, "-uroot", "-p" + rootPassword, "-N", "-B", "-e", statements}
}

// loadOption is the server's name for the replica load directory: MySQL renamed it in 8.0.26.
func (sc serverCase) loadOption() string {
	if sc.isMySQL() {
		return "replica_load_tmpdir"
	}
	return "slave_load_tmpdir"
}

// Sizes of the other servers' cases: the scratch volume, and the rows whose sort overflows it
// (194 bytes of payload each, a sort of more than 80 MB).
const (
	serverScratchSize = 64 << 20
	serverFillRows    = 400_000
)

// serverFill is a sort that merges through files in tmpdir and needs more room than the volume
// has: with a 32 KiB sort buffer, ORDER BY with an OFFSET past all but the last row cannot keep
// its top rows in memory (a priority queue), and no temporary table is involved. On MySQL 9.7 a
// full volume under an on-disk internal temporary table stops the server (docs/tuning.md), so the
// fill here is the sort, which fails cleanly on every server.
var serverFill = fmt.Sprintf("SET SESSION sort_buffer_size = 32768; SELECT id FROM kept.rows ORDER BY payload DESC LIMIT 1 OFFSET %d", serverFillRows-1)

// testServers runs the server cases side by side, each with its own local volume, StatefulSet and
// ScratchVolume, under the installed operator.
func (p *product) testServers(images map[string]string) func(t *testing.T) {
	return func(t *testing.T) {
		for _, sc := range serverCases {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				p.testServer(t, sc, images[sc.database])
			})
		}
	}
}

// testServer creates the case's StatefulSet, writes rows that must survive every roll, and then
// drives it as a user would: a ScratchVolume that turns Ready, the server's directories checked
// from inside the rolled container, a query that fills the RAM volume and fails without taking the
// server down, and the ScratchVolume's deletion, after which the server runs on its own tmpdir
// with its data.
func (p *product) testServer(t *testing.T, sc serverCase, image string) {
	ctx := t.Context()
	createLocalPV(ctx, t, p.cs, p.node, "realnode-"+sc.name)
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Create(ctx, officialStatefulSet(sc, image, p.node.Name()), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pod := waitRolledOut(ctx, t, p.cs, sts)
	ownTmpdir := p.serverAnswer(ctx, t, sc, pod, "SELECT @@tmpdir")
	t.Logf("%s answered %s after the StatefulSet was created; its own @@tmpdir is %s", sc.name, time.Since(start).Round(time.Millisecond), ownTmpdir)
	p.serverSQL(ctx, t, sc, pod, "CREATE DATABASE kept; CREATE TABLE kept.t (i INT) ENGINE=InnoDB; INSERT INTO kept.t VALUES (42);"+
		" CREATE TABLE kept.rows (id INT PRIMARY KEY, payload VARCHAR(200)) ENGINE=InnoDB;"+
		" INSERT INTO kept.rows SELECT seq, "+harness.SeqText(23)+" FROM "+harness.Seq(serverFillRows))

	p.applyServerScratchVolume(ctx, t, sc)
	start = time.Now()
	sv := p.waitScratchVolumeOf(ctx, t, sc.name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	t.Logf("ScratchVolume %s Ready %s after it was applied", sc.name, time.Since(start).Round(time.Millisecond))
	// MariaDB 11.5.1 and later get their own limit on temporary space a margin below the volume:
	// the sort then fails with the server's error before the volume fills, as the status says.
	var limit *v1alpha1.TempSpaceStatus
	if len(sv.Status.Targets) == 1 {
		limit = sv.Status.Targets[0].TempSpace
	}
	if limit == nil || limit.WhenFull == "" {
		t.Fatalf("%s: the status does not say what happens when the volume fills: %+v", sc.name, sv.Status.Targets)
	}
	injected, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, sc.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod = waitRolledOut(ctx, t, p.cs, injected)
	p.assertServerInjected(ctx, t, sc, injected, pod)
	p.assertLargePages(ctx, t, sc, pod)
	if sc.name == "mysql-configfile" {
		p.testLargePagesLive(ctx, t, sc, pod)
	}

	restarts := restartCount(pod)
	start = time.Now()
	out, err := p.trySQLWith(ctx, sc, pod, serverFill)
	t.Logf("%s: the sort of about %d MB on a %d MiB tmpdir ended after %s: %q, %v", sc.name, serverFillRows*200/1_000_000, serverScratchSize>>20, time.Since(start).Round(time.Millisecond), out, err)
	switch {
	case limit.Limit != nil && (err == nil || !strings.Contains(err.Error(), "Global temporary space limit reached")):
		t.Errorf("%s: with max_tmp_total_space_usage at %s the sort larger than the RAM volume returned %q, %v; want the server's limit error", sc.name, limit.Limit, out, err)
	case limit.Limit != nil && !strings.Contains(limit.WhenFull, "fails with the server's own error"):
		t.Errorf("%s: the status says %q when the server's limit stops the query", sc.name, limit.WhenFull)
	case limit.Limit == nil && (err == nil || !volumeFull(err.Error())):
		t.Errorf("%s: the sort larger than the RAM volume returned %q, %v; want the server's out-of-space error", sc.name, out, err)
	case limit.Limit == nil && !strings.Contains(limit.WhenFull, "errno 28"):
		t.Errorf("%s: the status says %q when the volume fills with errno 28", sc.name, limit.WhenFull)
	}
	if got := p.serverSQL(ctx, t, sc, pod, "SELECT i FROM kept.t"); got != "42" {
		t.Errorf("%s: after the failed sort the server answers %q, want 42", sc.name, got)
	}
	after, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if restartCount(after) != restarts || oomKilled(after) {
		t.Errorf("%s: the database container restarted during the fill (restarts %d → %d, OOM-killed: %v)", sc.name, restarts, restartCount(after), oomKilled(after))
	}

	p.deleteScratchVolume(ctx, t, sc.name)
	reverted, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, sc.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sts.Spec.Template.Spec, reverted.Spec.Template.Spec); diff != "" {
		t.Errorf("%s: after the deletion the pod template is not the one the user wrote (-wrote +now):\n%s", sc.name, diff)
	}
	pod = waitRolledOut(ctx, t, p.cs, reverted)
	got := p.serverAnswer(ctx, t, sc, pod, "SELECT @@tmpdir, (SELECT i FROM kept.t), (SELECT COUNT(*) FROM kept.rows)")
	if want := fmt.Sprintf("%s\t42\t%d", ownTmpdir, serverFillRows); got != want {
		t.Errorf("%s: after the deletion the server answers %q, want its own tmpdir and the data: %q", sc.name, got, want)
	}
}

// assertServerInjected checks the injected StatefulSet delivers the settings the way the case asks,
// and, inside the rolled container, that tmpdir (and on MySQL every session temporary tablespace)
// is on a tmpfs of the ScratchVolume's size while the replica load directory and innodb_tmpdir are
// on the data volume, with the rows written before the injection.
func (p *product) assertServerInjected(ctx context.Context, t *testing.T, sc serverCase, sts *appsv1.StatefulSet, pod *corev1.Pod) {
	t.Helper()
	c := sts.Spec.Template.Spec.Containers[0]
	_, flagged := mysql.FindOption(c.Args, "tmpdir")
	dropIn := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.SubPath == mysql.DropInFileName })
	switch {
	case sc.injection == v1alpha1.InjectionArgs && (!flagged || dropIn >= 0):
		t.Errorf("%s: Args injection gave the container args %q and a drop-in mount: %t", sc.name, c.Args, dropIn >= 0)
	case sc.injection != v1alpha1.InjectionArgs && (flagged || dropIn < 0):
		t.Errorf("%s: ConfigFile injection gave the container args %q and a drop-in mount: %t", sc.name, c.Args, dropIn >= 0)
	}
	if dropIn >= 0 {
		t.Logf("%s: drop-in mounted at %s", sc.name, c.VolumeMounts[dropIn].MountPath)
	}

	query := "SELECT @@tmpdir, @@" + sc.loadOption() + ", @@innodb_tmpdir, (SELECT i FROM kept.t)"
	fields := strings.Split(p.serverAnswer(ctx, t, sc, pod, query), "\t")
	if len(fields) != 4 {
		t.Fatalf("%s: %s answered %q", sc.name, query, fields)
	}
	if fields[0] != v1alpha1.DefaultMySQLTmpdirMountPath {
		t.Errorf("%s: @@tmpdir is %s, want the scratch mount %s", sc.name, fields[0], v1alpha1.DefaultMySQLTmpdirMountPath)
	}
	if fields[3] != "42" {
		t.Errorf("%s: the row written before the injection reads %s, want 42", sc.name, fields[3])
	}
	mounts, err := execInPod(ctx, p.cfg, p.cs, pod, "cat", "/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	onScratch := []string{fields[0]}
	if sc.isMySQL() {
		dir := p.serverSQL(ctx, t, sc, pod, "SELECT @@innodb_temp_tablespaces_dir")
		files := strings.Fields(p.serverSQL(ctx, t, sc, pod, "SELECT PATH FROM INFORMATION_SCHEMA.INNODB_SESSION_TEMP_TABLESPACES"))
		if len(files) == 0 {
			t.Errorf("%s: the server lists no session temporary tablespace", sc.name)
		}
		for _, f := range files {
			if !strings.HasSuffix(f, ".ibt") || !strings.HasPrefix(path.Clean(f), path.Clean(dir)+"/") {
				t.Errorf("%s: session temporary tablespace %s is not an .ibt file in @@innodb_temp_tablespaces_dir %s", sc.name, f, dir)
			}
		}
		listed, err := execInPod(ctx, p.cfg, p.cs, pod, "ls", dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d session temporary tablespaces in %s: %s", sc.name, len(files), dir, strings.Join(strings.Fields(listed), " "))
		onScratch = append(onScratch, dir)
		onScratch = append(onScratch, files...)
	}
	for _, dir := range onScratch {
		m := mountOf(mounts, dir)
		if m == nil || m.fsType != "tmpfs" || m.point != v1alpha1.DefaultMySQLTmpdirMountPath {
			t.Errorf("%s: %s is on %+v, want the scratch tmpfs at %s", sc.name, dir, m, v1alpha1.DefaultMySQLTmpdirMountPath)
		} else if got, ok := tmpfsSizeKiB(m.options); !ok || got != serverScratchSize>>10 {
			t.Errorf("%s: the scratch tmpfs has options %q, want size=%dk", sc.name, m.options, serverScratchSize>>10)
		}
	}
	for i, name := range []string{sc.loadOption(), "innodb_tmpdir"} {
		dir := fields[i+1]
		if m := mountOf(mounts, dir); dir == "" || dir == "NULL" || m == nil || m.fsType == "tmpfs" || m.point != dataPath {
			t.Errorf("%s: @@%s is %q on %+v, want a directory on the data volume at %s", sc.name, name, dir, m, dataPath)
		}
	}
	t.Logf("%s: tmpdir %s on the RAM volume, %s %s and innodb_tmpdir %s on the data volume", sc.name, fields[0], sc.loadOption(), fields[1], fields[2])
}

// officialStatefulSet is one replica of the case's server in the official image's shape, its data
// on a claim of the local class at /var/lib/mysql, the root password in the image's variable.
// MySQL's memory limit leaves room for the TempTable engine's default 1GiB, which the memory check
// counts. Kept apart: it builds on mariadbStatefulSet, for the real node.
func officialStatefulSet(sc serverCase, image, nodeName string) *appsv1.StatefulSet {
	sts := mariadbStatefulSet(nodeName)
	sts.Name = sc.name
	labels := map[string]string{"app.kubernetes.io/name": sc.name}
	sts.Spec.Selector.MatchLabels = labels
	sts.Spec.Template.Labels = labels
	c := &sts.Spec.Template.Spec.Containers[0]
	c.Name, c.Image = strings.Split(sc.database, "-")[0], image
	if sc.isMySQL() {
		c.Env = []corev1.EnvVar{{Name: "MYSQL_ROOT_PASSWORD", Value: rootPassword}}
		c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
	}
	return sts
}

// applyServerScratchVolume applies the case's ScratchVolume as kubectl apply would.
func (p *product) applyServerScratchVolume(ctx context.Context, t *testing.T, sc serverCase) {
	t.Helper()
	sv := &v1alpha1.ScratchVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScratchVolume"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: sc.name},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: sc.name},
			Size:    *resource.NewQuantity(serverScratchSize, resource.BinarySI),
			Purpose: v1alpha1.PurposeMySQLTmpdir,
			Memory:  v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryValidate},
		},
	}
	if sc.injection != "" {
		sv.Spec.MySQL = &v1alpha1.MySQLSpec{Injection: sc.injection}
	}
	//nolint:staticcheck // Apply with a typed object is what kubectl apply does.
	if err := p.cl.Patch(ctx, sv, client.Apply, client.FieldOwner("user"), client.ForceOwnership); err != nil {
		t.Fatalf("failed to apply ScratchVolume %s: %v", sc.name, err)
	}
}

// deleteScratchVolume deletes a ScratchVolume and waits until it is gone, its finalizer done.
func (p *product) deleteScratchVolume(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name}}
	if err := p.cl.Delete(ctx, sv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "ScratchVolume "+name+" gone", func() (bool, string) {
		err := p.cl.Get(ctx, client.ObjectKeyFromObject(sv), sv)
		return err != nil && client.IgnoreNotFound(err) == nil, fmt.Sprintf("%v; finalizers %v", err, sv.Finalizers)
	})
}

// serverSQL runs statements with the case's client as root and fails the test when they fail.
func (p *product) serverSQL(ctx context.Context, t *testing.T, sc serverCase, pod *corev1.Pod, statements string) string {
	t.Helper()
	out, err := p.trySQLWith(ctx, sc, pod, statements)
	if err != nil {
		t.Fatalf("%s: %s: %v", sc.name, statements, err)
	}
	return out
}

func (p *product) trySQLWith(ctx context.Context, sc serverCase, pod *corev1.Pod, statements string) (string, error) {
	out, err := execInPod(ctx, p.cfg, p.cs, pod, sc.client(statements)...)
	if err != nil {
		// The mysql client's warning about -p comes first on stderr; the error is what matters.
		err = errors.New(strings.Replace(err.Error(), passwordWarning, "", 1))
	}
	return strings.TrimSpace(out), err
}

const passwordWarning = "mysql: [Warning] Using a password on the command line interface can be insecure.\n"

// serverAnswer runs a query until the server answers it (it may still be initializing or
// starting) and returns the answer.
func (p *product) serverAnswer(ctx context.Context, t *testing.T, sc serverCase, pod *corev1.Pod, query string) string {
	t.Helper()
	var answer string
	waitFor(t, 3*time.Minute, sc.name+" answering "+query, func() (bool, string) {
		out, err := p.trySQLWith(ctx, sc, pod, query)
		if err != nil {
			return false, err.Error()
		}
		answer = out
		return true, ""
	})
	return answer
}
