package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// plugin runs the kubectl-dbtune binary with a kubeconfig and returns its standard output and
// error, and whether it exited 0.
func (s *suite) plugin(t *testing.T, kubeconfig string, args ...string) (string, string, bool) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), s.binary("kubectl-dbtune"), args...)
	// HOME holds the discovery cache kubectl's flags default to; each run gets the real API's answer.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	t.Logf("kubectl dbtune %s (exit %v)\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	return out.String(), errOut.String(), err == nil
}

// TestPluginShowsAndExplainsWhatTheOperatorDid drives kubectl-dbtune against the running manager:
// status of a Ready and a blocked ScratchVolume (text, JSON, YAML), explain of the injected
// StatefulSet, approve refusing when nothing is pending, nodes and version; then as a user bound
// only to the aggregated view role in the namespace: the reads work, the cluster-scoped ones are
// refused with what to ask for.
func TestPluginShowsAndExplainsWhatTheOperatorDid(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	sts := s.applyStatefulSet(t, ns, s.sample(statefulSetSample))
	sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))
	sv = s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	s.waitRolledOut(t, ns, sts.Name, runsScratchVolume(sv))
	sv = s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionRolledOut, metav1.ConditionTrue)
	blocked := filepath.Join(t.TempDir(), "blocked.yaml")
	if err := os.WriteFile(blocked, []byte("apiVersion: dbtune.io/v1alpha1\nkind: ScratchVolume\nmetadata:\n  name: awaits-db\nspec:\n  target:\n    name: not-created-yet\n  size: 256Mi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.kubectl(t, "apply", "-n", ns, "-f", blocked)
	s.waitCondition(t, ns, "awaits-db", v1alpha1.ConditionReady, metav1.ConditionFalse)
	admin := s.cluster.Kubeconfig()

	t.Run("status", func(t *testing.T) {
		out, _, ok := s.plugin(t, admin, "status", "-n", ns)
		for _, want := range []string{
			ns + "/" + sv.Name + ": Ready, 1 of 1 StatefulSet injected",
			"size 512Mi · memory " + v1alpha1.ReasonMemoryBudgetCovered,
			ns + "/awaits-db: not Ready (" + v1alpha1.ReasonTargetNotFound + ")",
			"next: create the StatefulSet, or fix spec.target of awaits-db",
		} {
			if !ok || !strings.Contains(out, want) {
				t.Errorf("status does not say %q", want)
			}
		}
		if row := lineWith(out, "  "+sts.Name+" "); !strings.Contains(row, "yes") || !strings.Contains(row, fmt.Sprintf("%d/%d updated, %d ready", replicas(sts), replicas(sts), replicas(sts))) {
			t.Errorf("the target row of %s does not show it injected and rolled out: %q", sts.Name, row)
		}

		out, _, ok = s.plugin(t, admin, "status", sv.Name, "-n", ns, "-o", "json")
		var report struct {
			Kind           string `json:"kind"`
			ScratchVolumes []struct {
				Name     string `json:"name"`
				Ready    struct{ Status string }
				Injected int32 `json:"injectedTargets"`
				Targets  []struct {
					Name      string `json:"name"`
					Injected  bool   `json:"injected"`
					RolledOut bool   `json:"rolledOut"`
				} `json:"targets"`
			} `json:"scratchVolumes"`
		}
		if err := json.Unmarshal([]byte(out), &report); !ok || err != nil {
			t.Fatalf("status -o json did not print a report: %v", err)
		}
		if len(report.ScratchVolumes) != 1 || report.ScratchVolumes[0].Ready.Status != "True" || report.ScratchVolumes[0].Injected != 1 ||
			len(report.ScratchVolumes[0].Targets) != 1 || !report.ScratchVolumes[0].Targets[0].Injected || !report.ScratchVolumes[0].Targets[0].RolledOut {
			t.Errorf("status -o json does not report one Ready ScratchVolume with its injected, rolled-out target: %+v", report)
		}
		if out, _, ok = s.plugin(t, admin, "status", "-A", "-o", "yaml"); !ok || !strings.Contains(out, "kind: ScratchVolumeStatusReport") || !strings.Contains(out, "namespace: "+ns) {
			t.Error("status -A -o yaml does not report this namespace's ScratchVolumes")
		}
		if _, errOut, ok := s.plugin(t, admin, "status", "no-such-sv", "-n", ns); ok || !strings.Contains(errOut, `there is no ScratchVolume "no-such-sv" in namespace `+ns) {
			t.Error("status of a ScratchVolume that does not exist does not say so")
		}
		if _, errOut, ok := s.plugin(t, admin, "status", "-o", "wide", "-n", ns); ok || !strings.Contains(errOut, "use json or yaml") {
			t.Error("an output format the plugin does not write is not refused")
		}
	})

	t.Run("explain", func(t *testing.T) {
		out, _, ok := s.plugin(t, admin, "explain", "statefulset/"+sts.Name, "-n", ns)
		for _, want := range []string{
			"ScratchVolume " + sv.Name + " (by name)",
			"carried: configuration " + sv.Status.Targets[0].ConfigHash,
			"spec.volumes[name=" + sv.VolumeName() + "]",
			"spec.initContainers[name=" + sv.InitContainerName() + "]",
			"volumeMounts[mountPath=" + sv.EffectiveMountPath() + "]",
			"metadata.annotations[" + sv.InjectionAnnotation() + "]",
			"Tmpdir", "nothing missing: injected and rolled out",
		} {
			if !ok || !strings.Contains(out, want) {
				t.Errorf("explain does not say %q", want)
			}
		}
		if strings.Contains(out, "belong to no ScratchVolume") {
			t.Error("explain leaves entries of the operator's unattributed, such as the drop-in file's mount")
		}
		if strings.Contains(out, "awaits-db (by") {
			t.Error("explain names a ScratchVolume that selects another StatefulSet as selecting this one")
		}
		if _, errOut, ok := s.plugin(t, admin, "explain", "deployment/"+sts.Name, "-n", ns); ok || !strings.Contains(errOut, "explain takes a StatefulSet") {
			t.Error("explain of another kind is not refused with a reason")
		}
		if _, errOut, ok := s.plugin(t, admin, "explain", "sts/not-created-yet", "-n", ns); ok || !strings.Contains(errOut, `there is no StatefulSet "not-created-yet"`) {
			t.Error("explain of a missing StatefulSet does not say so")
		}
	})

	t.Run("approve refuses when nothing waits", func(t *testing.T) {
		if _, errOut, ok := s.plugin(t, admin, "approve", sv.Name, "-n", ns); ok || !strings.Contains(errOut, "nothing is pending on ScratchVolume "+sv.Name) {
			t.Error("approve with nothing pending does not refuse")
		}
		if _, errOut, ok := s.plugin(t, admin, "approve", sv.Name, "-n", ns, "--target", "other"); ok || !strings.Contains(errOut, `has no target "other"; its targets are: `+sts.Name) {
			t.Error("approve of a target the ScratchVolume does not have does not say which it has")
		}
		if _, errOut, ok := s.plugin(t, admin, "approve", sv.Name, "-n", ns, "--change", "0123456789"); ok || !strings.Contains(errOut, "change 0123456789 is not pending") {
			t.Error("approve of a change that is not pending does not refuse it")
		}
		if got := s.scratchVolume(t, ns, sv.Name).Annotations[v1alpha1.ApproveChangeAnnotation]; got != "" {
			t.Errorf("a refused approval wrote %s=%q", v1alpha1.ApproveChangeAnnotation, got)
		}
	})

	t.Run("nodes and version", func(t *testing.T) {
		eventually(t, "the node agent's NodeIOProfile in kubectl dbtune nodes", func() (bool, string) {
			out, errOut, ok := s.plugin(t, admin, "nodes", "-o", "json")
			return ok && strings.Contains(out, `"node": "`+agentNode+`"`) && strings.Contains(out, `"probed"`), out + errOut
		})
		out, _, ok := s.plugin(t, admin, "nodes", agentNode)
		if !ok || !strings.Contains(out, "TEMP-FILES LARGE-PAGES/DISK") || !strings.HasPrefix(lineWith(out, agentNode), agentNode+" ") {
			t.Errorf("nodes does not show %s in its table", agentNode)
		}
		out, _, ok = s.plugin(t, admin, "version")
		if !ok || !strings.Contains(out, "server: Kubernetes v1.37") || !strings.Contains(out, "ScratchVolume") || !strings.Contains(out, "dbtune kubectl plugin ") {
			t.Error("version does not give the plugin's, the cluster's and the kinds it serves")
		}
	})

	t.Run("a user with the view role", func(t *testing.T) {
		viewer := s.viewer(t, ns)
		eventually(t, "the view role to aggregate dbtune-viewer's rules", func() (bool, string) {
			out, errOut, ok := s.plugin(t, viewer, "status", "-n", ns)
			return ok && strings.Contains(out, ns+"/"+sv.Name+": Ready"), out + errOut
		})
		if out, _, ok := s.plugin(t, viewer, "explain", "statefulset/"+sts.Name, "-n", ns); !ok || !strings.Contains(out, "ScratchVolume "+sv.Name+" (by name)") {
			t.Error("a viewer cannot explain the StatefulSet")
		}
		if _, errOut, ok := s.plugin(t, viewer, "status", "-A"); ok || !strings.Contains(errOut, "you may not list scratchvolumes at the cluster scope") || !strings.Contains(errOut, "ClusterRoleBinding") {
			t.Error("status -A for a user bound in one namespace does not say what it needs")
		}
		if _, errOut, ok := s.plugin(t, viewer, "nodes"); ok || !strings.Contains(errOut, "you may not list nodeioprofiles at the cluster scope") || !strings.Contains(errOut, "a RoleBinding does not reach them") {
			t.Error("nodes for a user bound in one namespace does not say what it needs")
		}
		if _, errOut, ok := s.plugin(t, viewer, "status", "-n", "default"); ok || !strings.Contains(errOut, "you may not list scratchvolumes in namespace default") {
			t.Error("status in a namespace the user may not read does not say so")
		}
	})
}

// viewer makes a ServiceAccount bound to the view ClusterRole in ns only, installs the operator's
// dbtune-viewer role (aggregated into view), and returns a kubeconfig that authenticates as it.
func (s *suite) viewer(t *testing.T, ns string) string {
	t.Helper()
	s.kubectl(t, "apply", "--server-side", "-f", filepath.Join(s.root, "config", "rbac", "users", "viewer_role.yaml"))
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "plugin-viewer", Namespace: ns}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "plugin-viewer", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	if err := s.admin.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if err := s.admin.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	token, err := s.clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "viewer.kubeconfig")
	if err := writeKubeconfig(path, s.cluster.Config(), "plugin-viewer", token.Status.Token); err != nil {
		t.Fatal(err)
	}
	return path
}

// lineWith is the first line of out that contains s.
func lineWith(out, s string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
