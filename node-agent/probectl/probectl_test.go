package probectl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/node-agent/probectl"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// assertOwnedByNode checks the reference that lets the garbage collector remove the profile with
// its Node.
func assertOwnedByNode(t *testing.T, p *v1alpha1.NodeIOProfile, uid string, name string) {
	t.Helper()
	for _, o := range p.OwnerReferences {
		if o.APIVersion == "v1" && o.Kind == "Node" && o.Name == name && string(o.UID) == uid {
			return
		}
	}
	t.Errorf("NodeIOProfile %s is not owned by Node %s (%s): %+v", p.Name, name, uid, p.OwnerReferences)
}

func assertMeasured(t *testing.T, p *v1alpha1.NodeIOProfile, names ...string) {
	t.Helper()
	if len(p.Status.Targets) != len(names) {
		t.Fatalf("targets = %+v, want %v", p.Status.Targets, names)
	}
	for i, name := range names {
		tr := p.Status.Targets[i]
		if tr.Name != name || tr.Error != "" || tr.SequentialWrite == nil || tr.SequentialWrite.FdatasyncBytesPerSecond <= 0 ||
			tr.ColdRead == nil || len(tr.FileChurn) != 2 || tr.Fdatasync == nil || tr.Fdatasync.Samples != 20 {
			t.Errorf("target %d = %+v, want complete figures for %s", i, tr, name)
		}
	}
	if p.Status.Kernel == "" || p.Status.LastRunTime == nil {
		t.Errorf("kernel %q, lastRunTime %v", p.Status.Kernel, p.Status.LastRunTime)
	}
}

// assertPrinterColumns reads the profile as kubectl get does, as a Table the API server renders
// from the CRD's printer columns: the comparison's ratios and the disk's own fdatasync latency,
// and no column that divides by tmpfs's no-op fdatasync.
func assertPrinterColumns(t *testing.T, e *testenv.Env, p *v1alpha1.NodeIOProfile) {
	t.Helper()
	hc, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.JoinPath(e.Config.Host, "apis", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, "nodeioprofiles", p.Name)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("failed to get NodeIOProfile %s as a Table: %v", p.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("NodeIOProfile %s as a Table: %s %v: %s", p.Name, resp.Status, err, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil || len(table.Rows) != 1 {
		t.Fatalf("NodeIOProfile %s as a Table: %v, %d rows in %s", p.Name, err, len(table.Rows), body)
	}
	got := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		if strings.Contains(strings.ToLower(col.Name+col.Description), "speedup") {
			t.Errorf("column %s (%s) still calls a ratio a speedup", col.Name, col.Description)
		}
		got[col.Name] = table.Rows[0].Cells[i]
	}
	c, disk := p.Status.Comparison, p.Status.Targets[1].Fdatasync
	want := map[string]any{
		"Write-Tmpfs/Disk": c.BufferedWriteRatio, "Small-Files-Tmpfs/Disk": c.SmallFileCreateRatio, "Read-Tmpfs/Disk": c.ColdReadRatio,
		"Disk-Fdatasync-P50-us": float64(disk.P50Microseconds), "Disk-Fdatasync-P99-us": float64(disk.P99Microseconds),
		"Temp-Files-Tmpfs/Disk": c.TempFileRatio, "Temp-Files-Large-Pages/Disk": c.LargePageTempFileRatio,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("column %s = %v, want %v", name, got[name], w)
		}
	}
}

// assertTempFiles checks that the temporary-file results of a tmpfs and a disk target reached the
// profile: the tmpfs's as mounted and with large pages (or why not), the disk's as mounted only.
func assertTempFiles(t *testing.T, p *v1alpha1.NodeIOProfile) {
	t.Helper()
	tmpfs, disk := p.Status.Targets[0], p.Status.Targets[1]
	for name, rs := range map[string][]v1alpha1.TempFileResult{"tmpfs": tmpfs.TempFiles, "disk": disk.TempFiles} {
		if len(rs) != 1 || rs[0].Files != 4 || rs[0].BytesPerSecond <= 0 || rs[0].MountOptions == "" {
			t.Errorf("%s: temporary files = %+v, want 4 files measured", name, rs)
		}
	}
	if l := tmpfs.LargePageTempFiles; len(l) != 1 || (l[0].Unsupported == "" && !strings.Contains(l[0].MountOptions, "huge=within_size")) {
		t.Errorf("tmpfs: large-page temporary files = %+v", l)
	}
	if disk.LargePageTempFiles != nil {
		t.Errorf("disk: large-page temporary files = %+v, want none", disk.LargePageTempFiles)
	}
	if thp := p.Status.TransparentHugePages; thp == nil || thp.TmpfsDefault == "" {
		t.Errorf("transparentHugePages = %+v", thp)
	}
}

