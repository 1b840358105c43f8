//go:build realnode

package realnode_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
)

// testReadAhead attaches a loop device on the host and applies a ReadAheadPolicy for it: the agent,
// from its container through the read-ahead component's host mounts, sets the device's
// read-ahead, reports it in the node's NodeIOProfile and the policy's status, and puts the original
// back when the policy is deleted.
func (p *product) testReadAhead(t *testing.T) {
	ctx := t.Context()
	loop := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{})
	original := readAheadKiB(t, loop.Name)
	want := original * 8
	policy := &v1alpha1.ReadAheadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode-" + loop.Name},
		Spec: v1alpha1.ReadAheadPolicySpec{
			NodeSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{
				"kubernetes.io/hostname": v1alpha1.LabelValue(p.node.Name()),
			}},
			Devices:      v1alpha1.DeviceSelector{Names: []v1alpha1.DeviceGlob{v1alpha1.DeviceGlob(loop.Name)}},
			ReadAheadKiB: want,
			Mode:         v1alpha1.ReadAheadSet,
		},
	}
	if err := p.cl.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = p.cl.Delete(ctx, policy)
		}
	})
	waitFor(t, 2*time.Minute, fmt.Sprintf("%s's read-ahead at %d KiB", loop.Name, want), func() (bool, string) {
		got := readAheadKiB(t, loop.Name)
		return got == want, fmt.Sprintf("%d KiB", got)
	})
	waitFor(t, time.Minute, "the policy applied on the node in its status and the NodeIOProfile", func() (bool, string) {
		if err := p.cl.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
			return false, err.Error()
		}
		var profile v1alpha1.NodeIOProfile
		if err := p.cl.Get(ctx, client.ObjectKey{Name: p.node.Name()}, &profile); err != nil {
			return false, err.Error()
		}
		var reported string
		for _, d := range profile.Status.ReadAhead {
			if d.Device == loop.Name && d.Policy == policy.Name && d.CurrentKiB != nil && *d.CurrentKiB == want &&
				d.OriginalKiB != nil && *d.OriginalKiB == original {
				reported = d.Device
			}
		}
		return policy.Status.NodesApplied == 1 && reported != "",
			fmt.Sprintf("policy applied on %d of %d nodes; NodeIOProfile read-ahead %+v", policy.Status.NodesApplied, policy.Status.NodesMatched, profile.Status.ReadAhead)
	})
	t.Logf("the agent set %s's read-ahead %d → %d KiB from its container", loop.Name, original, want)

	if err := p.cl.Delete(ctx, policy); err != nil {
		t.Fatal(err)
	}
	deleted = true
	waitFor(t, 2*time.Minute, fmt.Sprintf("%s's read-ahead back at %d KiB", loop.Name, original), func() (bool, string) {
		got := readAheadKiB(t, loop.Name)
		return got == original, fmt.Sprintf("%d KiB", got)
	})
}

// readAheadKiB reads a block device's read-ahead from the host's sysfs.
func readAheadKiB(t *testing.T, device string) int64 {
	t.Helper()
	data, err := os.ReadFile("/sys/block/" + device + "/queue/read_ahead_kb")
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
