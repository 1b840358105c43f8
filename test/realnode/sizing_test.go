//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	harness "github.com/dbtune/scratch-operator/test/mariadb"
)

// The automatic sizing's figures on the real node: the agent samples every second, reports every
// two and keeps its shortest window, a minute instead of an hour, so that a spike leaves the window
// within the test; a proposal must be sustained for two minutes: longer than the window, as
// sustainFor must be for a spike to leave the window before it counts.
const (
	sizingWindow  = time.Minute
	sizingSustain = 2 * time.Minute
)

// sizingAgentArgs shortens the installed agent's window and report interval.
var sizingAgentArgs = `  - target: {group: apps, kind: DaemonSet, name: ` + agentName + `}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --scratch-report-interval=2s
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --scratch-peak-window=` + sizingWindow.String() + `
`

// Sizes of the automatic ScratchVolumes: 120MiB held in a 128Mi volume is a window peak of 94%,
// which calls for a quarter more, 160Mi as a step of 16Mi, which max holds to 144Mi.
var (
	sizingStart = resource.MustParse("128Mi")
	sizingMax   = resource.MustParse("144Mi")
)

// holdRows rows of 256 bytes are the 120MiB the report holds.
const holdRows = 120 << 20 / 256

// holdQuery is a report that builds a temporary table of 120MiB in tmpdir and keeps it for five
// seconds: long enough for the agent, which samples every second, to see it (a sort that fills
// the volume and fails within a second can fall between two samples). The MyISAM table has fixed
// rows of 255 latin1 characters and a deleted flag; rows are copied from kept.rows, which has
// serverFillRows of them.
var holdQuery = fmt.Sprintf("CREATE TEMPORARY TABLE kept.hold (b CHAR(255) CHARACTER SET latin1 NOT NULL) ENGINE=MyISAM;"+
	" INSERT INTO kept.hold SELECT payload FROM kept.rows; INSERT INTO kept.hold SELECT payload FROM kept.rows WHERE id <= %d;"+
	" SELECT COUNT(*) FROM kept.hold; DO SLEEP(5)", holdRows-serverFillRows)

// TestAutomaticSizingOnRealNode installs the product with a short agent window and drives
// ScratchVolumes with spec.sizing Automatic over MariaDB 11.8 and MySQL 9.7 on a real node: one
// report holding a large temporary table is a spike the volume does not grow for; the same report
// again and again, for longer than sustainFor, grows it once, to max, in the maintenance window;
// the rolled pod has the new tmpfs. On MariaDB 11.8 the
// server's own limit then comes back with a per-session share: a sort larger than the share fails
// with the server's error while a smaller one, in another session at the same moment, succeeds.
func TestAutomaticSizingOnRealNode(t *testing.T) {
	ctx := signalContext(t)
	p, e, servers := setUpProduct(ctx, t)
	start := time.Now()
	p.installWith(ctx, t, e, sizingAgentArgs)
	p.waitInstalled(ctx, t)
	t.Logf("installed and running %s after kubectl apply", time.Since(start).Round(time.Millisecond))
	p.ns = createNamespace(ctx, t, p.cs)
	for _, sc := range []serverCase{{name: "sizing-mariadb-11", database: "mariadb-sid"}, {name: "sizing-mysql", database: "mysql-sid"}} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			pod := p.startSizingServer(t, sc, servers[sc.database])
			p.testSpikeAndSustainedUse(t, sc, pod)
			if !sc.isMySQL() {
				p.testSessionShare(t, sc)
			}
		})
	}
}

