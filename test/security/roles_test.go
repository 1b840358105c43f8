package security_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// The user ClusterRoles of config/rbac/users.
const (
	editorRole    = "dbtune-scratchvolume-editor"
	viewerRole    = "dbtune-viewer"
	readAheadRole = "dbtune-readaheadpolicy-editor"
)

// The aggregation labels the built-in roles select on.
const (
	toAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	toEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	toView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// TestUserRolesShipWithTheInstall builds every installation variant: each carries the three user
// ClusterRoles, aggregated as docs/install.md says, except overlays/no-aggregation, which carries
// the same rules without any aggregation label.
func TestUserRolesShipWithTheInstall(t *testing.T) {
	c := require(t)
	aggregated := map[string][]string{
		editorRole:    {toAdmin, toEdit},
		viewerRole:    {toAdmin, toEdit, toView},
		readAheadRole: nil,
	}
	defaults := userRoles(t, c, "default")
	for _, dir := range []string{"default", "overlays/no-read-ahead", "overlays/no-large-pages", "overlays/prometheus", "overlays/no-aggregation"} {
		t.Run(dir, func(t *testing.T) {
			roles := userRoles(t, c, dir)
			for name, labels := range aggregated {
				if dir == "overlays/no-aggregation" {
					labels = nil
				}
				if got := aggregationLabels(roles[name]); !slices.Equal(got, labels) {
					t.Errorf("%s: aggregation labels %v, want %v", name, got, labels)
				}
				if diff := cmp.Diff(defaults[name].Rules, roles[name].Rules); diff != "" {
					t.Errorf("%s: rules differ from config/default (-default +%s):\n%s", name, dir, diff)
				}
			}
		})
	}
}

// userRoles returns the user ClusterRoles of a build, failing when one is missing.
func userRoles(t *testing.T, c *cluster, dir string) map[string]*rbacv1.ClusterRole {
	t.Helper()
	objs, err := c.kustomize(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*rbacv1.ClusterRole{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			t.Fatal(err)
		}
		if name := role.Name; name == editorRole || name == viewerRole || name == readAheadRole {
			out[name] = role
		} else if labels := aggregationLabels(role); len(labels) > 0 {
			t.Errorf("config/%s: ClusterRole %s is aggregated (%v), but it is not a user role", dir, name, labels)
		}
	}
	for _, name := range []string{editorRole, viewerRole, readAheadRole} {
		if out[name] == nil {
			t.Fatalf("config/%s has no ClusterRole %s", dir, name)
		}
	}
	return out
}

// aggregationLabels lists the aggregate-to-* labels set to "true" on role, sorted.
func aggregationLabels(role *rbacv1.ClusterRole) []string {
	var out []string
	for k, v := range role.Labels {
		if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") && v == "true" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestBuiltInRolesAggregateTheUserRoles waits for kube-controller-manager's clusterrole-aggregation
// controller to copy the user roles' rules into the built-in admin, edit and view roles, as it does
// on every cluster, and checks what the built-in roles then grant on dbtune.io: ScratchVolume writes
// to admin and edit only, reads to all three, ReadAheadPolicy and NodeIOProfile writes and status
// writes to none.
func TestBuiltInRolesAggregateTheUserRoles(t *testing.T) {
	c := require(t)
	includes := map[string][]string{
		"admin": {editorRole, viewerRole},
		"edit":  {editorRole, viewerRole},
		"view":  {viewerRole},
	}
	for builtin, ours := range includes {
		waitAggregated(t, c, builtin, ours)
	}
	for builtin := range includes {
		role := &rbacv1.ClusterRole{}
		if err := c.admin.Get(ctxFor(t), client.ObjectKey{Name: builtin}, role); err != nil {
			t.Fatal(err)
		}
		for _, never := range []string{
			"create readaheadpolicies", "update readaheadpolicies", "delete readaheadpolicies",
			"create nodeioprofiles", "patch nodeioprofiles", "patch nodeioprofiles/status",
			"update scratchvolumes/status", "patch scratchvolumes/status", "patch readaheadpolicies/status",
		} {
			if grants(role.Rules, never) {
				t.Errorf("the built-in role %s grants %s", builtin, never)
			}
		}
		if writes := grants(role.Rules, "create scratchvolumes"); writes != (builtin != "view") {
			t.Errorf("the built-in role %s: create scratchvolumes = %t, want %t", builtin, writes, builtin != "view")
		}
	}
}

// waitAggregated waits until every rule of each of ours is among the built-in role's rules: the
// aggregation controller copies them verbatim.
func waitAggregated(t *testing.T, c *cluster, builtin string, ours []string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() string {
		role := &rbacv1.ClusterRole{}
		if err := c.admin.Get(ctxFor(t), client.ObjectKey{Name: builtin}, role); err != nil {
			return err.Error()
		}
		for _, name := range ours {
			src := &rbacv1.ClusterRole{}
			if err := c.admin.Get(ctxFor(t), client.ObjectKey{Name: name}, src); err != nil {
				return err.Error()
			}
			for _, rule := range src.Rules {
				if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return cmp.Equal(r, rule) }) {
					return fmt.Sprintf("kube-controller-manager has not aggregated %s's rule %v into the built-in role %s", name, rule, builtin)
				}
			}
		}
		return ""
	})
}

