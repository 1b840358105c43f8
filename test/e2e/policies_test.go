package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func quantities(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// policedStatefulSet is the MariaDB sample as a team in a policed namespace writes it: CPU and
// memory requests and limits on every container, and the restricted Pod Security profile's
// security context.
func (s *suite) policedStatefulSet(t *testing.T) string {
	t.Helper()
	sts := readManifest[appsv1.StatefulSet](t, s.sample(statefulSetSample))
	pod := &sts.Spec.Template.Spec
	pod.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](999),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	for i := range pod.Containers {
		c := &pod.Containers[i]
		c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		switch c.Name {
		case "mariadb":
			c.Resources = corev1.ResourceRequirements{Requests: quantities("cpu", "500m", "memory", "2Gi"), Limits: quantities("cpu", "1", "memory", "3Gi")}
		default:
			c.Resources = corev1.ResourceRequirements{Requests: quantities("cpu", "50m", "memory", "64Mi"), Limits: quantities("cpu", "100m", "memory", "64Mi")}
		}
	}
	return writeStatefulSet(t, "sts.yaml", sts)
}

// TestInjectedPodsPassTheNamespaceRules injects the sample into namespaces set up the way platform
// teams set them up, each of which admits the database's own pods: the StatefulSet controller must
// be able to create every injected pod, so the rollout completes and the ScratchVolume is Ready.
func TestInjectedPodsPassTheNamespaceRules(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	cases := []struct {
		name   string
		labels map[string]string
		objs   func(ns string) []client.Object
	}{
		{"limit-to-request ratios with defaults", nil, func(ns string) []client.Object {
			return []client.Object{&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ratios"},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
					Default: quantities("cpu", "400m", "memory", "256Mi"), DefaultRequest: quantities("cpu", "100m", "memory", "128Mi"),
					MaxLimitRequestRatio: quantities("cpu", "4", "memory", "2"), Min: quantities("memory", "48Mi")}}}}}
		}},
		{"a quota that requires every limit", nil, func(ns string) []client.Object {
			return []client.Object{&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compute"},
				Spec: corev1.ResourceQuotaSpec{Hard: quantities("requests.cpu", "4", "requests.memory", "16Gi", "limits.cpu", "8", "limits.memory", "16Gi", "pods", "4")}}}
		}},
		{"restricted Pod Security", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}, func(string) []client.Object { return nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := s.namespace(t)
			if tc.labels != nil {
				nsObj := &corev1.Namespace{}
				if err := s.admin.Get(t.Context(), client.ObjectKey{Name: ns}, nsObj); err != nil {
					t.Fatal(err)
				}
				nsObj.Labels = tc.labels
				if err := s.admin.Update(t.Context(), nsObj); err != nil {
					t.Fatal(err)
				}
			}
			for _, o := range tc.objs(ns) {
				if err := s.admin.Create(t.Context(), o); err != nil {
					t.Fatal(err)
				}
			}
			s.waitQuotas(t, ns)
			s.applyStatefulSet(t, ns, s.policedStatefulSet(t))
			sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))
			s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
			s.waitRolledOut(t, ns, "mariadb", runsScratchVolume(sv))
		})
	}
}

// waitQuotas waits until the quota controller has counted every ResourceQuota of ns: the API server
// refuses pods under a quota whose status it has not computed yet.
func (s *suite) waitQuotas(t *testing.T, ns string) {
	t.Helper()
	eventually(t, "the quotas of "+ns+" to be counted", func() (bool, string) {
		var list corev1.ResourceQuotaList
		if err := s.admin.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, q := range list.Items {
			if len(q.Status.Hard) == 0 {
				return false, "quota " + q.Name + " has no status yet"
			}
		}
		return true, ""
	})
}

// TestReserveBeyondTheQuotaIsRefused asks for a Reserve the namespace's quota has no room for: the
// ScratchVolume says so, naming the quota and the numbers, and the StatefulSet is not touched.
func TestReserveBeyondTheQuotaIsRefused(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	// The sample's two pods ask for 2Gi + 64Mi each: 4224Mi of the 4500Mi.
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "memory"},
		Spec: corev1.ResourceQuotaSpec{Hard: quantities("requests.memory", "4500Mi")}}
	if err := s.admin.Create(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	s.waitQuotas(t, ns)
	before := s.applyStatefulSet(t, ns, s.sample(statefulSetSample))
	svPath := s.writeScratchVolume(t, func(sv *v1alpha1.ScratchVolume) { sv.Spec.Memory.Accounting = v1alpha1.MemoryReserve })
	s.kubectl(t, "apply", "-n", ns, "-f", svPath)
	sv := s.waitCondition(t, ns, "mariadb-tmpdir", v1alpha1.ConditionReady, metav1.ConditionFalse)
	eventually(t, "the target to name the quota", func() (bool, string) {
		sv = s.scratchVolume(t, ns, "mariadb-tmpdir")
		if len(sv.Status.Targets) != 1 {
			return false, "no target yet"
		}
		msg := sv.Status.Targets[0].Message
		return strings.Contains(msg, "ResourceQuota memory") && strings.Contains(msg, "4500Mi") && strings.Contains(msg, "512Mi to each of 2 pods"), msg
	})
	if after := s.statefulSet(t, ns, before.Name); after.Generation != before.Generation {
		t.Errorf("the StatefulSet was written (generation %d to %d) although its pods could not have been created", before.Generation, after.Generation)
	}
}

