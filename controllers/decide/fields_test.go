package decide

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

const extraFlags = "MARIADB_EXTRA_FLAGS"

// bitnamiTarget is a Bitnami MariaDB StatefulSet whose container db sets the extra-flags variable
// to value, or not at all when value is nil, with the managedFields entries given.
func bitnamiTarget(value *string, managed ...metav1.ManagedFieldsEntry) *appsv1.StatefulSet {
	var env []corev1.EnvVar
	if value != nil {
		env = []corev1.EnvVar{{Name: "TZ", Value: "UTC"}, {Name: extraFlags, Value: *value}}
	}
	sts := testenv.FullStatefulSet("docker.io/bitnami/mariadb:11.4.5-debian-12-r2", nil, env, "2Gi")
	sts.ManagedFields = managed
	return sts
}

// managed is a managedFields entry of manager, owning the fields of the FieldsV1 JSON fields.
func managed(manager string, op metav1.ManagedFieldsOperationType, at int64, fields string) metav1.ManagedFieldsEntry {
	ts := metav1.NewTime(time.Unix(at, 0))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "apps/v1", Time: &ts, FieldsV1: metav1.NewFieldsV1(fields)}
}

// inDB is FieldsV1 JSON of fields under the container db of the pod template.
func inDB(fields string) string {
	return `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"db\"}":` + fields + `}}}}}`
}

var flagsValue = inDB(`{"f:env":{"k:{\"name\":\"` + extraFlags + `\"}":{".":{},"f:name":{},"f:value":{}}}}`)

// TestExtraFlagsGoInTheApply plans a first ExtraFlags injection: the variable is an entry of the
// apply, with the owner's value in front of the flags when they set it, so that nothing is left
// for a patch once the apply is made, and the apply forces exactly when the owner's value is to be
// extended. Once injected, the plan is settled.
func TestExtraFlagsGoInTheApply(t *testing.T) {
	owner := managed("helm", metav1.ManagedFieldsOperationUpdate, 1, flagsValue)
	for _, tc := range []struct {
		name      string
		value     *string
		wantValue string
		wantForce bool
	}{
		{"unset", nil, "", false},
		{"set", ptr.To("--max-connections=300"), "--max-connections=300 ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := bitnamiTarget(tc.value, owner)
			svs := scratchVolumes(nil)
			tp := PlanTarget(svs, sts, inject.Namespace{}, Gate{})
			vars := tp.Desired.Env["db"]
			if len(vars) != 1 || vars[0].Name != extraFlags || !strings.HasPrefix(vars[0].Value, tc.wantValue+"--tmpdir=") {
				t.Fatalf("the apply's variables = %+v, want %s starting with %q", vars, extraFlags, tc.wantValue+"--tmpdir=")
			}
			if tp.Force != tc.wantForce {
				t.Errorf("force = %v, want %v", tp.Force, tc.wantForce)
			}
			ac, err := tp.Desired.ApplyConfiguration(sts.Name, sts.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(ac)
			if !strings.Contains(string(raw), `"env":[{"name":"`+extraFlags+`","value":"`+vars[0].Value+`"}]`) {
				t.Errorf("the apply does not set the variable: %s", raw)
			}
			injected := injectedBy(sts, svs)
			if pending := tp.PendingAfter(&injected.Spec.Template); len(pending) != 0 {
				t.Errorf("left for a patch after the apply: %+v", pending)
			}
			if after := PlanTarget(svs, injected, inject.Namespace{}, Gate{}); !after.Settled() || after.Force {
				t.Errorf("once injected: settled %v, force %v; want settled, no force", after.Settled(), after.Force)
			}
		})
	}
}