// grants reports whether rules allow "verb resource[/subresource]" in the dbtune.io group.
func grants(rules []rbacv1.PolicyRule, request string) bool {
	verb, res, _ := strings.Cut(request, " ")
	match := func(list []string, v string) bool {
		return slices.Contains(list, v) || slices.Contains(list, rbacv1.ResourceAll)
	}
	for _, r := range rules {
		if match(r.APIGroups, v1alpha1.GroupVersion.Group) && match(r.Resources, res) && match(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// expectation is what one user may and may not do, as "verb resource[/subresource]" on dbtune.io.
type expectation struct {
	allowed, denied []string
}

var (
	// namespaceEditor is a user with edit or admin in a namespace, or the editor and viewer roles
	// bound there: ScratchVolumes only, and never a status.
	namespaceEditor = expectation{
		allowed: []string{
			"create scratchvolumes", "update scratchvolumes", "patch scratchvolumes", "delete scratchvolumes",
			"deletecollection scratchvolumes", "get scratchvolumes", "list scratchvolumes", "watch scratchvolumes",
			"get scratchvolumes/status",
		},
		denied: []string{
			"update scratchvolumes/status", "patch scratchvolumes/status",
			// Cluster-scoped: a RoleBinding grants none of them, whatever the role holds.
			"create readaheadpolicies", "patch readaheadpolicies", "list readaheadpolicies",
			"create nodeioprofiles", "list nodeioprofiles",
		},
	}
	namespaceViewer = expectation{
		allowed: []string{"get scratchvolumes", "list scratchvolumes", "watch scratchvolumes", "get scratchvolumes/status"},
		denied: []string{
			"create scratchvolumes", "update scratchvolumes", "patch scratchvolumes", "delete scratchvolumes",
			"deletecollection scratchvolumes", "patch scratchvolumes/status", "create readaheadpolicies",
		},
	}
	// clusterEditor is edit or admin bound cluster-wide: ScratchVolumes in every namespace, and
	// ReadAheadPolicies and NodeIOProfiles to read, never to write.
	clusterEditor = expectation{
		allowed: []string{
			"create scratchvolumes", "delete scratchvolumes", "list scratchvolumes",
			"get readaheadpolicies", "list readaheadpolicies", "watch readaheadpolicies", "get readaheadpolicies/status",
			"get nodeioprofiles", "list nodeioprofiles", "watch nodeioprofiles", "get nodeioprofiles/status",
		},
		denied: []string{
			"create readaheadpolicies", "update readaheadpolicies", "patch readaheadpolicies", "delete readaheadpolicies",
			"deletecollection readaheadpolicies", "update readaheadpolicies/status",
			"create nodeioprofiles", "patch nodeioprofiles", "delete nodeioprofiles", "patch nodeioprofiles/status",
			"update scratchvolumes/status",
		},
	}
	clusterViewer = expectation{
		allowed: []string{
			"list scratchvolumes", "get scratchvolumes/status", "list readaheadpolicies", "get readaheadpolicies/status",
			"list nodeioprofiles", "watch nodeioprofiles", "get nodeioprofiles/status",
		},
		denied: []string{"create scratchvolumes", "create readaheadpolicies", "patch nodeioprofiles", "patch readaheadpolicies/status"},
	}
	nodeTuner = expectation{
		allowed: []string{
			"create readaheadpolicies", "update readaheadpolicies", "patch readaheadpolicies", "delete readaheadpolicies",
			"list readaheadpolicies", "get readaheadpolicies/status",
		},
		denied: []string{"update readaheadpolicies/status", "patch readaheadpolicies/status", "create scratchvolumes", "patch nodeioprofiles"},
	}
)

// TestNamespaceUsers binds the built-in roles in one namespace, as a cluster administrator grants
// a team its namespace, and the user roles directly (as without aggregation), then asks the API
// server what each user may do and makes the requests that matter.
func TestNamespaceUsers(t *testing.T) {
	c := require(t)
	ns := c.namespace(t)
	users := []struct {
		name  string
		roles []string
		want  expectation
	}{
		{"ns-edit", []string{"edit"}, namespaceEditor},
		{"ns-admin", []string{"admin"}, namespaceEditor},
		{"ns-explicit", []string{editorRole, viewerRole}, namespaceEditor},
		{"ns-view", []string{"view"}, namespaceViewer},
	}
	for _, u := range users {
		for _, role := range u.roles {
			c.create(t, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: u.name + "-" + role},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.name}},
			})
		}
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) { checkAccess(t, c.as(t, u.name), ns, u.want) })
	}

	t.Run("an edit user creates, changes and deletes a ScratchVolume", func(t *testing.T) {
		editor := c.as(t, "ns-edit")
		sv := newScratchVolume(ns, "tmp", "db")
		if err := editor.Create(ctxFor(t), sv); err != nil {
			t.Fatalf("create: %v", err)
		}
		if err := editor.Patch(ctxFor(t), newScratchVolume(ns, "tmp", ""), mergePatch(`{"spec":{"size":"64Mi"}}`)); err != nil {
			t.Errorf("patch the spec: %v", err)
		}
		expectForbidden(t, "patch the status", editor.Status().Patch(ctxFor(t), newScratchVolume(ns, "tmp", ""),
			mergePatch(`{"status":{"injectedTargets":3}}`)))
		if err := editor.Delete(ctxFor(t), newScratchVolume(ns, "tmp", "")); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
	t.Run("a view user reads but cannot write", func(t *testing.T) {
		c.create(t, newScratchVolume(ns, "seen", "db"))
		viewer := c.as(t, "ns-view")
		list := &v1alpha1.ScratchVolumeList{}
		if err := viewer.List(ctxFor(t), list, client.InNamespace(ns)); err != nil || len(list.Items) == 0 {
			t.Errorf("list: %d items, %v", len(list.Items), err)
		}
		if err := viewer.Get(ctxFor(t), client.ObjectKey{Namespace: ns, Name: "seen"}, &v1alpha1.ScratchVolume{}); err != nil {
			t.Errorf("get: %v", err)
		}
		expectForbidden(t, "create", viewer.Create(ctxFor(t), newScratchVolume(ns, "mine", "db")))
		expectForbidden(t, "patch", viewer.Patch(ctxFor(t), newScratchVolume(ns, "seen", ""), mergePatch(`{"spec":{"size":"64Mi"}}`)))
		expectForbidden(t, "delete", viewer.Delete(ctxFor(t), newScratchVolume(ns, "seen", "")))
	})
	t.Run("an admin of the namespace cannot write ReadAheadPolicies", func(t *testing.T) {
		expectForbidden(t, "create", c.as(t, "ns-admin").Create(ctxFor(t), newReadAheadPolicy("ns-admin")))
	})
}

// TestClusterWideUsers binds roles with ClusterRoleBindings: edit and admin everywhere still
// cannot write a ReadAheadPolicy or a NodeIOProfile; view reads all three kinds; only
// dbtune-readaheadpolicy-editor, bound explicitly, or a cluster administrator writes policies.
func TestClusterWideUsers(t *testing.T) {
	c := require(t)
	users := []struct {
		name, role string
		want       expectation
	}{
		{"cluster-edit", "edit", clusterEditor},
		{"cluster-admin-role", "admin", clusterEditor},
		{"cluster-view", "view", clusterViewer},
		{"node-tuner", readAheadRole, nodeTuner},
	}
	for _, u := range users {
		c.create(t, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "security-test-" + u.name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: u.role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.name}},
		})
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) { checkAccess(t, c.as(t, u.name), "", u.want) })
	}

	existing := newReadAheadPolicy("existing")
	c.create(t, existing) // as a cluster administrator (system:masters), who may
	for _, name := range []string{"cluster-edit", "cluster-admin-role"} {
		t.Run(name+" cannot write ReadAheadPolicies", func(t *testing.T) {
			as := c.as(t, name)
			expectForbidden(t, "create", as.Create(ctxFor(t), newReadAheadPolicy(name)))
			expectForbidden(t, "patch", as.Patch(ctxFor(t), newReadAheadPolicy("existing"), mergePatch(`{"spec":{"readAheadKiB":4096}}`)))
			expectForbidden(t, "delete", as.Delete(ctxFor(t), newReadAheadPolicy("existing")))
		})
	}
	t.Run("cluster-view reads every kind", func(t *testing.T) {
		viewer := c.as(t, "cluster-view")
		for _, list := range []client.ObjectList{&v1alpha1.ReadAheadPolicyList{}, &v1alpha1.NodeIOProfileList{}, &v1alpha1.ScratchVolumeList{}} {
			if err := viewer.List(ctxFor(t), list); err != nil {
				t.Errorf("list %T: %v", list, err)
			}
		}
		expectForbidden(t, "create a ReadAheadPolicy", viewer.Create(ctxFor(t), newReadAheadPolicy("cluster-view")))
	})
	t.Run("node-tuner writes ReadAheadPolicies", func(t *testing.T) {
		tuner := c.as(t, "node-tuner")
		rap := newReadAheadPolicy("node-tuner")
		if err := tuner.Create(ctxFor(t), rap); err != nil {
			t.Fatalf("create: %v", err)
		}
		if err := tuner.Delete(ctxFor(t), rap); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
}

// checkAccess asks the API server, as the user behind as, about each request of want, by
// SelfSubjectAccessReview: namespaced resources in ns (in every namespace when ns is ""),
// cluster-scoped ones cluster-wide. Bindings and aggregation take a moment to reach the
// authorizer, so allowed requests are polled until they are allowed (30 s in all); denied ones
// are asked after.
func checkAccess(t *testing.T, as client.Client, ns string, want expectation) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, req := range want.allowed {
		for {
			allowed, reason := review(t, as, ns, req)
			if allowed {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: denied, want allowed (%s)", req, reason)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, req := range want.denied {
		if allowed, reason := review(t, as, ns, req); allowed {
			t.Errorf("%s: allowed, want denied (%s)", req, reason)
		}
	}
}

func review(t *testing.T, as client.Client, ns, request string) (bool, string) {
	t.Helper()
	verb, res, _ := strings.Cut(request, " ")
	resource, sub, _ := strings.Cut(res, "/")
	attrs := &authorizationv1.ResourceAttributes{Verb: verb, Group: v1alpha1.GroupVersion.Group, Resource: resource, Subresource: sub}
	if resource == "scratchvolumes" {
		attrs.Namespace = ns
	}
	r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
	if err := as.Create(context.Background(), r); err != nil {
		t.Fatalf("SelfSubjectAccessReview of %s: %v", request, err)
	}
	return r.Status.Allowed, strings.TrimSpace(r.Status.Reason + " " + r.Status.EvaluationError)
}

func expectForbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want Forbidden", what, err)
	}
}

func mergePatch(p string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(p)) }

// newScratchVolume is a small Generic ScratchVolume for the StatefulSet target; with target ""
// it only names the object, for patches and deletes.
func newScratchVolume(ns, name, target string) *v1alpha1.ScratchVolume {
	sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if target != "" {
		sv.Spec = v1alpha1.ScratchVolumeSpec{
			Target:  v1alpha1.ScratchTarget{Name: target},
			Size:    resource.MustParse("32Mi"),
			Purpose: v1alpha1.PurposeGeneric,
		}
	}
	return sv
}

func newReadAheadPolicy(name string) *v1alpha1.ReadAheadPolicy {
	return &v1alpha1.ReadAheadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "security-test-" + name},
		Spec: v1alpha1.ReadAheadPolicySpec{
			Devices:      v1alpha1.DeviceSelector{Names: []v1alpha1.DeviceGlob{"dm-*"}},
			ReadAheadKiB: 8192,
		},
	}
}