func metricFamilies(t *testing.T, a *runningAgent) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := a.registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

//nolint:staticcheck // the deprecated speedup is still published for one release
func TestCreatesProfileForTmpfsAndDisk(t *testing.T) {
	e := testenv.Require(t, env)
	tmpfs, disk := mountTmpfs(t, "32m", 0), diskDir(t)
	node := createNode(t, e)
	a := startAgent(t, e, testConfig(node.Name, e.Namespace(t),
		probe.Target{Name: "tmpfs", Path: tmpfs}, probe.Target{Name: "disk", Path: disk}), nil)

	p := waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed)
	assertOwnedByNode(t, p, string(node.UID), node.Name)
	assertMeasured(t, p, "tmpfs", "disk")
	if d := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v, want False", d)
	}
	if k := p.Status.Targets[0].Kind; k != v1alpha1.TargetTmpfs || p.Status.Targets[0].Provenance.FilesystemType != "tmpfs" {
		t.Errorf("tmpfs target: kind %s, provenance %+v", k, p.Status.Targets[0].Provenance)
	}
	if c := p.Status.Comparison; c == nil || c.TmpfsTarget != "tmpfs" || c.DiskTarget != "disk" || c.BufferedWriteRatio == "" || c.SmallFileCreateRatio == "" ||
		c.TempFileRatio == "" || (c.LargePageTempFileRatio == "") != (p.Status.Targets[0].LargePageTempFiles[0].Unsupported != "") {
		t.Errorf("comparison = %+v, want tmpfs/disk ratios", c)
	}
	assertTempFiles(t, p)
	if s := p.Status.Speedup; s == nil || s.SmallFiles == "" || s.SequentialWrite != "" || s.Fdatasync != "" {
		t.Errorf("deprecated speedup = %+v, want smallFiles and neither sequentialWrite nor fdatasync", s)
	}
	assertPrinterColumns(t, e, p)
	assertEmpty(t, tmpfs)
	assertEmpty(t, disk)

	mfs := metricFamilies(t, a)
	if n := len(mfs["dbtune_node_probe_write_bytes_per_second"].GetMetric()); n < 4 {
		t.Errorf("%d write throughput series, want buffered and fdatasync for both targets", n)
	}
	if h := mfs["dbtune_node_probe_fdatasync_duration_seconds"]; len(h.GetMetric()) != 2 {
		t.Errorf("fdatasync histograms = %v, want one per target", h)
	}
}

// TestCreatesProfileOnDisk is the unprivileged variant: no tmpfs mount, so no comparison.
//
//nolint:staticcheck // the deprecated speedup is still published for one release
func TestCreatesProfileOnDisk(t *testing.T) {
	e := testenv.Require(t, env)
	disk := diskDir(t)
	node := createNode(t, e)
	ns := e.Namespace(t)
	startAgent(t, e, testConfig(node.Name, ns, probe.Target{Path: disk}), nil)

	p := waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed)
	assertOwnedByNode(t, p, string(node.UID), node.Name)
	assertMeasured(t, p, "disk")
	if p.Status.Comparison != nil || p.Status.Speedup != nil {
		t.Errorf("comparison %+v, speedup %+v without a tmpfs target", p.Status.Comparison, p.Status.Speedup)
	}
	assertEmpty(t, disk)
	lease := &coordinationv1.Lease{}
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: probectl.DefaultLeasePrefix + "-0"}, lease); err != nil {
		t.Fatalf("the slot Lease: %v", err)
	}
	if h := lease.Spec.HolderIdentity; h != nil {
		t.Errorf("the slot is still held by %s after the run", *h)
	}
}

