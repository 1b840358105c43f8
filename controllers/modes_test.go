package controllers_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func TestArgsInjectionAppendsFlagsAndRevertsThem(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"))
	original := getSTS(t, e, ns, "db").Spec.Template
	sv := scratchVolume(ns, "tmp", "db")
	sv.Spec.MySQL = &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionArgs}
	create(t, e, sv)
	testenv.Eventually(t, waitTimeout, func() string {
		args := findContainer(getSTS(t, e, ns, "db").Spec.Template.Spec.Containers, "mariadb").Args
		if len(args) < 3 || args[0] != "--innodb-buffer-pool-size=512M" {
			return fmt.Sprintf("args not injected yet: %q", args)
		}
		return ""
	})
	sts := getSTS(t, e, ns, "db")
	db := findContainer(sts.Spec.Template.Spec.Containers, "mariadb")
	joined := strings.Join(db.Args, " ")
	for _, want := range []string{"--tmpdir=/var/lib/mysql-tmp", "--slave-load-tmpdir=/var/lib/mysql/.dbtune-scratch.sst/replica-load"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args lack %s: %q", want, db.Args)
		}
	}
	if findVolume(&sts.Spec.Template.Spec, sv.ConfigVolumeName()) != nil {
		t.Errorf("Args injection must not mount a drop-in file")
	}
	if sts.Spec.Template.Annotations[sv.StateAnnotation()] == "" {
		t.Errorf("the flags must be recorded in %s", sv.StateAnnotation())
	}
	// Reconciles of an injected StatefulSet must not see our own flags as a conflict.
	time.Sleep(time.Second)
	if why := conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, ""); why != "" {
		t.Fatal(why)
	}
	if err := e.Client.Delete(ctxFor(t), sv); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		got := getSTS(t, e, ns, "db").Spec.Template
		if !equality.Semantic.DeepEqual(original, got) {
			return fmt.Sprintf("template not restored: args %q", findContainer(got.Spec.Containers, "mariadb").Args)
		}
		return ""
	})
}

func TestReserveAddsTheSizeToRequestAndLimitAndTakesItBack(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	sts.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	sts.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
	create(t, e, sts)
	original := getSTS(t, e, ns, "db").Spec.Template
	sv := scratchVolume(ns, "tmp", "db")
	sv.Spec.Memory.Accounting = v1alpha1.MemoryReserve
	create(t, e, sv)
	memoryIs := func(req, limit string) func() string {
		return func() string {
			c := findContainer(getSTS(t, e, ns, "db").Spec.Template.Spec.Containers, "mariadb")
			r, l := c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceMemory]
			if r.Cmp(resource.MustParse(req)) != 0 || l.Cmp(resource.MustParse(limit)) != 0 {
				return fmt.Sprintf("memory request/limit %s/%s, want %s/%s", r.String(), l.String(), req, limit)
			}
			return ""
		}
	}
	testenv.Eventually(t, waitTimeout, memoryIs("1536Mi", "1536Mi"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionMemoryBudget, metav1.ConditionTrue, "MemoryReserved")
	})
	// Repeated reconciles must not add the size again.
	writesBefore := writes.get(ns)
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Labels = map[string]string{"touch": "1"} })
	testenv.Consistently(t, 1500*time.Millisecond, func() string {
		if w := writes.get(ns); w != writesBefore {
			return fmt.Sprintf("%d extra writes", w-writesBefore)
		}
		return memoryIs("1536Mi", "1536Mi")()
	})
	if err := e.Client.Delete(ctxFor(t), getSV(t, e, ns, "tmp")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		if got := getSTS(t, e, ns, "db").Spec.Template; !equality.Semantic.DeepEqual(original, got) {
			return "template not restored after revert: " + memoryIs("1Gi", "1Gi")()
		}
		return ""
	})
}