// TestForceTakesNothingButTheVariable: an apply that extends the owner's variable forces, unless
// another manager owns a field of another entry the apply changes: force would take that too.
func TestForceTakesNothingButTheVariable(t *testing.T) {
	svs := scratchVolumes(nil)
	injected := injectedBy(bitnamiTarget(ptr.To("--max-connections=300")), svs)
	// The owner's value is back, and another writer set the RAM volume's size.
	reset := injected.DeepCopy()
	setEnv(reset, "--max-connections=300")
	vol := slices.IndexFunc(reset.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "dbtune-scratch-a" })
	reset.Spec.Template.Spec.Volumes[vol].EmptyDir.SizeLimit = ptr.To(resource.MustParse("1Gi"))
	sizeOwner := managed("gitops", metav1.ManagedFieldsOperationApply, 2,
		`{"f:spec":{"f:template":{"f:spec":{"f:volumes":{"k:{\"name\":\"dbtune-scratch-a\"}":{"f:emptyDir":{"f:sizeLimit":{}}}}}}}}`)
	for _, tc := range []struct {
		name    string
		sts     *appsv1.StatefulSet
		managed []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"the variable alone", onlyEnvReset(injected), []metav1.ManagedFieldsEntry{managed("helm", metav1.ManagedFieldsOperationUpdate, 1, flagsValue)}, true},
		{"and a volume of another manager", reset, []metav1.ManagedFieldsEntry{managed("helm", metav1.ManagedFieldsOperationUpdate, 1, flagsValue), sizeOwner}, false},
		{"and a volume of the controller's", reset, []metav1.ManagedFieldsEntry{managed("helm", metav1.ManagedFieldsOperationUpdate, 1, flagsValue),
			managed(v1alpha1.FieldManager, metav1.ManagedFieldsOperationApply, 2, `{"f:spec":{"f:template":{"f:spec":{"f:volumes":{"k:{\"name\":\"dbtune-scratch-a\"}":{"f:emptyDir":{"f:sizeLimit":{}}}}}}}}`)}, true},
		{"nothing to change", injected, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := tc.sts.DeepCopy()
			sts.ManagedFields = tc.managed
			if got := PlanTarget(svs, sts, inject.Namespace{}, Gate{}).Force; got != tc.want {
				t.Errorf("force = %v, want %v", got, tc.want)
			}
		})
	}
}

func onlyEnvReset(sts *appsv1.StatefulSet) *appsv1.StatefulSet {
	out := sts.DeepCopy()
	setEnv(out, "--max-connections=300")
	return out
}

func setEnv(sts *appsv1.StatefulSet, value string) {
	c := &sts.Spec.Template.Spec.Containers[0]
	for i := range c.Env {
		if c.Env[i].Name == extraFlags {
			c.Env[i].Value = value
		}
	}
}

// restoreOf is what a write of the plans of svs puts back on sts, whose status says they were
// written there.
func restoreOf(t *testing.T, svs []*v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) Restore {
	t.Helper()
	tp := PlanTarget(svs, sts, inject.Namespace{}, Gate{})
	for _, o := range tp.Outcomes {
		o.SV.Status.Targets = []v1alpha1.ScratchTargetStatus{{Name: sts.Name, ConfigHash: mustInject(t, o).Hash, Injected: true}}
	}
	r := RestoredBy(tp, sts)
	if r.Empty() {
		t.Fatal("the write restores nothing")
	}
	return r
}