func TestOnDemandAnnotationRunsOnce(t *testing.T) {
	e := testenv.Require(t, env)
	node := createNode(t, e)
	rec := &spans{}
	cfg := testConfig(node.Name, e.Namespace(t), probe.Target{Path: diskDir(t)})
	cfg.Prober = rec.wrap(node.Name, probectl.HostProber, 0)
	startAgent(t, e, cfg, nil)

	first := waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed)
	// lastRunTime has a resolution of one second.
	time.Sleep(time.Until(first.Status.LastRunTime.Add(1100 * time.Millisecond)))
	annotate(t, e, node.Name, v1alpha1.ProbeRequestedAnnotation, "2026-03-01T10:00:00Z")

	testenv.Eventually(t, 20*time.Second, func() string {
		p := getProfile(t, e, node.Name)
		if got := p.Annotations[v1alpha1.ProbeServedAnnotation]; got != "2026-03-01T10:00:00Z" {
			return "served annotation is " + got
		}
		if p.Status.LastRunTime.Equal(first.Status.LastRunTime) {
			return "lastRunTime has not changed"
		}
		return ""
	})
	// Neither the served annotation, a repeated value nor an unrelated annotation asks again.
	annotate(t, e, node.Name, v1alpha1.ProbeRequestedAnnotation, "2026-03-01T10:00:00Z")
	annotate(t, e, node.Name, "example.com/unrelated", "x")
	testenv.Consistently(t, 1500*time.Millisecond, func() string {
		if n := rec.count(""); n != 2 {
			return fmt.Sprintf("%d runs, want the start run and exactly one on-demand run", n)
		}
		return ""
	})
}

// TestProbeSlotsSerializeNodes: with one slot, two nodes never probe at the same time, though
// both start together and both get an on-demand request at the same moment.
func TestProbeSlotsSerializeNodes(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	rec := &spans{}
	var nodes []string
	for range 2 {
		node := createNode(t, e)
		cfg := testConfig(node.Name, ns, probe.Target{Path: diskDir(t)})
		cfg.MaxProbingNodes = 1
		cfg.Prober = rec.wrap(node.Name, probectl.HostProber, 300*time.Millisecond)
		nodes = append(nodes, node.Name)
		startAgent(t, e, cfg, nil)
	}
	for _, n := range nodes {
		waitForCondition(t, e, n, v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed)
	}
	for _, n := range nodes {
		annotate(t, e, n, v1alpha1.ProbeRequestedAnnotation, "again")
	}
	testenv.Eventually(t, 20*time.Second, func() string {
		if n := rec.count(""); n != 4 {
			return fmt.Sprintf("%d runs so far, want 4", n)
		}
		return ""
	})
	all := rec.all()
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			a, b := all[i], all[j]
			if a.start.Before(b.end) && b.start.Before(a.end) {
				t.Errorf("runs overlap: %s %s–%s and %s %s–%s", a.node, a.start.Format("15:04:05.000"), a.end.Format("15:04:05.000"),
					b.node, b.start.Format("15:04:05.000"), b.end.Format("15:04:05.000"))
			}
		}
	}
}

// TestWaitsForAHeldSlot: a slot held by a node that stopped renewing it is taken once it has not
// changed for its duration, and the profile says why the node waits meanwhile.
func TestWaitsForAHeldSlot(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	now := metav1.NewMicroTime(time.Now())
	ghost := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: probectl.DefaultLeasePrefix + "-0"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("gone-node_1234"), LeaseDurationSeconds: ptr.To[int32](2),
			AcquireTime: &now, RenewTime: &now},
	}
	if err := e.Client.Create(context.Background(), ghost); err != nil {
		t.Fatal(err)
	}
	node := createNode(t, e)
	rec := &spans{}
	cfg := testConfig(node.Name, ns, probe.Target{Path: diskDir(t)})
	cfg.Prober = rec.wrap(node.Name, probectl.HostProber, 0)
	started := time.Now()
	startAgent(t, e, cfg, nil)

	p := waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionUnknown, v1alpha1.ReasonWaitingForSlot)
	if msg := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProbed).Message; !strings.Contains(msg, "gone-node_1234") {
		t.Errorf("the waiting message does not name the holder: %q", msg)
	}
	waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed)
	if runs := rec.all(); len(runs) != 1 || runs[0].start.Sub(started) < 2*time.Second {
		t.Errorf("runs %+v: want one, started at least the Lease's 2s after the agent", runs)
	}
}

