package install_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// access is one request a ServiceAccount must, or must not, be allowed to make.
type access struct {
	verb, group, resource, subresource string
	// namespaced requests go to the test's namespace; the others are cluster-wide.
	namespaced bool
	// elsewhere sends a namespaced request to another namespace than the test's.
	elsewhere bool
	allowed   bool
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	return a.verb + " " + r
}

// TestGeneratedRolesAreNarrow reads the ClusterRoles `make manifests` generates and fails on
// anything a reviewer would have to argue about: wildcards, Secrets, exec, or the verbs that
// let a role grant itself more.
func TestGeneratedRolesAreNarrow(t *testing.T) {
	forbidden := []struct{ resource, why string }{
		{"secrets", "neither binary reads a Secret"},
		{"pods/exec", "neither binary runs commands in pods"},
		{"pods/attach", "neither binary attaches to pods"},
		{"serviceaccounts/token", "neither binary mints tokens"},
	}
	for _, file := range []string{"role.yaml", "node-agent/role.yaml"} {
		cluster, namespaced := generatedRoles(t, file)
		for _, rule := range cluster.Rules {
			if slices.Contains(rule.Resources, "leases") {
				t.Errorf("%s: the ClusterRole grants Leases in every namespace (%v); they belong in the Role of the install namespace", file, rule)
			}
		}
		if namespaced.Namespace != "dbtune-system" {
			t.Errorf("%s: the Role is in namespace %q, want dbtune-system", file, namespaced.Namespace)
		}
		for _, rule := range append(cluster.Rules, namespaced.Rules...) {
			for _, field := range [][]string{rule.Verbs, rule.Resources, rule.APIGroups, rule.NonResourceURLs} {
				if slices.Contains(field, "*") {
					t.Errorf("%s: rule %v has a wildcard", file, rule)
				}
			}
			for _, verb := range []string{"escalate", "bind", "impersonate"} {
				if slices.Contains(rule.Verbs, verb) {
					t.Errorf("%s: rule %v grants %q", file, rule, verb)
				}
			}
			for _, f := range forbidden {
				if slices.Contains(rule.Resources, f.resource) {
					t.Errorf("%s: rule %v grants %s, but %s", file, rule, f.resource, f.why)
				}
			}
		}
	}
}