// TestWritersNameTheOwnerOfWhatReplacedAnEntry: a GitOps engine's server-side apply put the
// repository's value of the extra-flags variable back, which removed the ScratchVolume's flags.
// The engine owns that value now and is named for it, with its operation; a manager that
// updates the StatefulSet but owns no such field is not, nor are the controller's own managers.
// When an entry is gone too, which no one owns, the updating managers are listed as candidates
// for its remover.
func TestWritersNameTheOwnerOfWhatReplacedAnEntry(t *testing.T) {
	svs := scratchVolumes(nil)
	injected := injectedBy(bitnamiTarget(ptr.To("--max-connections=300")), svs)
	others := []metav1.ManagedFieldsEntry{
		managed("helm", metav1.ManagedFieldsOperationUpdate, 1, inDB(`{"f:image":{}}`)),
		managed(v1alpha1.FieldManager, metav1.ManagedFieldsOperationApply, 2, `{"f:spec":{"f:template":{"f:spec":{"f:volumes":{}}}}}`),
		managed(v1alpha1.FieldManager, metav1.ManagedFieldsOperationUpdate, 3, flagsValue),
		managed("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, 4, `{"f:status":{}}`),
		managed("kustomize-controller", metav1.ManagedFieldsOperationApply, 5, flagsValue),
	}
	others[3].Subresource = "status"
	flux := v1alpha1.WriteCandidate{FieldManager: "kustomize-controller", LastUpdate: *others[4].Time,
		Operation: metav1.ManagedFieldsOperationApply, Owns: []string{"the value of MARIADB_EXTRA_FLAGS in container db"}}

	sts := onlyEnvReset(injected)
	sts.ManagedFields = others
	r := restoreOf(t, svs, sts)
	if diff := cmp.Diff([]string{"the value of MARIADB_EXTRA_FLAGS in container db"}, r.Names()); diff != "" {
		t.Errorf("restored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]v1alpha1.WriteCandidate{flux}, Writers(sts, r)); diff != "" {
		t.Errorf("writers of a changed value (-want +got):\n%s", diff)
	}

	// A replace also dropped the RAM volume: no one owns it, so the updating managers are listed.
	gone := sts.DeepCopy()
	gone.Spec.Template.Spec.Volumes = slices.DeleteFunc(gone.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "dbtune-scratch-a" })
	r = restoreOf(t, svs, gone)
	helm := v1alpha1.WriteCandidate{FieldManager: "helm", LastUpdate: *others[0].Time}
	if diff := cmp.Diff([]v1alpha1.WriteCandidate{flux, helm}, Writers(gone, r)); diff != "" {
		t.Errorf("writers of a changed value and a removed volume (-want +got):\n%s", diff)
	}
}

// TestFightMessageNamesTheOwner: the message names the manager that set what replaced the
// controller's entry as such, and claims no remover when nothing is gone.
func TestFightMessageNamesTheOwner(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 2, 6, 12, 0, 0, time.UTC))
	war := &v1alpha1.WriteWar{Holds: 1, RetryAt: at, Removed: []string{"the value of MARIADB_EXTRA_FLAGS in container mariadb"},
		Candidates: []v1alpha1.WriteCandidate{{FieldManager: "kustomize-controller", LastUpdate: at, Operation: metav1.ManagedFieldsOperationApply,
			Owns: []string{"the value of MARIADB_EXTRA_FLAGS in container mariadb"}}}}
	msg := FightMessage("db", war, WriteWarRule{}.OrDefaults())
	want := "field manager kustomize-controller (with a server-side apply, last change 2026-12-02T06:12:00Z) owns the value of MARIADB_EXTRA_FLAGS in container mariadb"
	if !strings.Contains(msg, want) {
		t.Errorf("the message does not say %q:\n%s", want, msg)
	}
	for _, wrong := range []string{"not known", "updates the StatefulSet"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("the message says %q though the owner of the one contested field is known:\n%s", wrong, msg)
		}
	}
	// With a volume gone as well, the candidates for its remover follow.
	war.Removed = append(war.Removed, "the volume dbtune-scratch-tmp")
	war.Candidates = append(war.Candidates, v1alpha1.WriteCandidate{FieldManager: "other-operator", LastUpdate: at})
	msg = FightMessage("db", war, WriteWarRule{}.OrDefaults())
	for _, want := range []string{want, "the remover is not known for sure: the one field manager that updates the StatefulSet is other-operator (last update "} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q:\n%s", want, msg)
		}
	}
}

// TestRestoreNamesThePodMemory checks that a pod-level memory limit another writer put back after
// a Reserve is told as what the next write restores.
func TestRestoreNamesThePodMemory(t *testing.T) {
	sv := testenv.SelectorScratchVolume("tmp", nil)
	sv.Spec.Memory.Accounting = v1alpha1.MemoryReserve
	sts := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
	sts.Spec.Template.Spec.Resources = &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
	}
	svs := []*v1alpha1.ScratchVolume{&sv}
	o := mustInject(t, PlanTarget(svs, sts, inject.Namespace{}, Gate{}).Outcomes[sv.Name])
	injected := sts.DeepCopy()
	injected.Spec.Template = inject.Inject(sts.Spec.Template, []*inject.Plan{o.Plan})
	sv.Status.Targets = []v1alpha1.ScratchTargetStatus{{Name: sts.Name, Injected: true, ConfigHash: o.Hash}}
	if tp := PlanTarget(svs, injected, inject.Namespace{}, Gate{}); !tp.Settled() {
		t.Fatalf("the injected template is not settled: pending %+v", tp.Pending)
	}
	// Another writer puts the pod's limit back to its own value.
	injected.Spec.Template.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("4Gi")
	tp := PlanTarget(svs, injected, inject.Namespace{}, Gate{})
	if names := RestoredBy(tp, injected).Names(); !slices.Contains(names, "the pod's memory limit") {
		t.Errorf("the restore names %q, want the pod's memory limit", names)
	}
}