// TestBadTargets: each fault gives a condition a user understands, and no file is left behind.
func TestBadTargets(t *testing.T) {
	e := testenv.Require(t, env)
	tests := []struct {
		name    string
		targets func(t *testing.T) []probe.Target
		options func(o *probe.Options)
		probed  metav1.ConditionStatus
		// reason is the reason of Probed when False, and of Degraded.
		reason string
		words  string
	}{{
		name: "missing directory",
		targets: func(t *testing.T) []probe.Target {
			return []probe.Target{{Path: filepath.Join(t.TempDir(), "missing")}}
		},
		probed: metav1.ConditionFalse, reason: v1alpha1.ReasonProbeTargetNotFound, words: "does not exist",
	}, {
		name: "unreadable device",
		targets: func(t *testing.T) []probe.Target {
			return []probe.Target{{Path: diskDir(t), Device: "/dev/dbtune-no-such-device"}}
		},
		probed: metav1.ConditionFalse, reason: v1alpha1.ReasonDeviceUnreadable, words: "/dev/dbtune-no-such-device",
	}, {
		name: "read-only tmpfs",
		targets: func(t *testing.T) []probe.Target {
			return []probe.Target{{Path: mountTmpfs(t, "8m", unix.MS_RDONLY)}}
		},
		probed: metav1.ConditionFalse, reason: v1alpha1.ReasonTargetReadOnly, words: "read-only",
	}, {
		name: "tmpfs that fills up beside a disk that does not",
		targets: func(t *testing.T) []probe.Target {
			return []probe.Target{{Name: "tmpfs", Path: mountTmpfs(t, "2m", 0)}, {Name: "disk", Path: diskDir(t)}}
		},
		options: func(o *probe.Options) { o.SkipFreeSpaceCheck = true },
		probed:  metav1.ConditionTrue, reason: v1alpha1.ReasonTargetFull, words: "filled up",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			targets := tc.targets(t)
			node := createNode(t, e)
			cfg := testConfig(node.Name, e.Namespace(t), targets...)
			if tc.options != nil {
				tc.options(&cfg.Options)
			}
			startAgent(t, e, cfg, nil)
			probedReason := tc.reason
			if tc.probed == metav1.ConditionTrue {
				probedReason = v1alpha1.ReasonPartiallyProbed
			}
			p := waitForCondition(t, e, node.Name, v1alpha1.ConditionDegraded, metav1.ConditionTrue, tc.reason)
			probed := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProbed)
			if probed == nil || probed.Status != tc.probed || probed.Reason != probedReason {
				t.Errorf("Probed = %+v, want %s/%s", probed, tc.probed, probedReason)
			}
			if msg := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDegraded).Message; !strings.Contains(msg, tc.words) {
				t.Errorf("Degraded message %q does not say %q", msg, tc.words)
			}
			for _, tr := range targets {
				if _, err := os.Stat(tr.Path); err == nil {
					assertEmpty(t, tr.Path)
				}
			}
		})
	}
}

// TestMissingTargetKeepsRunning: the agent outlives a bad target and measures once it is fixed.
func TestMissingTargetKeepsRunning(t *testing.T) {
	e := testenv.Require(t, env)
	dir := filepath.Join(diskDir(t), "created-later")
	node := createNode(t, e)
	a := startAgent(t, e, testConfig(node.Name, e.Namespace(t), probe.Target{Path: dir}), nil)
	waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionFalse, v1alpha1.ReasonProbeTargetNotFound)

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	annotate(t, e, node.Name, v1alpha1.ProbeRequestedAnnotation, "fixed")
	p := waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed)
	if d := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDegraded); d.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v after the fix", d)
	}
	select {
	case <-a.stopped:
		t.Error("the agent stopped")
	default:
	}
}