// writeScratchVolume writes the ScratchVolume sample, changed by edit, into t's temporary
// directory and returns the path.
func (s *suite) writeScratchVolume(t *testing.T, edit func(*v1alpha1.ScratchVolume)) string {
	t.Helper()
	sv := readManifest[v1alpha1.ScratchVolume](t, s.sample(scratchVolumeSample))
	edit(sv)
	data, err := yaml.Marshal(sv)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sv.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// assertWarning waits for a Warning Event about ScratchVolume name with reason whose note says
// words.
func (s *suite) assertWarning(t *testing.T, ns, name, reason, words string) {
	t.Helper()
	eventually(t, "a "+reason+" Warning about ScratchVolume "+name, func() (bool, string) {
		var list eventsv1.EventList
		if err := s.admin.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning {
				seen = append(seen, e.Reason+": "+e.Note)
				if e.Reason == reason && strings.Contains(e.Note, words) {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("Warnings: %v", seen)
	})
}

// TestRefusedPodsArePutBack installs an admission policy the controller cannot read, which refuses
// the injected pods: the StatefulSet controller deletes the first pod to roll it and cannot create
// its successor. The controller must notice within seconds, put the StatefulSet back so that the
// pod is recreated from the template that worked, report it with the API server's words, and not
// try again until the ScratchVolume changes.
func TestRefusedPodsArePutBack(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	s.refuseInjectedPods(t, ns)
	before := s.applyStatefulSet(t, ns, s.sample(statefulSetSample))
	victim := fmt.Sprintf("%s-%d", before.Name, replicas(before)-1)
	old := testenv.Get[corev1.Pod](t, s.admin, ns, victim)
	gaps := s.watchGap(t, ns, victim, old.UID)
	sv := s.applyScratchVolume(t, ns, s.sample(scratchVolumeSample))

	eventually(t, "the refusal to be reported", func() (bool, string) {
		sv = s.scratchVolume(t, ns, sv.Name)
		if len(sv.Status.Targets) != 1 || sv.Status.Targets[0].Refused == nil {
			return false, fmt.Sprintf("targets: %+v", sv.Status.Targets)
		}
		return true, ""
	})
	refused := sv.Status.Targets[0].Refused
	if !strings.Contains(refused.Message, "no RAM volumes here") {
		t.Errorf("the refusal does not quote the API server: %q", refused.Message)
	}
	after := s.waitRolledOut(t, ns, before.Name, lacksScratchVolume(sv))
	if _, carried := after.Spec.Template.Annotations[sv.InjectionAnnotation()]; carried {
		t.Errorf("the StatefulSet still carries the injection")
	}
	gap := <-gaps
	t.Logf("pod %s was missing for %s (deleted to roll it, then recreated from the template that worked)", victim, gap.Round(time.Millisecond))
	if gap > 30*time.Second {
		t.Errorf("pod %s was missing for %s", victim, gap)
	}
	s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionFalse)
	sv = s.scratchVolume(t, ns, sv.Name)
	if c := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionInjected); c == nil || c.Reason != v1alpha1.ReasonPodsRefused || !strings.Contains(c.Message, "no RAM volumes here") {
		t.Errorf("Injected does not say the pods were refused: %+v", c)
	}
	s.assertWarning(t, ns, sv.Name, "PodCreationRefused", "no RAM volumes here")

	// It does not try again by itself.
	settled := s.settle(t, ns, before.Name)
	if settled.Generation != after.Generation {
		t.Errorf("the controller wrote the StatefulSet again (generation %d to %d) with nothing changed", after.Generation, settled.Generation)
	}

	// Once the policy admits the pods, a change of the ScratchVolume's spec tries again.
	s.admitInjectedPods(t, ns)
	s.kubectl(t, "apply", "-n", ns, "-f", s.writeScratchVolume(t, func(sv *v1alpha1.ScratchVolume) { sv.Spec.Size = resource.MustParse("768Mi") }))
	sv = s.waitCondition(t, ns, sv.Name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	s.waitRolledOut(t, ns, before.Name, runsScratchVolume(sv))
	if sv = s.scratchVolume(t, ns, sv.Name); sv.Status.Targets[0].Refused != nil {
		t.Errorf("the refusal outlived the injection that succeeded: %+v", sv.Status.Targets[0].Refused)
	}
}

// TestRefusedPodsStopAPacedRollout refuses the injected pods under a selector that rolls one
// StatefulSet at a time: the first is put back, and the rollout goes no further.
func TestRefusedPodsStopAPacedRollout(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	ns := s.namespace(t)
	s.refuseInjectedPods(t, ns)
	var names []string
	for _, name := range []string{"db-a", "db-b"} {
		sts := readManifest[appsv1.StatefulSet](t, s.sample(statefulSetSample))
		sts.Name = name
		sts.Labels = map[string]string{"dbtune.io/tmpdir": "ram"}
		sts.Spec.Selector.MatchLabels = map[string]string{"app.kubernetes.io/name": name}
		sts.Spec.Template.Labels = map[string]string{"app.kubernetes.io/name": name}
		s.applyStatefulSet(t, ns, writeStatefulSet(t, name+".yaml", sts))
		names = append(names, name)
	}
	before := map[string]int64{}
	for _, name := range names {
		before[name] = s.statefulSet(t, ns, name).Generation
	}
	s.kubectl(t, "apply", "-n", ns, "-f", s.writeScratchVolume(t, func(sv *v1alpha1.ScratchVolume) {
		sv.Name = "fleet"
		sv.Spec.Target = v1alpha1.ScratchTarget{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"dbtune.io/tmpdir": "ram"}}}
		one := intstr.FromInt32(1)
		sv.Spec.Rollout = &v1alpha1.RolloutPolicy{MaxInFlight: &one}
	}))
	// Either StatefulSet may go first; the other must not follow.
	refused := ""
	eventually(t, "the rollout to stop at the refused StatefulSet", func() (bool, string) {
		sv := s.scratchVolume(t, ns, "fleet")
		c := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionRolledOut)
		if c == nil {
			return false, "no RolledOut condition"
		}
		for _, name := range names {
			if c.Reason == v1alpha1.ReasonRolloutStopped && strings.Contains(c.Message, "refused to create the new pods of StatefulSet "+name+" ") {
				refused = name
			}
		}
		return refused != "", c.Reason + ": " + c.Message
	})
	other := names[0]
	if refused == other {
		other = names[1]
	}
	s.waitRolledOut(t, ns, refused, nil)
	if after := s.settle(t, ns, other); after.Generation != before[other] {
		t.Errorf("the rollout went on to StatefulSet %s after %s was refused (generation %d to %d)", other, refused, before[other], after.Generation)
	}
}

