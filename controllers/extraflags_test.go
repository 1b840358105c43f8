package controllers_test

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestBitnamiFirstInjectionIsOneWrite injects a Bitnami StatefulSet through ExtraFlags, with the
// extra-flags variable not set by its owner, set to flags of theirs, and set empty: each first
// injection is one write to the StatefulSet and moves its generation once, so that the StatefulSet
// controller sees one new pod template and the pods roll once. The variable holds the owner's value
// followed by the flags, and the revert gives back exactly the owner's template.
func TestBitnamiFirstInjectionIsOneWrite(t *testing.T) {
	e := startManager(t)
	const chartFlags = "--max-connections=300 --skip-name-resolve"
	for _, tc := range []struct {
		name  string
		value *string // nil: the variable is not set
	}{
		{"variable unset", nil},
		{"variable set", ptr.To(chartFlags)},
		{"variable set empty", ptr.To("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := e.Namespace(t)
			sts := bitnamiMariaDBStatefulSet(ns, "db", "")
			c := &sts.Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(v corev1.EnvVar) bool { return v.Name == "MARIADB_EXTRA_FLAGS" })
			if tc.value != nil {
				c.Env = append(c.Env, corev1.EnvVar{Name: "MARIADB_EXTRA_FLAGS", Value: *tc.value})
			}
			create(t, e, sts)
			original := getSTS(t, e, ns, "db")
			create(t, e, scratchVolume(ns, "tmp", "db"))
			settle(t, e, ns)
			live := getSTS(t, e, ns, "db")
			t.Logf("first injection: %d StatefulSet write(s), generation %d to %d", writes.get(ns), original.Generation, live.Generation)
			if d := live.Generation - original.Generation; d != 1 {
				t.Errorf("the first injection moved the generation by %d, want 1", d)
			}
			expectWrites(t, ns, 0, 1)
			got := envValue(findContainer(live.Spec.Template.Spec.Containers, "mariadb"), "MARIADB_EXTRA_FLAGS")
			prefix := "--tmpdir=/var/lib/mysql-tmp "
			if tc.value != nil && *tc.value != "" {
				prefix = *tc.value + " " + prefix
			}
			if len(got) <= len(prefix) || got[:len(prefix)] != prefix {
				t.Errorf("MARIADB_EXTRA_FLAGS = %q, want it to start with %q", got, prefix)
			}
			if v := findVolume(&live.Spec.Template.Spec, "dbtune-scratch-tmp"); v == nil {
				t.Error("the RAM volume is missing")
			}
			if v := envValue(findContainer(live.Spec.Template.Spec.Containers, "mariadb"), "BITNAMI_DEBUG"); v != "false" {
				t.Errorf("BITNAMI_DEBUG = %q, want the owner's value: the apply of one variable must leave the others alone", v)
			}

			if err := e.Client.Delete(ctxFor(t), getSV(t, e, ns, "tmp")); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, waitTimeout, func() string {
				got := getSTS(t, e, ns, "db").Spec.Template
				if !equality.Semantic.DeepEqual(original.Spec.Template, got) {
					return fmt.Sprintf("template not restored: env %+v", findContainer(got.Spec.Containers, "mariadb").Env)
				}
				return ""
			})
		})
	}
}

// TestExtraFlagsRestoredAfterAReplace replaces a Bitnami StatefulSet with its owner's template,
// which drops the flags and the entries: the controller restores all of it with one write, and
// the Restored Event says so.
func TestExtraFlagsRestoredAfterAReplace(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, bitnamiMariaDBStatefulSet(ns, "db", "--max-connections=300"))
	template := getSTS(t, e, ns, "db").Spec.Template
	create(t, e, scratchVolume(ns, "tmp", "db"))
	base := settle(t, e, ns)
	updateSTS(t, e, ns, "db", func(sts *appsv1.StatefulSet) { sts.Spec.Template = *template.DeepCopy() })
	testenv.Eventually(t, waitTimeout, func() string {
		return conditionIs(t, e, ns, "tmp", v1alpha1.ConditionInjected, metav1.ConditionTrue, v1alpha1.ReasonInjected)
	})
	expectWrites(t, ns, base, 1)
	got := envValue(findContainer(getSTS(t, e, ns, "db").Spec.Template.Spec.Containers, "mariadb"), "MARIADB_EXTRA_FLAGS")
	if want := "--max-connections=300 --tmpdir="; len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("MARIADB_EXTRA_FLAGS = %q after the restore, want the owner's flags, then the ScratchVolume's", got)
	}
}
