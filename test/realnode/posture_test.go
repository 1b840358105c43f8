//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// testContainersAsDeclared reads, from the host, what every installed container runs with, and
// compares it with what its manifest declares: the user, no capabilities, no privilege escalation,
// the runtime's seccomp filter, a read-only root file system and read-only host mounts.
func (p *product) testContainersAsDeclared(t *testing.T) {
	ctx := t.Context()
	pods, err := p.installedPods(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) < 3 {
		t.Fatalf("%d pods in %s, want the two managers and the agent", len(pods), installNamespace)
	}
	for i := range pods {
		pod := &pods[i]
		for _, status := range pod.Status.ContainerStatuses {
			idx := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == status.Name })
			if idx < 0 || status.State.Running == nil {
				t.Errorf("%s/%s is not running: %+v", pod.Name, status.Name, status.State)
				continue
			}
			pid, err := p.node.ContainerPID(status.ContainerID)
			if err != nil {
				t.Error(err)
				continue
			}
			assertDeclared(t, pod.Name+"/"+status.Name, pid, &pod.Spec, &pod.Spec.Containers[idx])
		}
	}
}

// assertDeclared checks the process pid of container c of a pod against its security context.
func assertDeclared(t *testing.T, name string, pid int, spec *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	st, err := procStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := procMounts(pid)
	if err != nil {
		t.Fatal(err)
	}
	podSC := spec.SecurityContext
	if podSC == nil {
		podSC = &corev1.PodSecurityContext{}
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	uid := strings.Fields(st["Uid"])
	var checked []string
	if want := firstInt64(sc.RunAsUser, podSC.RunAsUser); want != nil {
		checked = append(checked, fmt.Sprintf("uid %d", *want))
		for _, id := range uid {
			if id != fmt.Sprint(*want) {
				t.Errorf("%s runs with uids %v, its manifest says runAsUser %d", name, uid, *want)
				break
			}
		}
	}
	if nonRoot := firstBool(sc.RunAsNonRoot, podSC.RunAsNonRoot); nonRoot != nil && *nonRoot {
		checked = append(checked, "non-root")
		if slices.Contains(uid, "0") {
			t.Errorf("%s runs as root (uids %v), its manifest says runAsNonRoot", name, uid)
		}
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s is privileged", name)
	}
	if caps := sc.Capabilities; caps != nil && slices.Contains(caps.Drop, "ALL") && len(caps.Add) == 0 {
		checked = append(checked, "no capabilities")
		for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
			if st[set] != "0000000000000000" {
				t.Errorf("%s has %s %s, its manifest drops ALL and adds none", name, set, st[set])
			}
		}
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		checked = append(checked, "no_new_privs")
		if st["NoNewPrivs"] != "1" {
			t.Errorf("%s has NoNewPrivs %s, its manifest says allowPrivilegeEscalation: false", name, st["NoNewPrivs"])
		}
	}
	if seccomp := firstSeccomp(sc.SeccompProfile, podSC.SeccompProfile); seccomp != nil && seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault {
		checked = append(checked, "seccomp filter")
		if st["Seccomp"] != "2" {
			t.Errorf("%s has Seccomp mode %s, want 2 (filter) for RuntimeDefault", name, st["Seccomp"])
		}
	}
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		checked = append(checked, "read-only /")
		if opts, ok := mounts["/"]; !ok || !slices.Contains(opts, "ro") {
			t.Errorf("%s's root file system is mounted %v, its manifest says readOnlyRootFilesystem", name, opts)
		}
	}
	for _, vm := range c.VolumeMounts {
		opts, ok := mounts[vm.MountPath]
		if !ok {
			t.Errorf("%s has no mount at %s (volume %s)", name, vm.MountPath, vm.Name)
			continue
		}
		if vm.ReadOnly && !slices.Contains(opts, "ro") {
			t.Errorf("%s mounts %s %v, its manifest says readOnly", name, vm.MountPath, opts)
		}
		if vm.ReadOnly {
			checked = append(checked, "read-only "+vm.MountPath)
		}
	}
	t.Logf("%s (pid %d): %s", name, pid, strings.Join(checked, ", "))
}

// procStatus reads /proc/PID/status as a map of its fields.
func procStatus(pid int) (map[string]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// procMounts reads the process's mount table (its own mount namespace) as the per-mount options
// of the last mount at each mount point.
func procMounts(pid int) (map[string][]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		out[f[4]] = strings.Split(f[5], ",")
	}
	return out, nil
}