// TestCanceledRunSaysSoAndCleansUp stops the agent in the middle of a run.
func TestCanceledRunSaysSoAndCleansUp(t *testing.T) {
	e := testenv.Require(t, env)
	disk := diskDir(t)
	node := createNode(t, e)
	cfg := testConfig(node.Name, e.Namespace(t), probe.Target{Path: disk})
	// A long fdatasync loop, so that the stop lands inside the run.
	cfg.Options.FsyncSamples, cfg.Options.FsyncMaxDuration = 200_000, 10*time.Second
	inRun := make(chan struct{})
	var once sync.Once
	cfg.Prober = probectl.ProberFunc(func(ctx context.Context, targets []probe.Target, opts probe.Options) (*probe.Result, error) {
		once.Do(func() { close(inRun) })
		return probe.Run(ctx, targets, opts)
	})
	a := startAgent(t, e, cfg, nil)
	select {
	case <-inRun:
	case <-time.After(20 * time.Second):
		t.Fatal("no run started")
	}
	time.Sleep(300 * time.Millisecond)
	stoppedAt := time.Now()
	a.stop()
	if d := time.Since(stoppedAt); d > 5*time.Second {
		t.Errorf("the agent took %s to stop", d)
	}
	p := getProfile(t, e, node.Name)
	if p == nil {
		t.Fatal("no NodeIOProfile")
	}
	d := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDegraded)
	if d == nil || d.Status != metav1.ConditionTrue || d.Reason != v1alpha1.ReasonCanceled {
		t.Errorf("Degraded = %+v, want True/%s", d, v1alpha1.ReasonCanceled)
	}
	assertEmpty(t, disk)
}

// TestKeepsResultWhileAPIServerIsDown: a result measured while the API server cannot be reached
// is written when it comes back, and the agent keeps running meanwhile.
func TestKeepsResultWhileAPIServerIsDown(t *testing.T) {
	e := testenv.Require(t, env)
	node := createNode(t, e)
	down := &atomic.Bool{}
	restConfig := rest.CopyConfig(e.Config)
	restConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &outage{rt: rt, down: down} })

	inRun, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cfg := testConfig(node.Name, e.Namespace(t), probe.Target{Path: "/probe/disk"})
	cfg.Prober = probectl.ProberFunc(func(context.Context, []probe.Target, probe.Options) (*probe.Result, error) {
		once.Do(func() { close(inRun); <-proceed })
		now := time.Now()
		return &probe.Result{Kernel: "measured-during-outage", StartTime: now.Add(-time.Second), FinishTime: now, DurationMilliseconds: 1000,
			Targets: []probe.TargetResult{{Name: "disk", Path: "/probe/disk", Kind: probe.KindDisk,
				SequentialWrite: &probe.SequentialWriteResult{Bytes: 1, BlockSizeBytes: 1, BufferedBytesPerSecond: 1, FdatasyncBytesPerSecond: 1}}}}, nil
	})
	a := startAgent(t, e, cfg, restConfig)
	select {
	case <-inRun:
	case <-time.After(20 * time.Second):
		t.Fatal("no run started")
	}
	down.Store(true)
	close(proceed)
	testenv.Consistently(t, 2*time.Second, func() string {
		if p := getProfile(t, e, node.Name); p != nil && p.Status.LastRunTime != nil {
			return "the status was written during the outage"
		}
		select {
		case <-a.stopped:
			return "the agent stopped during the outage"
		default:
		}
		return ""
	})
	down.Store(false)
	p := waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed)
	if p.Status.Kernel != "measured-during-outage" {
		t.Errorf("kernel = %q, want the result measured during the outage", p.Status.Kernel)
	}
}

// TestLeavesReadAheadAlone: the read-ahead side's part of the status survives the agent's writes,
// and a profile created before the agent gets the Node as owner.
func TestLeavesReadAheadAlone(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := context.Background()
	node := createNode(t, e)
	if err := e.Client.Create(ctx, &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}); err != nil {
		t.Fatal(err)
	}
	readAhead := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "NodeIOProfile", "metadata": map[string]any{"name": node.Name},
		"status": map[string]any{
			"readAhead": []any{map[string]any{"device": "vda", "currentKiB": int64(4096)}},
			"conditions": []any{map[string]any{"type": v1alpha1.ConditionReadAheadApplied, "status": "True", "reason": "Applied",
				"message": "vda is at 4096 KiB", "lastTransitionTime": "2026-03-01T10:00:00Z"}},
		},
	}}
	if err := e.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(readAhead), client.FieldOwner("test-readahead")); err != nil {
		t.Fatal(err)
	}
	startAgent(t, e, testConfig(node.Name, e.Namespace(t), probe.Target{Path: diskDir(t)}), nil)

	p := waitForCondition(t, e, node.Name, v1alpha1.ConditionProbed, metav1.ConditionTrue, v1alpha1.ReasonProbed)
	assertOwnedByNode(t, p, string(node.UID), node.Name)
	if ra := p.Status.ReadAhead; len(ra) != 1 || ra[0].Device != "vda" || ptr.Deref(ra[0].CurrentKiB, 0) != 4096 {
		t.Errorf("readAhead = %+v, want the read-ahead side's entry", ra)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReadAheadApplied); c == nil || c.Message != "vda is at 4096 KiB" {
		t.Errorf("ReadAheadApplied = %+v, want the read-ahead side's condition", c)
	}
}

