package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
	"github.com/dbtune/scratch-operator/test/testenv"
)

const sampleMountinfo = `22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 22 0:26 / /run/bench-scratchusage/pods/a/volumes/kubernetes.io~empty-dir/dbtune-scratch-tmp rw - tmpfs tmpfs rw,size=16384k
31 22 0:27 / /run/bench-scratchusage rw - tmpfs tmpfs rw
32 22 0:28 / /run/bench-scratchusage2/pods/x rw - tmpfs tmpfs rw
33 22 0:29 / /run/bench-scratchusage/pods/b\040c/volumes/kubernetes.io~empty-dir/v rw - tmpfs tmpfs rw
34 30 0:30 / /run/bench-scratchusage/pods/a/volumes/kubernetes.io~empty-dir/dbtune-scratch-tmp rw - tmpfs tmpfs rw
35 22 0:31 / /run rw - tmpfs tmpfs rw
`

func TestMountsUnder(t *testing.T) {
	got := mountsUnder(sampleMountinfo, "/run/bench-scratchusage/")
	want := []string{
		// Deepest first; the point mounted twice is listed twice; the escaped space is a space.
		"/run/bench-scratchusage/pods/a/volumes/kubernetes.io~empty-dir/dbtune-scratch-tmp",
		"/run/bench-scratchusage/pods/b c/volumes/kubernetes.io~empty-dir/v",
		"/run/bench-scratchusage/pods/a/volumes/kubernetes.io~empty-dir/dbtune-scratch-tmp",
		"/run/bench-scratchusage",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mountsUnder (-want +got):\n%s", diff)
	}
	if got := mountsUnder(sampleMountinfo, "/srv"); len(got) != 0 {
		t.Errorf("mountsUnder(/srv) = %v, want nothing", got)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:          "/plain",
		`/a\040b\011c`:    "/a b\tc",
		`/back\134slash`:  `/back\slash`,
		`/not\08escape`:   `/not\08escape`,
		`/cut\04`:         `/cut\04`,
		`/trailing\`:      `/trailing\`,
		`/two\040\040end`: "/two  end",
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFillOf(t *testing.T) {
	const size = 16 << 20
	for i, want := range map[int][2]int64{0: {size / 4, size / 4}, 1: {0, 0}, 2: {size + 1, size}, 5: {size / 4, size / 4}, 7: {0, 0}} {
		if w, u := fillOf(i, size); w != want[0] || u != want[1] {
			t.Errorf("fillOf(%d) = write %d, used %d; want %d, %d", i, w, u, want[0], want[1])
		}
	}
}

// TestReadersServeTheVolumes: both readers hand the sampler's discovery every pod's volume, so
// that the two series measure the same work. A transform that dropped the annotation or the
// volume would leave the cache-like series with nothing to sample.
func TestReadersServeTheVolumes(t *testing.T) {
	const n = 7
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, podFor(i, resource.MustParse("16Mi")))
	}
	for _, kind := range readers {
		r, err := newReader(kind, pods, testenv.Scheme())
		if err != nil {
			t.Fatal(err)
		}
		var list corev1.PodList
		if err := r.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		if vols := scratchusage.Discover(list.Items, nodeName); len(vols) != n {
			t.Errorf("%s: discovery finds %d volumes in the listed pods, want %d", kind, len(vols), n)
		}
	}
}