// startSizingServer creates the case's StatefulSet with the rows its sorts read, and an Automatic
// ScratchVolume over it, and returns the pod once it runs with the volume.
func (p *product) startSizingServer(t *testing.T, sc serverCase, image string) *corev1.Pod {
	ctx := t.Context()
	createLocalPV(ctx, t, p.cs, p.node, "realnode-"+sc.name)
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Create(ctx, officialStatefulSet(sc, image, p.node.Name()), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := waitRolledOut(ctx, t, p.cs, sts)
	p.serverAnswer(ctx, t, sc, pod, "SELECT 1")
	p.serverSQL(ctx, t, sc, pod, "CREATE DATABASE kept; CREATE TABLE kept.rows (id INT PRIMARY KEY, payload VARCHAR(200)) ENGINE=InnoDB;"+
		" INSERT INTO kept.rows SELECT seq, "+harness.SeqText(23)+" FROM "+harness.Seq(serverFillRows))
	sv := &v1alpha1.ScratchVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScratchVolume"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: sc.name},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: sc.name},
			Size:    sizingStart,
			Purpose: v1alpha1.PurposeMySQLTmpdir,
			Memory:  v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryValidate},
			// MariaDB 11.8's own limit, a sixteenth below the volume, counts the report's table:
			// off until testSessionShare.
			MySQL: &v1alpha1.MySQLSpec{TempSpaceLimit: v1alpha1.TempSpaceLimitNone},
			Sizing: &v1alpha1.SizingPolicy{
				Mode: v1alpha1.SizingAutomatic, Min: &sizingStart, Max: &sizingMax,
				SustainFor: &metav1.Duration{Duration: sizingSustain}, Interval: &metav1.Duration{Duration: time.Hour},
			},
			// Always open: every day from midnight for 24 hours.
			Changes: &v1alpha1.ChangePolicy{MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Start: "00:00", Duration: metav1.Duration{Duration: 24 * time.Hour}}}},
		},
	}
	//nolint:staticcheck // Apply with a typed object is what kubectl apply does.
	if err := p.cl.Patch(ctx, sv, client.Apply, client.FieldOwner("user"), client.ForceOwnership); err != nil {
		t.Fatalf("failed to apply ScratchVolume %s: %v", sc.name, err)
	}
	p.waitScratchVolumeOf(ctx, t, sc.name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	injected, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, sc.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod = waitRolledOut(ctx, t, p.cs, injected)
	p.assertScratchSize(ctx, t, sc, pod, sizingStart.Value())
	return pod
}

