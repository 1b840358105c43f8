package scratchusage_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// pagesWorld is a node with one pod whose RAM volume is a real tmpfs, the pod's ScratchVolume
// "tmp", and a count of the reconfigurations the agent made.
type pagesWorld struct {
	root, dir string
	pod       *corev1.Pod
	sv        *v1alpha1.ScratchVolume
	client    client.Client
	sets      int
}

func newPagesWorld(t *testing.T, largePages v1alpha1.LargePagesPolicy) *pagesWorld {
	t.Helper()
	w := &pagesWorld{root: t.TempDir(), pod: runningPod("db-0")}
	w.dir = mountVolume(t, w.root, w.pod, "16m")
	w.sv = &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "tmp"},
		Spec: v1alpha1.ScratchVolumeSpec{LargePages: largePages}}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	w.client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(w.pod, w.sv).Build()
	return w
}

// agent starts a node agent's sampler over the world: a new one is what an agent restart gives.
func (w *pagesWorld) agent(t *testing.T, enabled bool, set func(tmpfspages.Paths, string, string) (tmpfspages.Change, error)) *scratchusage.Sampler {
	t.Helper()
	if set == nil {
		set = tmpfspages.Set
	}
	count := func(p tmpfspages.Paths, dir, value string) (tmpfspages.Change, error) {
		c, err := set(p, dir, value)
		if c.Reconfigured || err != nil {
			w.sets++
		}
		return c, err
	}
	s, err := scratchusage.NewSampler(scratchusage.Config{NodeName: "node-a", KubeletRoot: w.root,
		Pages: scratchusage.PagesConfig{Enabled: enabled, Set: count}}, w.client, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (w *pagesWorld) setPolicy(t *testing.T, p v1alpha1.LargePagesPolicy) {
	t.Helper()
	w.sv.Spec.LargePages = p
	if err := w.client.Update(context.Background(), w.sv); err != nil {
		t.Fatal(err)
	}
}

// huge is the tmpfs's huge= option as the mount table shows it.
func (w *pagesWorld) huge(t *testing.T) string {
	t.Helper()
	entries, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.MountPoint == w.dir {
			return tmpfspages.Option(e.SuperOptions)
		}
	}
	t.Fatalf("%s is not mounted", w.dir)
	return ""
}

func requireTHP(t *testing.T) {
	t.Helper()
	k, err := tmpfspages.ReadKernel(tmpfspages.Paths{})
	if err != nil || !k.Supported() {
		testenv.SkipOrFail(t, "this kernel has no transparent huge pages for tmpfs (%v)", err)
	}
	if k.Override() != "" || k.TmpfsDefault != tmpfspages.Never {
		testenv.SkipOrFail(t, "the node overrides tmpfs pages (%+v); the test needs the kernel's defaults", k)
	}
}

// TestAgentGivesAVolumeLargePagesOnceAndPutsThemBack follows one volume through the wishes a user
// can write and an agent restart: the option is set at the first sample, read from the mount
// table, set again by no later round nor by a restarted agent, and put back by Never.
func TestAgentGivesAVolumeLargePagesOnceAndPutsThemBack(t *testing.T) {
	requireTHP(t)
	w := newPagesWorld(t, "") // an object stored before the field existed reads as the default
	s := w.agent(t, true, nil)
	for range 3 {
		st := sampleOnce(t, s)
		if st.LargePages.State != v1alpha1.LargePagesApplied || st.LargePages.Huge != tmpfspages.WithinSize {
			t.Fatalf("large pages = %+v, want Applied within_size", st.LargePages)
		}
	}
	if got := w.huge(t); got != tmpfspages.WithinSize || w.sets != 1 {
		t.Errorf("the mount shows huge=%s after %d reconfigurations, want within_size after 1", got, w.sets)
	}

	restarted := w.agent(t, true, nil)
	if st := sampleOnce(t, restarted); st.LargePages.State != v1alpha1.LargePagesApplied || w.sets != 1 {
		t.Errorf("after a restart: %+v with %d reconfigurations, want Applied and none more", st.LargePages, w.sets)
	}

	w.setPolicy(t, v1alpha1.LargePagesNever)
	st := sampleOnce(t, restarted)
	if st.LargePages.State != v1alpha1.LargePagesDefault || w.huge(t) != tmpfspages.Never || w.sets != 2 {
		t.Errorf("after Never: %+v, mount huge=%s, %d reconfigurations; want Default, never, 2", st.LargePages, w.huge(t), w.sets)
	}
	w.setPolicy(t, v1alpha1.LargePagesWithinSize)
	if st := sampleOnce(t, restarted); st.LargePages.State != v1alpha1.LargePagesApplied || w.huge(t) != tmpfspages.WithinSize {
		t.Errorf("after WithinSize again: %+v, mount huge=%s", st.LargePages, w.huge(t))
	}
}

// TestAgentReportsARefusalOnceAndDoesNotRetry: a kernel that refuses the option is asked once
// per wish, and the report says so in the words a user can act on.
func TestAgentReportsARefusalOnceAndDoesNotRetry(t *testing.T) {
	testenv.RequireRoot(t, "mount a tmpfs")
	w := newPagesWorld(t, v1alpha1.LargePagesWithinSize)
	refuse := func(tmpfspages.Paths, string, string) (tmpfspages.Change, error) {
		return tmpfspages.Change{Before: "never", After: "never"}, fmt.Errorf("huge=within_size: invalid argument (tmpfs: Bad value for 'huge'): %w", tmpfspages.ErrRefused)
	}
	s := w.agent(t, true, refuse)
	for range 5 {
		st := sampleOnce(t, s)
		if st.LargePages.State != v1alpha1.LargePagesUnsupported || !strings.Contains(st.LargePages.Message, "Bad value for 'huge'") {
			t.Fatalf("large pages = %+v, want Unsupported quoting the kernel", st.LargePages)
		}
	}
	if w.sets != 1 {
		t.Errorf("the agent asked the kernel %d times in 5 rounds, want once", w.sets)
	}

	noCap := func(tmpfspages.Paths, string, string) (tmpfspages.Change, error) {
		return tmpfspages.Change{Before: "never", After: "never"}, fmt.Errorf("fspick: operation not permitted: %w", tmpfspages.ErrPermission)
	}
	st := sampleOnce(t, w.agent(t, true, noCap))
	if st.LargePages.State != v1alpha1.LargePagesFailed || !strings.Contains(st.LargePages.Message, "SYS_ADMIN") {
		t.Errorf("without the capability: %+v, want Failed naming SYS_ADMIN", st.LargePages)
	}
}

// TestAgentWithLargePagesOffTouchesNothing: --large-pages=false reports Disabled and leaves the
// mount as the kubelet made it.
func TestAgentWithLargePagesOffTouchesNothing(t *testing.T) {
	testenv.RequireRoot(t, "mount a tmpfs")
	w := newPagesWorld(t, v1alpha1.LargePagesWithinSize)
	st := sampleOnce(t, w.agent(t, false, nil))
	if st.LargePages.State != v1alpha1.LargePagesDisabled || st.LargePages.Huge != tmpfspages.Never {
		t.Errorf("large pages = %+v, want Disabled with huge never", st.LargePages)
	}
	if w.sets != 0 || w.huge(t) != tmpfspages.Never {
		t.Errorf("the agent reconfigured the tmpfs %d times (huge=%s) with large pages off", w.sets, w.huge(t))
	}
}

// TestAgentLeavesOtherMountsAlone: a pod whose volume directory is not a tmpfs mount point yet
// (the kubelet has not mounted it) gets no report, and its directory's filesystem is not changed.
func TestAgentLeavesOtherMountsAlone(t *testing.T) {
	testenv.RequireRoot(t, "mount a tmpfs")
	w := newPagesWorld(t, v1alpha1.LargePagesWithinSize)
	other := runningPod("db-1")
	dir := scratchusage.Volume{PodUID: other.UID, Name: "dbtune-scratch-tmp"}.Dir(w.dir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	set := func(p tmpfspages.Paths, d, v string) (tmpfspages.Change, error) {
		c, err := tmpfspages.Set(p, d, v)
		if err == nil && d != w.dir {
			t.Errorf("the agent changed %s, which is no volume's mount point", d)
		}
		return c, err
	}
	// The second pod's volume directory lies inside the first one's tmpfs, under a kubelet root
	// of its own: a directory on a tmpfs that is not its mount point.
	s, err := scratchusage.NewSampler(scratchusage.Config{NodeName: "node-a", KubeletRoot: w.dir,
		Pages: scratchusage.PagesConfig{Enabled: true, Set: set}}, fake.NewClientBuilder().WithScheme(w.client.Scheme()).WithObjects(other, w.sv).Build(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SampleOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for v, st := range s.Snapshot() {
		if st.LargePages.State != "" {
			t.Errorf("%s/%s was given pages %+v through a directory that is not its mount point", v.Namespace, v.Pod, st.LargePages)
		}
	}
	if w.huge(t) != tmpfspages.Never {
		t.Errorf("the tmpfs holding the directory was changed: huge=%s", w.huge(t))
	}
}