func firstInt64(vs ...*int64) *int64 {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstBool(vs ...*bool) *bool {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstSeccomp(vs ...*corev1.SeccompProfile) *corev1.SeccompProfile {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// permission is one verb on one resource of an API group, as RBAC rules grant it.
type permission struct{ group, resource, verb string }

func (p permission) String() string {
	g := p.group
	if g == "" {
		g = "core"
	}
	return p.verb + " " + g + "/" + p.resource
}

// notExercisedHere are permissions of the install that no request of this test's scenario shows,
// each with what needs it.
var notExercisedHere = map[string]string{
	managerName + ": create core/configmaps":                     "a server-side apply that creates the drop-in ConfigMap is a patch request, also authorized for create",
	managerName + ": update dbtune.io/scratchvolumes/finalizers": "checked by OwnerReferencesPermissionEnforcement (enabled here) when the ConfigMap's owner reference blocks the ScratchVolume's deletion",
	managerName + ": patch core/events":                          "an Event repeated within minutes is patched (its count), not created again",
	managerName + ": patch events.k8s.io/events":                 "an Event repeated within minutes is patched (its count), not created again",
	agentName + ": patch events.k8s.io/events":                   "an Event repeated within minutes is patched (its count), not created again",
	agentName + ": patch dbtune.io/nodeioprofiles":               "adopting a NodeIOProfile that something else created before the agent",
}

// readVerbs are the verbs of a read grant. Controllers read through their cache, which lists (or
// streams the list over a watch) and watches, and rarely gets one object directly: a read grant
// counts as used when any of its verbs was.
var readVerbs = []string{"get", "list", "watch"}

// testPermissions compares what the installed ServiceAccounts were granted with what they did, from
// the API server's audit log: a request refused for lack of permission is a missing grant, and a
// granted permission no request used (apart from notExercisedHere) is an unused one. Unused grants
// are looked for only when ranAll tells that every step ran: a step left out makes no requests.
func (p *product) testPermissions(ranAll bool) func(t *testing.T) {
	return func(t *testing.T) { p.comparePermissions(t, ranAll) }
}

func (p *product) comparePermissions(t *testing.T, ranAll bool) {
	ctx := t.Context()
	used := map[string]map[permission]int{}
	refused := map[string][]string{}
	events, err := localcluster.ReadAuditLog(p.c.AuditLog(), 0)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "system:serviceaccount:" + installNamespace + ":"
	for _, ev := range events {
		sa, ok := strings.CutPrefix(ev.User.Username, prefix)
		if !ok || ev.ObjectRef == nil {
			continue
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		perm := permission{ev.ObjectRef.APIGroup, res, ev.Verb}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == 403 {
			refused[sa] = append(refused[sa], perm.String()+" ("+ev.RequestURI+")")
			continue
		}
		if used[sa] == nil {
			used[sa] = map[permission]int{}
		}
		used[sa][perm]++
	}
	for sa, reqs := range refused {
		slices.Sort(reqs)
		t.Errorf("ServiceAccount %s was refused %d requests, a permission the install lacks: %s", sa, len(reqs), strings.Join(slices.Compact(reqs), "; "))
	}
	for _, sa := range []string{managerName, agentName} {
		granted, err := p.granted(ctx, sa)
		if err != nil {
			t.Fatal(err)
		}
		var unused, excused []string
		for _, perm := range granted {
			if used[sa][perm] > 0 {
				continue
			}
			if slices.Contains(readVerbs, perm.verb) && slices.ContainsFunc(readVerbs, func(v string) bool {
				return used[sa][permission{perm.group, perm.resource, v}] > 0
			}) {
				continue
			}
			if why, ok := notExercisedHere[sa+": "+perm.String()]; ok {
				excused = append(excused, perm.String()+" ("+why+")")
				continue
			}
			unused = append(unused, perm.String())
		}
		var requests []string
		for perm, n := range used[sa] {
			requests = append(requests, fmt.Sprintf("%s ×%d", perm, n))
		}
		slices.Sort(requests)
		t.Logf("%s: %d permissions granted; requests made: %s; granted without a request here: %s",
			sa, len(granted), strings.Join(requests, ", "), strings.Join(excused, "; "))
		switch {
		case len(unused) > 0 && !ranAll:
			t.Logf("%s made no request for %s, but not every step ran", sa, strings.Join(unused, ", "))
		case len(unused) > 0:
			t.Errorf("%s is granted permissions no request used: %s", sa, strings.Join(unused, ", "))
		}
	}
}

// granted expands the rules of every Role and ClusterRole bound to the install's ServiceAccount sa
// into permissions.
func (p *product) granted(ctx context.Context, sa string) ([]permission, error) {
	subject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == installNamespace
		})
	}
	var rules []rbacv1.PolicyRule
	roleRules := func(ref rbacv1.RoleRef, ns string) error {
		if ref.Kind == "ClusterRole" {
			r, err := p.cs.RbacV1().ClusterRoles().Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			rules = append(rules, r.Rules...)
			return nil
		}
		r, err := p.cs.RbacV1().Roles(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rules = append(rules, r.Rules...)
		return nil
	}
	crbs, err := p.cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, b := range crbs.Items {
		if subject(b.Subjects) {
			if err := roleRules(b.RoleRef, ""); err != nil {
				return nil, err
			}
		}
	}
	rbs, err := p.cs.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, b := range rbs.Items {
		if subject(b.Subjects) {
			if err := roleRules(b.RoleRef, b.Namespace); err != nil {
				return nil, err
			}
		}
	}
	seen := map[permission]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					seen[permission{g, res, v}] = true
				}
			}
		}
	}
	out := make([]permission, 0, len(seen))
	for perm := range seen {
		out = append(out, perm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}