// TestLeastPrivilege binds the generated ClusterRoles to two ServiceAccounts, as config/default
// does, and asks the API server's authorizer what each identity may do, by
// SelfSubjectAccessReview and by real requests, impersonating the ServiceAccounts.
func TestLeastPrivilege(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	manager := bindServiceAccount(t, e, ns, managerName, "role.yaml")
	agent := bindServiceAccount(t, e, ns, agentName, "node-agent/role.yaml")

	t.Run("manager", func(t *testing.T) {
		checkAccess(t, manager, ns, []access{
			{verb: "get", group: "apps", resource: "statefulsets", namespaced: true, allowed: true},
			{verb: "watch", group: "apps", resource: "statefulsets", allowed: true},
			{verb: "patch", group: "apps", resource: "statefulsets", namespaced: true, allowed: true},
			{verb: "create", resource: "configmaps", namespaced: true, allowed: true},
			{verb: "delete", resource: "configmaps", namespaced: true, allowed: true},
			{verb: "create", group: "events.k8s.io", resource: "events", namespaced: true, allowed: true},
			{verb: "list", resource: "nodes", allowed: true},
			{verb: "patch", group: "dbtune.io", resource: "scratchvolumes", subresource: "status", namespaced: true, allowed: true},
			{verb: "update", group: "dbtune.io", resource: "scratchvolumes", subresource: "finalizers", namespaced: true, allowed: true},
			{verb: "patch", group: "dbtune.io", resource: "readaheadpolicies", subresource: "status", allowed: true},
			{verb: "create", group: "coordination.k8s.io", resource: "leases", namespaced: true, allowed: true},
			// Status is written by merge patches, finalizers by patches of the object, Leases by
			// the leader election's get, create and update: nothing else.
			{verb: "update", group: "dbtune.io", resource: "scratchvolumes", subresource: "status", namespaced: true},
			{verb: "update", group: "dbtune.io", resource: "scratchvolumes", namespaced: true},
			{verb: "update", group: "dbtune.io", resource: "readaheadpolicies", subresource: "status"},
			{verb: "update", resource: "configmaps", namespaced: true},
			{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespaced: true},

			{verb: "create", group: "coordination.k8s.io", resource: "leases", namespaced: true, elsewhere: true},
			{verb: "list", group: "coordination.k8s.io", resource: "leases"},
			{verb: "get", resource: "secrets", namespaced: true},
			{verb: "list", resource: "secrets"},
			{verb: "patch", group: "apps", resource: "deployments", namespaced: true},
			{verb: "create", group: "apps", resource: "statefulsets", namespaced: true},
			{verb: "delete", group: "apps", resource: "statefulsets", namespaced: true},
			{verb: "update", group: "apps", resource: "statefulsets", namespaced: true},
			{verb: "create", resource: "pods", subresource: "exec", namespaced: true},
			{verb: "delete", resource: "pods", namespaced: true},
			{verb: "patch", resource: "nodes"},
			{verb: "create", group: "dbtune.io", resource: "nodeioprofiles"},
			{verb: "patch", group: "dbtune.io", resource: "nodeioprofiles", subresource: "status"},
			{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
		})
		t.Run("real requests", func(t *testing.T) { managerRequests(t, e, manager, ns) })
	})
	t.Run("node agent", func(t *testing.T) {
		checkAccess(t, agent, ns, []access{
			{verb: "list", group: "dbtune.io", resource: "readaheadpolicies", allowed: true},
			{verb: "watch", group: "dbtune.io", resource: "readaheadpolicies", allowed: true},
			{verb: "get", resource: "nodes", allowed: true},
			// The scratch-usage sampler watches the pods of its node (a field selector the
			// authorizer cannot check) and never changes one or reads inside it.
			{verb: "list", resource: "pods", allowed: true},
			{verb: "watch", resource: "pods", allowed: true},
			{verb: "delete", resource: "pods", namespaced: true},
			{verb: "patch", resource: "pods", namespaced: true},
			{verb: "get", resource: "pods", subresource: "log", namespaced: true},
			{verb: "get", group: "coordination.k8s.io", resource: "leases", namespaced: true, allowed: true},
			{verb: "update", group: "coordination.k8s.io", resource: "leases", namespaced: true, allowed: true},
			{verb: "create", group: "dbtune.io", resource: "nodeioprofiles", allowed: true},
			{verb: "patch", group: "dbtune.io", resource: "nodeioprofiles", subresource: "status", allowed: true},
			{verb: "create", group: "events.k8s.io", resource: "events", namespaced: true, allowed: true},

			{verb: "get", resource: "secrets", namespaced: true},
			{verb: "patch", group: "apps", resource: "statefulsets", namespaced: true},
			{verb: "get", group: "apps", resource: "statefulsets", namespaced: true},
			{verb: "get", resource: "configmaps", namespaced: true},
			{verb: "create", resource: "pods", subresource: "exec", namespaced: true},
			{verb: "patch", resource: "nodes"},
			{verb: "update", group: "dbtune.io", resource: "readaheadpolicies", subresource: "status"},
			{verb: "patch", group: "dbtune.io", resource: "readaheadpolicies"},
			{verb: "update", group: "dbtune.io", resource: "scratchvolumes", subresource: "status", namespaced: true},
			{verb: "get", group: "coordination.k8s.io", resource: "leases", namespaced: true, elsewhere: true},
			{verb: "update", group: "coordination.k8s.io", resource: "leases", namespaced: true, elsewhere: true},
			{verb: "watch", group: "coordination.k8s.io", resource: "leases"},
			// It reads its slot Leases directly and never lists, watches or deletes them.
			{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespaced: true},
			{verb: "list", group: "coordination.k8s.io", resource: "leases", namespaced: true},
		})
		t.Run("real requests", func(t *testing.T) { agentRequests(t, e, agent, ns) })
	})
}

// bindServiceAccount creates a ServiceAccount in ns and binds to it copies of the roles `make
// manifests` generated in file, as config/default does: the ClusterRole (named after ns, so that
// tests do not collide) by a ClusterRoleBinding, and the Role, moved from the install namespace
// to ns, by a RoleBinding there. It returns a client that impersonates the ServiceAccount as the
// API server would authenticate it.
func bindServiceAccount(t *testing.T, e *testenv.Env, ns, name, file string) client.Client {
	t.Helper()
	ctx := context.Background()
	cluster, namespaced := generatedRoles(t, file)
	roleName := fmt.Sprintf("%s-%s", cluster.Name, ns)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
	copied := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: cluster.Rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: roleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects:   subjects,
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: namespaced.Name}, Rules: namespaced.Rules}
	roleBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: namespaced.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: namespaced.Name},
		Subjects:   subjects,
	}
	for _, o := range []client.Object{sa, copied, binding, role, roleBinding} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatalf("failed to create %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), binding)
		_ = e.Client.Delete(context.Background(), copied)
	})
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, name),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkAccess asks, as the impersonated identity, whether each request would be allowed. RBAC
// takes a moment to see a new binding, so the first check waits for the first allowed answer.
func checkAccess(t *testing.T, c client.Client, ns string, table []access) {
	t.Helper()
	for i, a := range table {
		attrs := &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource}
		if a.namespaced {
			attrs.Namespace = ns
			if a.elsewhere {
				attrs.Namespace = "kube-system"
			}
		}
		allowed, reason := selfReview(t, c, attrs, i == 0 && a.allowed)
		if allowed != a.allowed {
			t.Errorf("%s: allowed = %t, want %t (%s)", a, allowed, a.allowed, reason)
		}
	}
}