// testSpikeAndSustainedUse runs the report once and waits until the proposal that spike brought
// has left with the window and sustainFor has passed: no resize. Then it runs the report again
// and again until the controller resizes, and checks the resize and the rolled pod.
func (p *product) testSpikeAndSustainedUse(t *testing.T, sc serverCase, pod *corev1.Pod) {
	ctx := t.Context()
	if got := p.serverSQL(ctx, t, sc, pod, holdQuery); got != fmt.Sprint(holdRows) {
		t.Fatalf("%s: the report held %s rows, want %d", sc.name, got, holdRows)
	}
	spike := p.waitSizing(ctx, t, sc.name, "the spike's proposal", func(s *v1alpha1.SizingStatus) bool {
		return s.Reason == v1alpha1.ReasonSizingSustaining && s.Proposed != nil && s.Proposed.Cmp(sizingMax) == 0
	})
	t.Logf("%s: after one report: %s: %s", sc.name, spike.Reason, spike.Message)
	dropped := p.waitSizing(ctx, t, sc.name, "the spike's proposal dropped once it left the window", func(s *v1alpha1.SizingStatus) bool {
		return s.Reason == v1alpha1.ReasonSizingSteady
	})
	t.Logf("%s: %s: %s", sc.name, dropped.Reason, dropped.Message)
	if wait := time.Until(spike.Since.Add(sizingSustain + 10*time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	sv := p.scratchVolume(ctx, t, sc.name)
	if sv.Spec.Size.Cmp(sizingStart) != 0 || sv.Status.Sizing == nil || len(sv.Status.Sizing.History) != 0 {
		t.Fatalf("%s: one spike resized the volume: spec.size %s, sizing %+v", sc.name, sv.Spec.Size.String(), sv.Status.Sizing)
	}

	load, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	reports := 0
	go func() {
		defer wg.Done()
		for load.Err() == nil {
			_, _ = p.trySQLWith(load, sc, pod, holdQuery)
			reports++
			time.Sleep(2 * time.Second)
		}
	}()
	start := time.Now()
	resized := p.waitSizing(ctx, t, sc.name, "the automatic resize", func(s *v1alpha1.SizingStatus) bool { return len(s.History) > 0 })
	cancel()
	wg.Wait()
	change := resized.History[0]
	t.Logf("%s: resized %s after the reports began (%d reports): %s; %s", sc.name, time.Since(start).Round(time.Second), reports, resized.Last, resized.Message)
	switch {
	case change.From.Cmp(sizingStart) != 0 || change.To.Cmp(sizingMax) != 0:
		t.Errorf("%s: the resize went %s → %s, want %s → %s (160Mi called for, held to max)", sc.name, change.From.String(), change.To.String(), sizingStart.String(), sizingMax.String())
	case change.Time.Sub(change.Since.Time) < sizingSustain:
		t.Errorf("%s: resized at %s for a proposal since %s, sooner than sustainFor %s", sc.name, change.Time, change.Since, sizingSustain)
	case change.WindowPeakBytes < 120<<20 || !strings.Contains(change.Why, "maintenance window"):
		t.Errorf("%s: the resize's figures: window peak %d of %d bytes, why %q", sc.name, change.WindowPeakBytes, sizingStart.Value(), change.Why)
	}
	sv = p.scratchVolume(ctx, t, sc.name)
	if want := sizingStart.String() + " → " + sizingMax.String(); sv.Spec.Size.Cmp(sizingMax) != 0 || resized.Last != want {
		t.Errorf("%s: spec.size is %s and the Last-Resize column %q, want %s and %s", sc.name, sv.Spec.Size.String(), resized.Last, sizingMax.String(), want)
	}
	p.assertEvent(ctx, t, sc.name, v1alpha1.ReasonResized)
	p.waitScratchVolumeOf(ctx, t, sc.name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, sc.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.assertScratchSize(ctx, t, sc, waitRolledOut(ctx, t, p.cs, sts), sizingMax.Value())
}

// testSessionShare turns the server's own limit on, with a quarter of it for each session, and
// runs a sort larger than the share while another session holds a smaller temporary table.
func (p *product) testSessionShare(t *testing.T, sc serverCase) {
	ctx := t.Context()
	patch := []byte(`{"spec":{"mysql":{"tempSpaceLimit":"Auto","sessionTempSpacePercent":25}}}`)
	sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: sc.name}}
	if err := p.cl.Patch(ctx, sv, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("user")); err != nil {
		t.Fatal(err)
	}
	sv = p.waitScratchVolumeOf(ctx, t, sc.name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	if len(sv.Status.Targets) != 1 || sv.Status.Targets[0].TempSpace == nil || sv.Status.Targets[0].TempSpace.SessionLimit == nil {
		t.Fatalf("%s: the status shows no per-session limit: %+v", sc.name, sv.Status.Targets)
	}
	limits := sv.Status.Targets[0].TempSpace
	sts, err := p.cs.AppsV1().StatefulSets(p.ns).Get(ctx, sc.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := waitRolledOut(ctx, t, p.cs, sts)
	p.serverAnswer(ctx, t, sc, pod, "SELECT 1")

	type run struct {
		start, end time.Time
		out        string
		err        error
	}
	// The other session holds a temporary table of 20MiB, within its share, for three seconds;
	// the large sort starts in the middle of them.
	heldRows := 20 << 20 / 256
	holding := fmt.Sprintf("CREATE TEMPORARY TABLE kept.hold (b CHAR(255) CHARACTER SET latin1 NOT NULL) ENGINE=MyISAM;"+
		" INSERT INTO kept.hold SELECT payload FROM kept.rows WHERE id <= %d; DO SLEEP(3); SELECT COUNT(*) FROM kept.hold", heldRows)
	var large, other run
	var wg sync.WaitGroup
	for _, r := range []struct {
		run   *run
		query string
		delay time.Duration
	}{{&other, holding, 0}, {&large, serverFill, time.Second}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(r.delay)
			r.run.start = time.Now()
			r.run.out, r.run.err = p.trySQLWith(ctx, sc, pod, r.query)
			r.run.end = time.Now()
		}()
	}
	wg.Wait()
	t.Logf("%s: server limit %s, per session %s: the large sort ran %s → %s: %q, %v; the other session's 20MiB table %s → %s: %q, %v", sc.name,
		limits.Limit, limits.SessionLimit, large.start.Format("15:04:05.000"), large.end.Format("15:04:05.000"), large.out, large.err,
		other.start.Format("15:04:05.000"), other.end.Format("15:04:05.000"), other.out, other.err)
	if large.err == nil || !strings.Contains(large.err.Error(), "Local temporary space limit reached") {
		t.Errorf("%s: the sort larger than the session's share returned %q, %v; want the server's per-session limit error", sc.name, large.out, large.err)
	}
	if other.err != nil || other.out != fmt.Sprint(heldRows) {
		t.Errorf("%s: the other session's smaller report returned %q, %v; want %d rows", sc.name, other.out, other.err, heldRows)
	}
	if !other.start.Before(large.start) || !large.end.Before(other.end) {
		t.Errorf("%s: the large sort did not run while the other session held its table", sc.name)
	}
	if got := p.serverSQL(ctx, t, sc, pod, "SELECT COUNT(*) FROM kept.rows"); got != fmt.Sprint(serverFillRows) {
		t.Errorf("%s: after the sorts the server answers %q rows, want %d", sc.name, got, serverFillRows)
	}
}

// waitSizing waits until the ScratchVolume's status.sizing meets cond, and returns it.
func (p *product) waitSizing(ctx context.Context, t *testing.T, name, what string, cond func(*v1alpha1.SizingStatus) bool) *v1alpha1.SizingStatus {
	t.Helper()
	var s *v1alpha1.SizingStatus
	waitFor(t, 4*time.Minute, name+": "+what, func() (bool, string) {
		sv := &v1alpha1.ScratchVolume{}
		if err := p.cl.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: name}, sv); err != nil {
			return false, err.Error()
		}
		if s = sv.Status.Sizing; s == nil {
			return false, "no status.sizing"
		}
		return cond(s), fmt.Sprintf("spec.size %s; %s: %s", sv.Spec.Size.String(), s.Reason, s.Message)
	})
	return s
}

