package upgrade_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/test/testenv"
	"github.com/dbtune/scratch-operator/test/testmanager"
)

// TestPluginApprovesWhatWaits lets a change that waits for the user through with kubectl dbtune: the
// last release's fleet, rendered otherwise, is adopted by this build's controller, whose changes
// wait; status shows them with the command that approves each; approve refuses a target that shares
// its change with others, an id that is not pending and a user who may only read, and then writes
// exactly the id status showed, which the controller applies.
func TestPluginApprovesWhatWaits(t *testing.T) {
	all := releases(t)
	rel := renderedOtherwise(t, all[len(all)-1], "mariadb", "pool")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl := startWith(ctx, t, rel)
	testmanager.Run(t, cl.env.Config, cl.client.Scheme(), func(r *controllers.ScratchVolumeReconciler) { r.Version = nextVersion })
	testenv.Eventually(t, time.Minute, func() string { return notAdopted(ctx, t, cl.client) })
	testenv.Eventually(t, 30*time.Second, func() string {
		return conditionIs(scratchVolume(t, cl.client, "pool"), v1alpha1.ConditionChangesPending, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval)
	})
	plugin := buildPlugin(t)
	kubeconfig := writeAdminKubeconfig(t, cl.env.Config)
	run := func(args ...string) (string, string, bool) {
		t.Helper()
		cmd := exec.CommandContext(ctx, plugin, append(args, "--kubeconfig="+kubeconfig, "-n", fleetNamespace)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		t.Logf("kubectl dbtune %s (exit %v)\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		return out.String(), errOut.String(), err == nil
	}

	mariadb := scratchVolume(t, cl.client, "mariadb")
	change := mariadb.Status.Targets[0].PendingChange
	if change == nil {
		t.Fatal("the rendering change does not wait on mariadb")
	}
	poolChange := scratchVolume(t, cl.client, "pool").Status.Targets[0].PendingChange.ID
	out, _, ok := run("status")
	for _, want := range []string{
		"mariadb: change " + change.ID + " awaits approval",
		"approve: kubectl dbtune approve mariadb -n fleet --change " + change.ID,
		"pool-a, pool-b, pool-c: change " + poolChange + " awaits approval",
	} {
		if !ok || !strings.Contains(out, want) {
			t.Errorf("status does not say %q", want)
		}
	}

	if _, errOut, ok := run("approve", "pool", "--target", "pool-a"); ok || !strings.Contains(errOut, "pending on StatefulSets pool-a, pool-b, pool-c alike") {
		t.Error("approving one target of a change three share is not refused")
	}
	if _, errOut, ok := run("approve", "mariadb", "--change", "0000000000"); ok || !strings.Contains(errOut, "it shows change "+change.ID+" (mariadb)") {
		t.Error("approving an id that is not pending is not refused with what is")
	}
	grantReadOnly(ctx, t, cl, "plugin-viewer")
	if _, errOut, ok := run("approve", "mariadb", "--as", "plugin-viewer"); ok || !strings.Contains(errOut, "you may not patch scratchvolumes in namespace fleet") || !strings.Contains(errOut, "edit role") {
		t.Error("a user who may only read is not told what approving needs")
	}
	if got := scratchVolume(t, cl.client, "mariadb").Annotations[v1alpha1.ApproveChangeAnnotation]; got != "" {
		t.Fatalf("a refused approval wrote %s=%q", v1alpha1.ApproveChangeAnnotation, got)
	}

	out, _, ok = run("approve", "mariadb", "--change", change.ID)
	if !ok || !strings.Contains(out, "approved change "+change.ID+" (mariadb) on fleet/mariadb") {
		t.Fatalf("approve did not approve the change status showed")
	}
	if got := scratchVolume(t, cl.client, "mariadb").Annotations[v1alpha1.ApproveChangeAnnotation]; got != change.ID {
		t.Errorf("approve wrote %s=%q, want %s", v1alpha1.ApproveChangeAnnotation, got, change.ID)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		sts := statefulSet(t, cl.client, "mariadb")
		if got := sts.Spec.Template.Annotations[mariadb.InjectionAnnotation()]; got != change.ConfigHash {
			return fmt.Sprintf("the approved change is not written yet: hash %s, want %s", got, change.ConfigHash)
		}
		return conditionIs(scratchVolume(t, cl.client, "mariadb"), v1alpha1.ConditionChangesPending, metav1.ConditionFalse, v1alpha1.ReasonNoPendingChanges)
	})
	if _, errOut, ok := run("approve", "mariadb"); ok || !strings.Contains(errOut, "nothing is pending on ScratchVolume mariadb") {
		t.Error("approving again once the change is applied is not refused")
	}
	if _, _, ok := run("approve", "pool"); !ok {
		t.Error("approving the pool's shared change for all its targets failed")
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		return conditionIs(scratchVolume(t, cl.client, "pool"), v1alpha1.ConditionChangesPending, metav1.ConditionFalse, v1alpha1.ReasonNoPendingChanges)
	})
}

// buildPlugin compiles kubectl-dbtune from the working tree.
func buildPlugin(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kubectl-dbtune")
	cmd := exec.Command("go", "build", "-o", bin, "./api/kubectl-dbtune")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./api/kubectl-dbtune: %v\n%s", err, out)
	}
	return bin
}

// writeAdminKubeconfig writes cfg, the API server's admin with a client certificate, as a kubeconfig.
func writeAdminKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// grantReadOnly lets user read ScratchVolumes in the fleet's namespace, as dbtune-viewer does.
func grantReadOnly(ctx context.Context, t *testing.T, cl *cluster, user string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: fleetNamespace},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"scratchvolumes"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: fleetNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := cl.client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}
