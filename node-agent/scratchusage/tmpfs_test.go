package scratchusage_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
	"github.com/dbtune/scratch-operator/test/testenv"
)

const mib = 1 << 20

// runningPod is a pod of node-a into which ScratchVolume "tmp" injected its RAM volume.
func runningPod(name string) *corev1.Pod {
	const sv = "tmp"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, UID: types.UID("uid-" + name),
			Annotations: map[string]string{"scratch.dbtune.io/" + sv: "hash"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Volumes: []corev1.Volume{{Name: "dbtune-scratch-" + sv,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// mountVolume lays out a pod's volume as the kubelet does under root: a tmpfs of size mounted at
// pods/<uid>/volumes/kubernetes.io~empty-dir/<name>. It returns the mount point.
func mountVolume(t *testing.T, root string, p *corev1.Pod, size string) string {
	t.Helper()
	testenv.RequireRoot(t, "mount the tmpfs of a memory emptyDir")
	dir := scratchusage.Volume{PodUID: p.UID, Name: p.Spec.Volumes[0].Name}.Dir(root)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		testenv.SkipOrFail(t, "needs CAP_SYS_ADMIN to mount a tmpfs (%v): run as root, as CI does", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("failed to unmount %s: %v", dir, err)
		}
	})
	return dir
}

func newSampler(t *testing.T, root string, pods ...*corev1.Pod) *scratchusage.Sampler {
	t.Helper()
	b := fake.NewClientBuilder()
	for _, p := range pods {
		b = b.WithObjects(p)
	}
	s, err := scratchusage.NewSampler(scratchusage.Config{NodeName: "node-a", KubeletRoot: root}, b.Build(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sampleOnce(t *testing.T, s *scratchusage.Sampler) scratchusage.Stats {
	t.Helper()
	if err := s.SampleOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if len(snap) != 1 {
		t.Fatalf("sampled %d volumes, want 1: %v", len(snap), snap)
	}
	for _, st := range snap {
		return st
	}
	panic("unreachable")
}

// writeFile writes n bytes to path, or as many as fit; it reports whether the tmpfs ran out.
func writeFile(t *testing.T, path string, n int) (full bool) {
	t.Helper()
	err := os.WriteFile(path, make([]byte, n), 0o600)
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// TestSamplerFollowsARealTmpfs writes into a tmpfs laid out as the kubelet lays out a memory
// emptyDir, and checks that the figures follow: use, peak after a delete, full episodes.
func TestSamplerFollowsARealTmpfs(t *testing.T) {
	root := t.TempDir()
	p := runningPod("db-0")
	dir := mountVolume(t, root, p, "16m")
	s := newSampler(t, root, p)

	st := sampleOnce(t, s)
	if st.SizeBytes != 16*mib || st.UsedBytes != 0 || st.FullTotal != 0 {
		t.Fatalf("empty volume: %+v, want size 16 MiB, nothing used, never full", st)
	}
	writeFile(t, filepath.Join(dir, "sort-1"), 10*mib)
	st = sampleOnce(t, s)
	if st.UsedBytes != 10*mib || st.PeakBytes != 10*mib || st.WindowPeakBytes != 10*mib {
		t.Errorf("after writing 10 MiB: %+v, want used and peaks of 10 MiB", st)
	}
	if err := os.Remove(filepath.Join(dir, "sort-1")); err != nil {
		t.Fatal(err)
	}
	st = sampleOnce(t, s)
	if st.UsedBytes != 0 || st.PeakBytes != 10*mib {
		t.Errorf("after removing the file: %+v, want nothing used and the 10 MiB peak kept", st)
	}
	for episode := uint64(1); episode <= 2; episode++ {
		if !writeFile(t, filepath.Join(dir, "big"), 32*mib) {
			t.Fatal("32 MiB fitted in a 16 MiB tmpfs")
		}
		if st = sampleOnce(t, s); !st.Full || st.FullTotal != episode || st.PeakBytes != 16*mib {
			t.Errorf("filled up (episode %d): %+v, want full, %d episodes, peak 16 MiB", episode, st, episode)
		}
		sampleOnce(t, s) // still full: the same episode
		if err := os.Remove(filepath.Join(dir, "big")); err != nil {
			t.Fatal(err)
		}
		if st = sampleOnce(t, s); st.Full || st.FullTotal != episode {
			t.Errorf("emptied (episode %d): %+v, want not full, %d episodes", episode, st, episode)
		}
	}
}

// TestSamplerNeverOpensFiles: a FIFO (whose open blocks until a writer comes) and a file no one
// may read sit in the volume; sampling neither blocks nor fails, and counts their bytes.
func TestSamplerNeverOpensFiles(t *testing.T) {
	root := t.TempDir()
	p := runningPod("db-0")
	dir := mountVolume(t, root, p, "8m")
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "secret"), 2*mib)
	if err := os.Chmod(filepath.Join(dir, "secret"), 0); err != nil {
		t.Fatal(err)
	}
	s := newSampler(t, root, p)
	done := make(chan scratchusage.Stats, 1)
	go func() { done <- sampleOnce(t, s) }()
	select {
	case st := <-done:
		if st.UsedBytes != 2*mib {
			t.Errorf("used %d bytes, want the 2 MiB of the unreadable file", st.UsedBytes)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sampling blocked on a FIFO in the volume: it opened a file")
	}
}

// TestSamplerSkipsWhatIsNotTmpfs: a volume directory that is not a tmpfs mount point (the mount
// did not propagate to the agent) is not reported, rather than reported with the disk's figures.
func TestSamplerSkipsWhatIsNotTmpfs(t *testing.T) {
	root := t.TempDir()
	p := runningPod("db-0")
	dir := scratchusage.Volume{PodUID: p.UID, Name: "dbtune-scratch-tmp"}.Dir(root)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := scratchusage.HostFS.Usage(dir); !errors.Is(err, scratchusage.ErrNotTmpfs) {
		t.Skipf("the test directory %s is on a tmpfs itself (%v)", dir, err)
	}
	s := newSampler(t, root, p, runningPod("db-1"))
	if err := s.SampleOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if snap := s.Snapshot(); len(snap) != 0 {
		t.Errorf("sampled %v from a directory on disk and a missing one, want nothing", snap)
	}
}

// TestMetrics reads the metrics of a sampled volume as Prometheus would scrape them.
func TestMetrics(t *testing.T) {
	root := t.TempDir()
	p := runningPod("db-0")
	dir := mountVolume(t, root, p, "4m")
	writeFile(t, filepath.Join(dir, "f"), 1*mib)
	reg := prometheus.NewRegistry()
	s := newSampler(t, root, p)
	sampleOnce(t, s)
	if err := reg.Register(s.Collector()); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "," + l.GetName() + "=" + l.GetValue()
			}
			got[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	labels := ",namespace=db,pod=db-0,scratchvolume=tmp"
	want := map[string]float64{
		"dbtune_scratch_volume_used_bytes" + labels:                 1 * mib,
		"dbtune_scratch_volume_size_bytes" + labels:                 4 * mib,
		"dbtune_scratch_volume_peak_bytes" + labels + ",window=pod": 1 * mib,
		"dbtune_scratch_volume_peak_bytes" + labels + ",window=1h":  1 * mib,
		"dbtune_scratch_volume_full_total" + labels:                 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}