func (p *product) scratchVolume(ctx context.Context, t *testing.T, name string) *v1alpha1.ScratchVolume {
	t.Helper()
	sv := &v1alpha1.ScratchVolume{}
	if err := p.cl.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: name}, sv); err != nil {
		t.Fatal(err)
	}
	return sv
}

// assertScratchSize checks, inside the pod, that the server's tmpdir is a tmpfs of size bytes.
func (p *product) assertScratchSize(ctx context.Context, t *testing.T, sc serverCase, pod *corev1.Pod, size int64) {
	t.Helper()
	tmpdir := p.serverAnswer(ctx, t, sc, pod, "SELECT @@tmpdir")
	mounts, err := execInPod(ctx, p.cfg, p.cs, pod, "cat", "/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	m := mountOf(mounts, tmpdir)
	if m == nil || m.fsType != "tmpfs" {
		t.Fatalf("%s: @@tmpdir %s is on %+v, want a tmpfs", sc.name, tmpdir, m)
	}
	if got, ok := tmpfsSizeKiB(m.options); !ok || got != size>>10 {
		t.Errorf("%s: the scratch tmpfs has options %q, want size=%dk", sc.name, m.options, size>>10)
	}
}

// assertEvent waits for an Event of reason about the ScratchVolume name.
func (p *product) assertEvent(ctx context.Context, t *testing.T, name, reason string) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("a %s Event for %s", reason, name), func() (bool, string) {
		evs, err := p.cs.EventsV1().Events(p.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if ev.Regarding.Name == name {
				t.Logf("%s: Event %s: %s", name, reason, ev.Note)
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Events of reason %s, none for %s", len(evs.Items), reason, name)
	})
}
