package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/localcluster"
)

// The audit log is the only witness of which replica wrote what: the counts must tell the killed
// leader's writes from the survivor's, a StatefulSet written twice from two written once, a status
// or a refused write from a write, and the StatefulSets nobody wrote.
func TestCountFailoverWrites(t *testing.T) {
	killed := time.Date(2026, 12, 2, 12, 0, 10, 0, time.UTC)
	at := func(s float64) string {
		return killed.Add(time.Duration(s * float64(time.Second))).Format("2006-01-02T15:04:05.000000Z")
	}
	line := func(user, verb, resource, sub, name string, code int, s float64) string {
		return `{"kind":"Event","stage":"ResponseComplete","verb":"` + verb + `","user":{"username":"` + user + `"},` +
			`"objectRef":{"resource":"` + resource + `","subresource":"` + sub + `","namespace":"fleet-00","name":"` + name + `"},` +
			`"responseStatus":{"code":` + strconv.Itoa(code) + `},"requestReceivedTimestamp":"` + at(s) + `"}`
	}
	a, b, c := failoverUsers[0], failoverUsers[1], failoverUsers[2]
	log := strings.Join([]string{
		line(a, "patch", "statefulsets", "", "db-1", 200, -3),
		line(a, "patch", "configmaps", "", "db-1-cnf", 201, -3),
		line(a, "patch", "statefulsets", "", "db-2", 200, -0.5),
		line(a, "patch", "statefulsets", "status", "db-2", 200, -0.4), // not a write to the StatefulSet
		line(b, "get", "statefulsets", "", "db-2", 200, 1),            // not a write
		line(b, "patch", "statefulsets", "", "db-2", 200, 16.5),       // db-2 a second time
		line(b, "patch", "statefulsets", "", "db-3", 200, 15.2),
		line(b, "patch", "statefulsets", "", "db-4", 409, 15.0), // refused
		line(c, "patch", "statefulsets", "", "db-5", 200, 17),
		line("admin", "patch", "statefulsets", "", "db-6", 200, 17), // not a replica
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte("{\"kind\":\"Event\",\"stage\":\"ResponseComplete\"}\n"+log), 0o600); err != nil {
		t.Fatal(err)
	}
	from := int64(len("{\"kind\":\"Event\",\"stage\":\"ResponseComplete\"}\n"))
	events, err := localcluster.ReadAuditLog(path, from)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 10 {
		t.Fatalf("read %d events from the offset, want 10", len(events))
	}
	w, first, wrote := countFailoverWrites(events, 8, map[string]bool{a: true}, b, killed)
	want := failoverWrites{ByKilled: 2, BySurvivor: 2, ByOthers: 1, StatefulSetsByWrites: []int{4, 3, 1}, Failed: map[string]int{"409": 1}, ConfigMapWrites: 1}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if !wrote || first < 15.19 || first > 15.21 {
		t.Errorf("survivor's first write %.2f s after the kill (wrote %v), want 15.2 s", first, wrote)
	}
	if w.twice() != 1 || w.times(0) != 4 || w.times(7) != 0 {
		t.Errorf("twice %d, times(0) %d, times(7) %d; want 1, 4, 0", w.twice(), w.times(0), w.times(7))
	}
}

// injectedOnce is the failover measurement's end-state check: it must count a clean injection and
// name every way a template can carry one other than exactly once over its original.
func TestInjectedOnce(t *testing.T) {
	f := &fleet{originals: map[client.ObjectKey]corev1.PodTemplateSpec{}}
	orig := statefulSet(0, 1, 100, 0)
	f.originals[client.ObjectKeyFromObject(orig)] = *orig.Spec.Template.DeepCopy()
	sv := selectorScratchVolume(orig.Namespace)
	plan, err := inject.NewPlan(sv, orig, inject.Namespace{})
	if err != nil {
		t.Fatal(err)
	}
	injected := *orig.DeepCopy()
	injected.Spec.Template = inject.Inject(orig.Spec.Template, []*inject.Plan{plan})
	if n, bad := f.injectedOnce([]appsv1.StatefulSet{*orig, injected}, fleetScratchVolume); n != 1 || bad != "" {
		t.Fatalf("a clean injection: %d counted, %q; want 1 and no complaint", n, bad)
	}
	for name, mutate := range map[string]func(s *appsv1.StatefulSet){
		"a volume twice": func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Volumes = append(s.Spec.Template.Spec.Volumes, s.Spec.Template.Spec.Volumes[len(s.Spec.Template.Spec.Volumes)-1])
		},
		"a mount twice": func(s *appsv1.StatefulSet) {
			c := &s.Spec.Template.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, c.VolumeMounts[len(c.VolumeMounts)-1])
		},
		"another ScratchVolume's injection too": func(s *appsv1.StatefulSet) {
			s.Spec.Template.Annotations["scratch.dbtune.io/other"] = "x"
		},
		"the owner's template changed": func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Image += "-changed"
		},
	} {
		s := *injected.DeepCopy()
		mutate(&s)
		if n, bad := f.injectedOnce([]appsv1.StatefulSet{s}, fleetScratchVolume); bad == "" {
			t.Errorf("%s: passed as injected exactly once (%d counted)", name, n)
		}
	}
}