// TestReserveRaisesThePodLevelResources runs Reserve on a pod with pod-level resources and a
// container limit: both grow by the size in the write the API server admits (it refuses a
// container limit above the pod's), a resync adds nothing, and the revert takes exactly that back.
func TestReserveRaisesThePodLevelResources(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sts := mariadbStatefulSet(ns, "db")
	sts.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	sts.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
	sts.Spec.Template.Spec.Resources = &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	create(t, e, sts)
	original := getSTS(t, e, ns, "db").Spec.Template
	sv := scratchVolume(ns, "tmp", "db")
	sv.Spec.Memory.Accounting = v1alpha1.MemoryReserve
	create(t, e, sv)
	podMemoryIs := func(req, limit string) func() string {
		return func() string {
			tmpl := getSTS(t, e, ns, "db").Spec.Template
			if tmpl.Spec.Resources == nil {
				return "the pod-level resources are gone"
			}
			r, l := tmpl.Spec.Resources.Requests[corev1.ResourceMemory], tmpl.Spec.Resources.Limits[corev1.ResourceMemory]
			c := findContainer(tmpl.Spec.Containers, "mariadb").Resources.Limits[corev1.ResourceMemory]
			if r.Cmp(resource.MustParse(req)) != 0 || l.Cmp(resource.MustParse(limit)) != 0 {
				return fmt.Sprintf("pod memory request/limit %s/%s (container limit %s), want %s/%s", r.String(), l.String(), c.String(), req, limit)
			}
			return ""
		}
	}
	testenv.Eventually(t, waitTimeout, podMemoryIs("1536Mi", "2560Mi"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionMemoryBudget, metav1.ConditionTrue, "MemoryReserved")
	})
	if c := findContainer(getSTS(t, e, ns, "db").Spec.Template.Spec.Containers, "mariadb").Resources.Limits[corev1.ResourceMemory]; c.Cmp(resource.MustParse("2560Mi")) != 0 {
		t.Errorf("the container's limit is %s, want 2560Mi", c.String())
	}
	writesBefore := writes.get(ns)
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Labels = map[string]string{"touch": "1"} })
	testenv.Consistently(t, 1500*time.Millisecond, func() string {
		if w := writes.get(ns); w != writesBefore {
			return fmt.Sprintf("%d extra writes", w-writesBefore)
		}
		return podMemoryIs("1536Mi", "2560Mi")()
	})
	if err := e.Client.Delete(ctxFor(t), getSV(t, e, ns, "tmp")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		if got := getSTS(t, e, ns, "db").Spec.Template; !equality.Semantic.DeepEqual(original, got) {
			return "template not restored after revert: " + podMemoryIs("1Gi", "2Gi")()
		}
		return ""
	})
}

// TestAPIServerAgreesWithInject checks that what the API server makes of the controller's apply is
// exactly inject.Inject, the template the real-server harness and the demo run.
func TestAPIServerAgreesWithInject(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	for _, mode := range []v1alpha1.InjectionMode{v1alpha1.InjectionConfigFile, v1alpha1.InjectionArgs} {
		name := strings.ToLower(string(mode))
		sts := mariadbStatefulSet(ns, name)
		sv := scratchVolume(ns, name, name)
		sv.Spec.MySQL = &v1alpha1.MySQLSpec{Injection: mode}
		create(t, e, sts, sv)
		testenv.Eventually(t, waitTimeout, func() string {
			cur := getSTS(t, e, ns, name)
			if cur.Spec.Template.Annotations[sv.StateAnnotation()] == "" && mode == v1alpha1.InjectionArgs {
				return "not injected yet"
			}
			if why := conditionIs(t, e, ns, name, v1alpha1.ConditionInjected, metav1.ConditionTrue, ""); why != "" {
				return why
			}
			live := getSV(t, e, ns, name)
			plan, err := inject.NewPlan(live, cur, inject.Namespace{})
			if err != nil {
				return err.Error()
			}
			want := inject.Inject(cur.Spec.Template, []*inject.Plan{plan})
			withServerDefaults(&want, &cur.Spec.Template)
			if !equality.Semantic.DeepEqual(want, cur.Spec.Template) {
				w, _ := json.Marshal(want)
				g, _ := json.Marshal(cur.Spec.Template)
				return fmt.Sprintf("%s: the API server's template differs from inject.Inject:\nwant %s\ngot  %s", mode, w, g)
			}
			return ""
		})
	}
}

// TestAnnotationKeysAreOurs guards the claim that the controller writes nothing outside its prefixes.
func TestAnnotationKeysAreOurs(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, "")
	})
	keys := sets.KeySet(getSTS(t, e, ns, "db").Spec.Template.Annotations)
	for k := range keys {
		if !strings.HasPrefix(k, v1alpha1.InjectionAnnotationPrefix) && !strings.HasPrefix(k, v1alpha1.StateAnnotationPrefix) {
			t.Errorf("unexpected pod-template annotation %s", k)
		}
	}
}

// withServerDefaults copies onto want's init containers the fields the API server defaults, which a
// pure function cannot know; everything else must match as it is.
func withServerDefaults(want, got *corev1.PodTemplateSpec) {
	for i := range want.Spec.InitContainers {
		w := &want.Spec.InitContainers[i]
		if g := findContainer(got.Spec.InitContainers, w.Name); g != nil {
			w.TerminationMessagePath, w.TerminationMessagePolicy, w.ImagePullPolicy =
				g.TerminationMessagePath, g.TerminationMessagePolicy, g.ImagePullPolicy
		}
	}
}