func selfReview(t *testing.T, c client.Client, attrs *authorizationv1.ResourceAttributes, waitForAllowed bool) (bool, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
		if err := c.Create(context.Background(), review); err != nil {
			t.Fatalf("SelfSubjectAccessReview: %v", err)
		}
		st := review.Status
		if st.Allowed || !waitForAllowed || time.Now().After(deadline) {
			return st.Allowed, strings.TrimSpace(st.Reason + " " + st.EvaluationError)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// managerRequests makes the requests the checks above stand for: patching a StatefulSet works,
// reading a Secret and patching a Deployment are refused.
func managerRequests(t *testing.T, e *testenv.Env, as client.Client, ns string) {
	ctx := context.Background()
	sts := testenv.StatefulSet(ns, "db")
	deploy := newDeployment(ns, "web")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-credentials"}, StringData: map[string]string{"password": "x"}}
	for _, o := range []client.Object{sts, deploy, secret} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	annotate := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"dbtune.test/touched":"yes"}}}`))
	if err := as.Patch(ctx, testenv.StatefulSet(ns, "db"), annotate); err != nil {
		t.Errorf("the manager could not patch a StatefulSet: %v", err)
	}
	expectForbidden(t, "get Secret", as.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}))
	expectForbidden(t, "patch Deployment", as.Patch(ctx, newDeployment(ns, "web"), annotate))
}

// agentRequests: writing a NodeIOProfile's status and reading a Lease in its namespace work;
// reading a Lease elsewhere or a Secret, and patching a StatefulSet, are refused.
func agentRequests(t *testing.T, e *testenv.Env, as client.Client, ns string) {
	ctx := context.Background()
	profile := &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: "node-" + ns}}
	sts := testenv.StatefulSet(ns, "db-agent")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-secret"}}
	for _, o := range []client.Object{profile, sts, secret} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), profile) })
	status := client.RawPatch(types.MergePatchType, []byte(`{"status":{"kernel":"6.1.0"}}`))
	if err := as.Status().Patch(ctx, &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: profile.Name}}, status); err != nil {
		t.Errorf("the node agent could not patch a NodeIOProfile's status: %v", err)
	}
	if err := as.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dbtune-probe-slot-0"}, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("get Lease in its namespace: got %v, want NotFound (allowed, absent)", err)
	}
	// What the agent's slot pool does with a slot: create it, then take, renew and release it
	// by updates, reading it back in between.
	slot := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dbtune-probe-slot-0"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a")}}
	if err := as.Create(ctx, slot); err != nil {
		t.Errorf("the node agent could not create its slot Lease: %v", err)
	} else {
		slot.Spec.HolderIdentity = nil
		if err := as.Update(ctx, slot); err != nil {
			t.Errorf("the node agent could not release its slot Lease: %v", err)
		}
		if err := as.Get(ctx, client.ObjectKeyFromObject(slot), &coordinationv1.Lease{}); err != nil {
			t.Errorf("the node agent could not read its slot Lease: %v", err)
		}
	}
	expectForbidden(t, "get Lease in another namespace", as.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "dbtune-probe-slot-0"}, &coordinationv1.Lease{}))
	expectForbidden(t, "get Secret", as.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}))
	annotate := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"dbtune.test/touched":"yes"}}}`))
	expectForbidden(t, "patch StatefulSet", as.Patch(ctx, testenv.StatefulSet(ns, "db-agent"), annotate))
}

func expectForbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want Forbidden", what, err)
	}
}

func newDeployment(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1"}}},
			},
		},
	}
}
