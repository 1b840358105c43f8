package controllers_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestMySQL84ReadyNamesEveryTemporaryLocation: on MySQL 8.4 the session temporary tablespaces,
// where the on-disk internal temporary tables live, move to the RAM volume with tmpdir, and the
// Ready ScratchVolume says so per target, as the Injected Event does.
func TestMySQL84ReadyNamesEveryTemporaryLocation(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	db := &sts.Spec.Template.Spec.Containers[0]
	db.Name, db.Image = "mysql", "mysql:8.4"
	// MySQL's TempTable engine may hold 1GiB beside the buffer pool and the volume.
	db.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("3Gi")
	create(t, e, sts, scratchVolume(ns, "tmp", "db"))
	settle(t, e, ns)
	playRolledOut(t, e, ns, "db")
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	})

	const ram, persistent = "/var/lib/mysql-tmp", "/var/lib/mysql/" + mysql.PersistentDirName
	checkTarget(t, getSV(t, e, ns, "tmp"), v1alpha1.InjectionConfigFile, []v1alpha1.TempLocation{
		{Data: v1alpha1.TempDataTmpdir, Medium: v1alpha1.TempMediumMemory, Option: "tmpdir", Path: ram},
		{Data: v1alpha1.TempDataSessionTempTablespaces, Medium: v1alpha1.TempMediumMemory, Option: "innodb_temp_tablespaces_dir", Path: ram},
		{Data: v1alpha1.TempDataGlobalTempTablespace, Medium: v1alpha1.TempMediumDisk, Option: "innodb_temp_data_file_path", Path: "/var/lib/mysql"},
		{Data: v1alpha1.TempDataInnoDBTmpdir, Medium: v1alpha1.TempMediumDisk, Option: "innodb_tmpdir", Path: persistent + "/innodb-tmp"},
		{Data: v1alpha1.TempDataReplicaLoad, Medium: v1alpha1.TempMediumDisk, Option: "replica_load_tmpdir", Path: persistent + "/replica-load"},
	})
	const placed = "in RAM: tmpdir, session temporary tablespaces; on disk: global temporary tablespace (ibtmp1), innodb_tmpdir, replica load directory"
	if c := condition(t, e, ns, "tmp", v1alpha1.ConditionReady); !strings.Contains(c.Message, "db: "+placed) {
		t.Errorf("the Ready message does not say where the temporary data went: %q", c.Message)
	}
	assertEventSays(t, ns, "tmp", "Injected", placed)
	cm := &corev1.ConfigMap{}
	if err := e.Client.Get(ctxFor(t), client.ObjectKey{Namespace: ns, Name: scratchVolume(ns, "tmp", "db").ConfigMapName("db")}, cm); err != nil {
		t.Fatal(err)
	}
	if want := "innodb_temp_tablespaces_dir = " + ram + "\n"; !strings.Contains(cm.Data[mysql.DropInFileName], want) {
		t.Errorf("the drop-in lacks %q:\n%s", want, cm.Data[mysql.DropInFileName])
	}
}