// refuseInjectedPods installs a ValidatingAdmissionPolicy, bound to ns, that refuses pods carrying
// the controller's init container.
func (s *suite) refuseInjectedPods(t *testing.T, ns string) {
	t.Helper()
	policy, binding, probe := testenv.InitContainerRefusal("no-ram-"+ns, ns, "no RAM volumes here")
	for _, o := range []client.Object{policy, binding} {
		if err := s.admin.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.admin.Delete(t.Context(), o) })
	}
	// The policy takes effect once the API server has loaded it: a dry run proves it.
	eventually(t, "the admission policy to refuse pods", func() (bool, string) {
		err := s.admin.Create(t.Context(), probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no RAM volumes here"), fmt.Sprint(err)
	})
}

// admitInjectedPods removes the policy refuseInjectedPods installed, and waits until the API
// server admits the pods again.
func (s *suite) admitInjectedPods(t *testing.T, ns string) {
	t.Helper()
	name := "no-ram-" + ns
	for _, o := range []client.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}},
	} {
		if err := s.admin.Delete(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "dbtune-probe", Image: "busybox"}}, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	eventually(t, "the admission policy to admit pods again", func() (bool, string) {
		err := s.admin.Create(t.Context(), probe.DeepCopy(), client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	})
}

// watchGap polls pod name in ns and sends, once it has been recreated, how long it was missing
// after the pod with UID old went away.
func (s *suite) watchGap(t *testing.T, ns, name string, old types.UID) <-chan time.Duration {
	t.Helper()
	out := make(chan time.Duration, 1)
	ctx := t.Context()
	go func() {
		var gone time.Time
		for ctx.Err() == nil {
			p := &corev1.Pod{}
			err := s.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
			switch {
			case err != nil && gone.IsZero():
				gone = time.Now()
			case err == nil && p.UID != old && p.DeletionTimestamp == nil:
				if gone.IsZero() {
					gone = p.CreationTimestamp.Time
				}
				out <- time.Since(gone)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return out
}