// TestUpgradeDropsRatiosAgainstANoOp: a profile an agent of the release before wrote, with the
// speedup that divided by tmpfs's no-op fdatasync, loses those figures with this agent's first
// write; the comparison takes their place, and the deprecated speedup keeps the figures it still
// carries for one release.
//
//nolint:staticcheck // the deprecated speedup is what the upgrade changes
func TestUpgradeDropsRatiosAgainstANoOp(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := context.Background()
	node := createNode(t, e)
	if err := e.Client.Create(ctx, &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}); err != nil {
		t.Fatal(err)
	}
	older := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "NodeIOProfile", "metadata": map[string]any{"name": node.Name},
		"status": map[string]any{
			"kernel":  "6.1.0",
			"targets": []any{map[string]any{"name": "tmpfs", "path": "/probe/tmpfs", "kind": "Tmpfs"}, map[string]any{"name": "disk", "path": "/probe/disk", "kind": "Disk"}},
			"speedup": map[string]any{"tmpfsTarget": "tmpfs", "diskTarget": "disk", "sequentialWrite": "4.64", "coldRead": "96.27",
				"smallFiles": "16.84", "fdatasync": "3995.00"},
		},
	}}
	if err := e.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(older), client.FieldOwner(v1alpha1.AgentFieldManager)); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(node.Name, e.Namespace(t), probe.Target{Name: "tmpfs", Path: "/probe/tmpfs"}, probe.Target{Name: "disk", Path: "/probe/disk"})
	cfg.Prober = probectl.ProberFunc(func(context.Context, []probe.Target, probe.Options) (*probe.Result, error) {
		now := time.Now()
		targets := []probe.TargetResult{
			{Name: "tmpfs", Path: "/probe/tmpfs", Kind: probe.KindTmpfs,
				SequentialWrite: &probe.SequentialWriteResult{Bytes: 1, BlockSizeBytes: 1, BufferedBytesPerSecond: 2000, FdatasyncBytesPerSecond: 2000},
				FileChurn:       []probe.FileChurnResult{{FileSizeBytes: 5000, Files: 1, CreateFilesPerSecond: 800}}},
			{Name: "disk", Path: "/probe/disk", Kind: probe.KindDisk,
				SequentialWrite: &probe.SequentialWriteResult{Bytes: 1, BlockSizeBytes: 1, BufferedBytesPerSecond: 1000, FdatasyncBytesPerSecond: 250},
				FileChurn:       []probe.FileChurnResult{{FileSizeBytes: 5000, Files: 1, CreateFilesPerSecond: 100}}},
		}
		return &probe.Result{Kernel: "measured-after-upgrade", StartTime: now.Add(-time.Second), FinishTime: now, DurationMilliseconds: 1000,
			Targets: targets, Comparison: probe.ComputeComparison(targets)}, nil
	})
	startAgent(t, e, cfg, nil)

	var p *v1alpha1.NodeIOProfile
	testenv.Eventually(t, 20*time.Second, func() string {
		if p = getProfile(t, e, node.Name); p == nil || p.Status.Kernel != "measured-after-upgrade" {
			return "the agent has not written its run yet"
		}
		return ""
	})
	want := &v1alpha1.TmpfsDiskComparison{TmpfsTarget: "tmpfs", DiskTarget: "disk", BufferedWriteRatio: "2.00",
		SmallFileCreateRatio: "8.00", SmallFileSizeBytes: 5000}
	if diff := cmp.Diff(want, p.Status.Comparison); diff != "" {
		t.Errorf("comparison (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&v1alpha1.Speedup{TmpfsTarget: "tmpfs", DiskTarget: "disk", SmallFiles: "8.00"}, p.Status.Speedup); diff != "" {
		t.Errorf("deprecated speedup (-want +got):\n%s", diff)
	}
}
