package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestNodeIOProfileForTheAgentsNode waits for the agent's first probe to be published as the
// NodeIOProfile of its node, owned by the Node, then asks for another run through the annotation a
// user would set and waits for it to be served. No profile appears for the nodes it does not run on.
func TestNodeIOProfileForTheAgentsNode(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	profile := s.waitProbed(t, nil)
	node := testenv.Get[corev1.Node](t, s.admin, "", agentNode)
	if len(profile.OwnerReferences) != 1 || profile.OwnerReferences[0].Kind != "Node" || profile.OwnerReferences[0].UID != node.UID {
		t.Errorf("NodeIOProfile %s is not owned by Node %s (uid %s): %+v", profile.Name, node.Name, node.UID, profile.OwnerReferences)
	}
	assertProbeResults(t, profile)

	// lastRunTime has a resolution of one second, and a run here takes a tenth of one: ask in the
	// next second, or a run served at once can finish within the first run's second.
	time.Sleep(time.Until(profile.Status.LastRunTime.Add(1100 * time.Millisecond)))
	requested := strconv.FormatInt(time.Now().UnixNano(), 10)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.ProbeRequestedAnnotation, requested)
	if err := s.admin.Patch(t.Context(), profile, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	again := s.waitProbed(t, func(p *v1alpha1.NodeIOProfile) string {
		if served := p.Annotations[v1alpha1.ProbeServedAnnotation]; served != requested {
			return fmt.Sprintf("the agent served request %q, not %q yet", served, requested)
		}
		if !p.Status.LastRunTime.After(profile.Status.LastRunTime.Time) {
			return "no run finished since the request"
		}
		return ""
	})
	assertProbeResults(t, again)

	for _, other := range []string{"kwok-node-2", "kwok-node-3"} {
		err := s.admin.Get(t.Context(), client.ObjectKey{Name: other}, &v1alpha1.NodeIOProfile{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("a NodeIOProfile exists for %s, where no agent runs (get: %v)", other, err)
		}
	}
}

// waitProbed waits for the agent's NodeIOProfile to be Probed and to pass check, when given.
func (s *suite) waitProbed(t *testing.T, check func(*v1alpha1.NodeIOProfile) string) *v1alpha1.NodeIOProfile {
	t.Helper()
	var p *v1alpha1.NodeIOProfile
	eventually(t, "NodeIOProfile "+agentNode+" to be probed", func() (bool, string) {
		p = &v1alpha1.NodeIOProfile{}
		if err := s.admin.Get(t.Context(), client.ObjectKey{Name: agentNode}, p); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProbed)
		switch {
		case c == nil:
			return false, "no Probed condition yet"
		case c.Status != metav1.ConditionTrue:
			return false, fmt.Sprintf("Probed=%s reason %s: %s", c.Status, c.Reason, c.Message)
		case p.Status.LastRunTime == nil:
			return false, "no lastRunTime"
		}
		if check != nil {
			if why := check(p); why != "" {
				return false, why
			}
		}
		return true, ""
	})
	return p
}

func assertProbeResults(t *testing.T, p *v1alpha1.NodeIOProfile) {
	t.Helper()
	found := map[string]bool{}
	for _, r := range p.Status.Targets {
		found[r.Name] = true
		if r.Error != "" || r.SequentialWrite == nil || r.SequentialWrite.FdatasyncBytesPerSecond <= 0 || len(r.FileChurn) == 0 || r.Fdatasync == nil {
			t.Errorf("target %s of NodeIOProfile %s lacks results: %+v", r.Name, p.Name, r)
		}
	}
	if !found["tmpfs"] || !found["disk"] {
		t.Errorf("NodeIOProfile %s reports targets %v, want tmpfs and disk", p.Name, found)
	}
	if c := p.Status.Comparison; c == nil || c.SmallFileCreateRatio == "" || c.BufferedWriteRatio == "" {
		t.Errorf("NodeIOProfile %s compares no tmpfs with disk: %+v", p.Name, c)
	}
}