// TestBitnamiChartReadyThroughExtraFlags: a StatefulSet in the shape of the Bitnami MariaDB chart,
// with the chart's extraFlags set, gets the flags added to MARIADB_EXTRA_FLAGS (the mode chosen for
// the image), becomes Ready naming where its temporary data went, and gets exactly the chart's value
// back when the ScratchVolume goes.
func TestBitnamiChartReadyThroughExtraFlags(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	const chartFlags = "--max-connections=300 --skip-name-resolve"
	create(t, e, bitnamiMariaDBStatefulSet(ns, "db", chartFlags))
	original := getSTS(t, e, ns, "db").Spec.Template
	create(t, e, scratchVolume(ns, "tmp", "db"))
	settle(t, e, ns)
	playRolledOut(t, e, ns, "db")
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	})

	const ram, persistent = "/var/lib/mysql-tmp", "/bitnami/mariadb/" + mysql.PersistentDirName
	checkTarget(t, getSV(t, e, ns, "tmp"), v1alpha1.InjectionExtraFlags, []v1alpha1.TempLocation{
		{Data: v1alpha1.TempDataTmpdir, Medium: v1alpha1.TempMediumMemory, Option: "tmpdir", Path: ram},
		{Data: v1alpha1.TempDataGlobalTempTablespace, Medium: v1alpha1.TempMediumDisk, Option: "innodb_temp_data_file_path", Path: "/bitnami/mariadb/data"},
		{Data: v1alpha1.TempDataInnoDBTmpdir, Medium: v1alpha1.TempMediumDisk, Option: "innodb_tmpdir", Path: persistent + "/innodb-tmp"},
		{Data: v1alpha1.TempDataReplicaLoad, Medium: v1alpha1.TempMediumDisk, Option: "slave_load_tmpdir", Path: persistent + "/replica-load"},
	})
	live := getSTS(t, e, ns, "db").Spec.Template
	c := findContainer(live.Spec.Containers, "mariadb")
	want := chartFlags + " --tmpdir=" + ram + " --slave-load-tmpdir=" + persistent + "/replica-load --innodb-tmpdir=" + persistent + "/innodb-tmp"
	if got := envValue(c, "MARIADB_EXTRA_FLAGS"); got != want {
		t.Errorf("MARIADB_EXTRA_FLAGS = %q, want %q", got, want)
	}
	if len(c.Args) != 0 || len(c.Command) != 0 {
		t.Errorf("ExtraFlags injection touched the command line: %q %q", c.Command, c.Args)
	}
	if m := findMount(c, "/opt/bitnami/mariadb/tmp"); m == nil || m.Name != "empty-dir" {
		t.Errorf("the chart's tmp directory (socket, pid file) is no longer its own emptyDir: %+v", m)
	}
	if err := e.Client.Delete(ctxFor(t), getSV(t, e, ns, "tmp")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		got := getSTS(t, e, ns, "db").Spec.Template
		if !equality.Semantic.DeepEqual(original, got) {
			return fmt.Sprintf("template not restored: MARIADB_EXTRA_FLAGS=%q",
				envValue(findContainer(got.Spec.Containers, "mariadb"), "MARIADB_EXTRA_FLAGS"))
		}
		return ""
	})
}

// checkTarget asserts the one target's injection mode and temporary locations.
func checkTarget(t *testing.T, sv *v1alpha1.ScratchVolume, mode v1alpha1.InjectionMode, want []v1alpha1.TempLocation) {
	t.Helper()
	if len(sv.Status.Targets) != 1 {
		t.Fatalf("want one target, got %+v", sv.Status.Targets)
	}
	got := sv.Status.Targets[0]
	if got.Injection != mode {
		t.Errorf("status.targets[0].injection = %q, want %q", got.Injection, mode)
	}
	if !equality.Semantic.DeepEqual(got.TempLocations, want) {
		t.Errorf("status.targets[0].tempLocations =\n  %+v\nwant\n  %+v", got.TempLocations, want)
	}
}

// playRolledOut plays the StatefulSet controller (envtest has none): every pod runs the template.
func playRolledOut(t *testing.T, e *testenv.Env, ns, name string) {
	t.Helper()
	cur := getSTS(t, e, ns, name)
	n := ptr.Deref(cur.Spec.Replicas, 1)
	cur.Status = appsv1.StatefulSetStatus{ObservedGeneration: cur.Generation, Replicas: n, ReadyReplicas: n,
		UpdatedReplicas: n, AvailableReplicas: n, CurrentRevision: "rev2", UpdateRevision: "rev2"}
	if err := e.Client.Status().Update(ctxFor(t), cur); err != nil {
		t.Fatal(err)
	}
}

// assertEventSays waits for an Event with reason about the ScratchVolume whose note contains text.
func assertEventSays(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
		list := &eventsv1.EventList{}
		if err := env.Client.List(ctxFor(t), list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		for _, ev := range list.Items {
			if ev.Regarding.Name == name && ev.Reason == reason && strings.Contains(ev.Note, text) {
				return ""
			}
		}
		return fmt.Sprintf("no %s event for %s saying %q", reason, name, text)
	})
}

func envValue(c *corev1.Container, name string) string {
	for _, v := range c.Env {
		if v.Name == name {
			return v.Value
		}
	}
	return ""
}

// bitnamiMariaDBStatefulSet is the primary StatefulSet of the Bitnami MariaDB 11.4 chart, with the
// chart's extraFlags in MARIADB_EXTRA_FLAGS.
func bitnamiMariaDBStatefulSet(ns, name, extraFlags string) *appsv1.StatefulSet {
	return testenv.BitnamiStatefulSet(ns, name, "mariadb", "docker.io/bitnami/mariadb:11.4.5-debian-12-r2",
		testenv.WithEnv(corev1.EnvVar{Name: "MARIADB_EXTRA_FLAGS", Value: extraFlags}))
}
