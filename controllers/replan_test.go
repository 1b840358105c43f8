package controllers_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// targetsPlanned is the controller's count of syncs that planned a target of namespace ns.
func targetsPlanned(t *testing.T, ns string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "dbtune_scratch_targets_planned_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "namespace") == ns {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// plannedSettles waits for the injection and for the planning to stop, and returns the count.
func plannedSettles(t *testing.T, e *testenv.Env, ns string) float64 {
	t.Helper()
	settle(t, e, ns)
	var last float64
	testenv.Eventually(t, waitTimeout, func() string {
		n := targetsPlanned(t, ns)
		if n == 0 || n != last {
			last = n
			return fmt.Sprintf("planned %v times and counting", n)
		}
		return ""
	})
	return last
}

// TestUnchangedTargetIsNotPlannedAgain reconciles a ScratchVolume twice (a label of its own, its
// drop-in ConfigMap deleted) while neither it nor its StatefulSet changes: the target is not
// planned again, and the ConfigMap, which the decision does not cover, is still put back.
func TestUnchangedTargetIsNotPlannedAgain(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	sv := scratchVolume(ns, "tmp", "db")
	create(t, e, mariadbStatefulSet(ns, "db"), sv)
	planned := plannedSettles(t, e, ns)
	if planned != 1 {
		// One plan on the StatefulSet read before the write; the write's response is the
		// decision the syncs its watch event brings reuse.
		t.Errorf("the injection planned its one target %v times, want 1", planned)
	}
	writesBefore := writes.get(ns)

	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Labels = map[string]string{"team": "storage"} })
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ns, Name: sv.ConfigMapName("db")}
	if err := e.Client.Get(ctxFor(t), key, cm); err != nil {
		t.Fatalf("get the drop-in ConfigMap: %v", err)
	}
	gone := cm.UID
	if err := e.Client.Delete(ctxFor(t), cm); err != nil {
		t.Fatalf("delete the drop-in ConfigMap: %v", err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		err := e.Client.Get(ctxFor(t), key, cm)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && cm.UID == gone):
			return "the drop-in ConfigMap is not back"
		case err != nil:
			return err.Error()
		}
		return ""
	})
	testenv.Consistently(t, time.Second, func() string {
		if n := targetsPlanned(t, ns); n != planned {
			return fmt.Sprintf("the unchanged target was planned %v more times", n-planned)
		}
		return ""
	})
	expectWrites(t, ns, writesBefore, 0)
}

// TestChangedTargetIsPlannedAgain changes the StatefulSet where no decision reads it (a label),
// which neither plans it again nor writes, then its spec where the controller has no entry (an
// environment variable of its own), which plans it again on the whole object read from the API
// server and writes nothing, then the ScratchVolume's spec, which plans it again and writes the
// new configuration.
func TestChangedTargetIsPlannedAgain(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"), scratchVolume(ns, "tmp", "db"))
	planned := plannedSettles(t, e, ns)
	writesBefore := writes.get(ns)

	updateSTS(t, e, ns, "db", func(sts *appsv1.StatefulSet) { sts.Labels["team"] = "storage" })
	testenv.Consistently(t, time.Second, func() string {
		if n := targetsPlanned(t, ns); n != planned {
			return fmt.Sprintf("the relabelled StatefulSet was planned %v more times", n-planned)
		}
		return ""
	})
	expectWrites(t, ns, writesBefore, 0)

	updateSTS(t, e, ns, "db", func(sts *appsv1.StatefulSet) {
		c := &sts.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "TZ", Value: "UTC"})
	})
	testenv.Eventually(t, waitTimeout, func() string {
		if n := targetsPlanned(t, ns); n == planned {
			return "the StatefulSet whose spec changed was not planned again"
		}
		return ""
	})
	expectWrites(t, ns, writesBefore, 0)

	hash := getSTS(t, e, ns, "db").Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+"tmp"]
	updateSV(t, e, ns, func(sv *v1alpha1.ScratchVolume) { sv.Spec.Size = resource.MustParse("1Gi") })
	testenv.Eventually(t, waitTimeout, func() string {
		if now := getSTS(t, e, ns, "db").Spec.Template.Annotations[v1alpha1.InjectionAnnotationPrefix+"tmp"]; now == hash {
			return "the new size was not injected: config hash still " + now
		}
		return ""
	})
}
