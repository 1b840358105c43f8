package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// crdSchema is the OpenAPI v3 document the API server publishes for dbtune.io/v1alpha1, built from
// the CRD the operator installs: each kind's schema under components.schemas.
func crdSchema(t *testing.T, edit func(scratchVolume map[string]any)) []byte {
	t.Helper()
	raw, err := os.ReadFile("../../config/crd/bases/dbtune.io_scratchvolumes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	if edit != nil {
		edit(schema)
	}
	doc, err := json.Marshal(map[string]any{"components": map[string]any{"schemas": map[string]any{"io.dbtune.v1alpha1.ScratchVolume": schema}}})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestAnOperatorOlderThanACommandIsNamed(t *testing.T) {
	approveNeeds := []need{{"ScratchVolume", "status.targets.pendingChange.id", "the pending change of each target"}}
	if err := checkSchema(crdSchema(t, nil), "approve", approveNeeds); err != nil {
		t.Fatalf("this release's CRD does not serve what approve reads: %v", err)
	}
	older := crdSchema(t, func(sv map[string]any) {
		target := dig(sv, "properties", "status", "properties", "targets", "items", "properties")
		delete(target, "pendingChange")
	})
	err := checkSchema(older, "approve", approveNeeds)
	if err == nil || !strings.Contains(err.Error(), "older than `kubectl dbtune approve`") || !strings.Contains(err.Error(), "status.targets.pendingChange.id") {
		t.Errorf("a CRD without status.targets[].pendingChange is not named older than approve: %v", err)
	}
	err = checkSchema(crdSchema(t, nil), "nodes", []need{{"NodeIOProfile", "status.readAhead", "read-ahead"}})
	if err == nil || !strings.Contains(err.Error(), "serves no dbtune.io/v1alpha1 nodeioprofiles") {
		t.Errorf("a missing kind is not named as not installed: %v", err)
	}
}

func dig(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

// pendingFleet is a ScratchVolume with two targets waiting for the same change, one for another,
// one with nothing pending, and a resize waiting for approval.
func pendingFleet() *v1alpha1.ScratchVolume {
	change := func(id string) *v1alpha1.PendingChange {
		return &v1alpha1.PendingChange{ID: id, ConfigHash: "h-" + id, Reason: "the manager renders it otherwise"}
	}
	proposed := resource.MustParse("1Gi")
	return &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "shop", Annotations: map[string]string{v1alpha1.ApproveChangeAnnotation: "gone0000, aaaa111111"}},
		Spec:       v1alpha1.ScratchVolumeSpec{Size: resource.MustParse("512Mi")},
		Status: v1alpha1.ScratchVolumeStatus{
			Targets: []v1alpha1.ScratchTargetStatus{
				{Name: "a", Injected: true, Replicas: 3, PendingChange: change("aaaa111111")},
				{Name: "b", Injected: true, Replicas: 2, PendingChange: change("aaaa111111")},
				{Name: "c", Injected: true, Replicas: 1, PendingChange: change("cccc333333")},
				{Name: "d", Injected: true, Replicas: 1},
			},
			Sizing: &v1alpha1.SizingStatus{ID: "zzzz999999", Proposed: &proposed, Reason: v1alpha1.ReasonAwaitingApproval},
		},
	}
}

func TestApproveChoosesExactlyWhatIsPending(t *testing.T) {
	sv := pendingFleet()
	for _, tc := range []struct {
		name, target, change string
		want                 string // describeApprovals of the choice, or the error's text
		refused              bool
	}{
		{name: "everything", want: "change aaaa111111 (a, b); change cccc333333 (c); resize zzzz999999 (512Mi → 1Gi)"},
		{name: "a target alone in its change", target: "c", want: "change cccc333333 (c)"},
		{name: "a target that shares its change", target: "a", refused: true, want: "pending on StatefulSets a, b alike"},
		{name: "a target with nothing pending", target: "d", refused: true, want: "nothing is pending for StatefulSet d"},
		{name: "no such target", target: "x", refused: true, want: `has no target "x"; its targets are: a, b, c, d`},
		{name: "the change shown", change: "cccc333333", want: "change cccc333333 (c)"},
		{name: "the resize", change: "zzzz999999", want: "resize zzzz999999 (512Mi → 1Gi)"},
		{name: "a change that moved on", change: "bbbb222222", refused: true, want: "change bbbb222222 is not pending on ScratchVolume pool any more"},
		{name: "target and change that disagree", target: "c", change: "aaaa111111", refused: true, want: "it shows change cccc333333 (c)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := choose(sv, tc.target, tc.change)
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("want a refusal saying %q, got %v (%s)", tc.want, err, describeApprovals(got))
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.refused && describeApprovals(got) != tc.want:
				t.Errorf("chose %s, want %s", describeApprovals(got), tc.want)
			}
		})
	}
	if _, err := choose(&v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Name: "calm"}}, "", ""); err == nil || !strings.Contains(err.Error(), "nothing is pending on ScratchVolume calm") {
		t.Errorf("a ScratchVolume with nothing pending is not refused: %v", err)
	}
}

func TestTheApprovalAnnotationDropsWhatApprovesNothing(t *testing.T) {
	sv := pendingFleet()
	chosen, err := choose(sv, "c", "")
	if err != nil {
		t.Fatal(err)
	}
	// gone0000 is pending nowhere: dropped; aaaa111111 still waits: kept; cccc333333 added.
	if got := annotationValue(sv, approvedIDs(sv), chosen); got != "aaaa111111,cccc333333" {
		t.Errorf("annotation %q, want aaaa111111,cccc333333", got)
	}
}

func TestExplainNamesTheOperatorsEntries(t *testing.T) {
	sv := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Name: "tmp", Namespace: "shop"}, Spec: v1alpha1.ScratchVolumeSpec{Target: v1alpha1.ScratchTarget{Name: "db"}}}
	other := &v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Name: "else", Namespace: "shop"}, Spec: v1alpha1.ScratchVolumeSpec{Target: v1alpha1.ScratchTarget{Name: "other-db"}}}
	fields := `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:scratch.dbtune.io/tmp":{},"f:state.scratch.dbtune.io/tmp":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"mariadb\"}":{".":{},"f:name":{},"f:volumeMounts":{"k:{\"mountPath\":\"/var/lib/mysql-tmp\"}":{".":{},"f:mountPath":{},"f:name":{}}}}},` +
		`"f:initContainers":{"k:{\"name\":\"dbtune-init-tmp\"}":{".":{},"f:image":{}}},"f:volumes":{"k:{\"name\":\"dbtune-scratch-tmp\"}":{".":{},"f:emptyDir":{"f:medium":{}}}}}}}}`
	state, _ := json.Marshal(v1alpha1.InjectionState{Container: "mariadb", Memory: "512Mi", Request: "1536Mi", Limit: "2560Mi"})
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:template":{"f:spec":{"f:volumes":{"k:{\"name\":\"data\"}":{}}}}}}`)},
		{Manager: v1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(fields)},
	}}}
	sts.Spec.Template.Annotations = map[string]string{sv.InjectionAnnotation(): "abc123", sv.StateAnnotation(): string(state)}
	sv.Status.Targets = []v1alpha1.ScratchTargetStatus{{Name: "db", Injected: true, ConfigHash: "abc123", Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}}

	ex := explainStatefulSet(sts, []v1alpha1.ScratchVolume{*other, *sv})
	want := []string{
		"metadata.annotations[scratch.dbtune.io/tmp]", "metadata.annotations[state.scratch.dbtune.io/tmp]",
		"spec.containers[name=mariadb].volumeMounts[mountPath=/var/lib/mysql-tmp]",
		"spec.initContainers[name=dbtune-init-tmp]", "spec.volumes[name=dbtune-scratch-tmp]",
	}
	if strings.Join(ex.Owned, "\n") != strings.Join(want, "\n") {
		t.Errorf("owned entries:\n%s\nwant:\n%s", strings.Join(ex.Owned, "\n"), strings.Join(want, "\n"))
	}
	if len(ex.ScratchVolumes) != 1 || ex.ScratchVolumes[0].Name != "tmp" || ex.ScratchVolumes[0].Selects != "by name" || len(ex.ScratchVolumes[0].Added) != len(want) {
		t.Fatalf("explain does not attribute the entries to the ScratchVolume that selects the StatefulSet: %+v", ex.ScratchVolumes)
	}
	if len(ex.Unselected) != 1 || !strings.Contains(ex.Unselected[0], "else (selects StatefulSet other-db)") {
		t.Errorf("the other ScratchVolume is not listed as selecting something else: %v", ex.Unselected)
	}
	var b strings.Builder
	writeExplanation(&b, ex)
	for _, line := range []string{"memory added to container mariadb: 512Mi (request 1536Mi, limit 2560Mi)", "nothing missing: injected and rolled out"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("explain does not say %q:\n%s", line, b.String())
		}
	}

	sv.Status.Targets[0] = v1alpha1.ScratchTargetStatus{Name: "db", Message: "MemoryLimitTooLow: the limit 1Gi does not hold 512Mi + 768Mi"}
	sts.Spec.Template.Annotations, sts.ManagedFields = nil, nil
	ex = explainStatefulSet(sts, []v1alpha1.ScratchVolume{*sv})
	if why := strings.Join(ex.ScratchVolumes[0].Why, "\n"); !strings.Contains(why, "not injected: MemoryLimitTooLow") {
		t.Errorf("explain of a blocked target does not give its reason: %q", why)
	}
}

func TestStatefulSetArguments(t *testing.T) {
	for arg, want := range map[string]string{"statefulset/db": "db", "sts/db": "db", "statefulsets.apps/db": "db", "db": "db"} {
		if got, err := statefulSetName(arg); err != nil || got != want {
			t.Errorf("%s: %q, %v", arg, got, err)
		}
	}
	for _, arg := range []string{"deployment/db", "statefulset/"} {
		if _, err := statefulSetName(arg); err == nil {
			t.Errorf("%s is taken for a StatefulSet", arg)
		}
	}
}

// TestEveryReasonHasANextStep holds nextSteps to docs/troubleshooting.md: every reason its
// TargetFound, Injected and RolledOut tables list, and MemoryLimitTooLow, can be Ready's reason.
func TestEveryReasonHasANextStep(t *testing.T) {
	raw, err := os.ReadFile("../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), "\n## ScratchVolume\n")
	section, _, _ = strings.Cut(section, "\n## ")
	reasons := []string{v1alpha1.ReasonMemoryBudget}
	table := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)`")
	for _, heading := range []string{"### TargetFound", "### Injected (blocked)", "### RolledOut"} {
		_, part, ok := strings.Cut(section, heading+"\n")
		if !ok {
			t.Fatalf("docs/troubleshooting.md has no %q", heading)
		}
		part, _, _ = strings.Cut(part, "\n### ")
		for _, m := range table.FindAllStringSubmatch(part, -1) {
			reasons = append(reasons, m[1])
		}
	}
	if len(reasons) < 25 {
		t.Fatalf("found %d reasons in docs/troubleshooting.md; the check would see too little", len(reasons))
	}
	for _, r := range reasons {
		if _, ok := nextSteps[r]; !ok {
			t.Errorf("reason %s has no next step in kubectl dbtune status", r)
		}
	}
}

func TestStatusSaysWhyAndWhatNext(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	sv := pendingFleet()
	sv.Generation, sv.Status.ObservedGeneration = 2, 2
	sv.Spec.Sizing = &v1alpha1.SizingPolicy{Mode: v1alpha1.SizingAutomatic}
	sv.Status.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPodsRefused, Message: "d: the API server refused to create the pods"},
		{Type: v1alpha1.ConditionMemoryBudget, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonMemoryBudgetCovered},
	}
	sv.Status.Targets[2].PendingChange.Since = metav1.NewTime(now.Add(-3 * time.Hour))
	sv.Status.Targets[2].PendingChange.Changes = []string{"tmpdir moves to /var/lib/mysql-tmp/t"}
	sv.Status.Targets[3].Refused = &v1alpha1.RolloutRefusal{Message: `pods "d-0" is forbidden: no RAM volumes here`}
	var b strings.Builder
	writeStatus(&b, statusReport{ScratchVolumes: []volumeSummary{summarize(sv)}}, false, "shop", now)
	out := b.String()
	for _, want := range []string{
		"shop/pool: not Ready (PodCreationRefused), 0 of 4 StatefulSets injected",
		"  why:  d: the API server refused to create the pods",
		"  next: make the policy the message names admit the injected pods, then edit any field of the spec of pool",
		"  c: change cccc333333 awaits approval for 3h: the manager renders it otherwise",
		"    - tmpdir moves to /var/lib/mysql-tmp/t",
		"    approve: kubectl dbtune approve pool -n shop --change cccc333333",
		"  a, b: change aaaa111111 awaits approval: the manager renders it otherwise",
		`  d: the API server refused its injected pods: pods "d-0" is forbidden: no RAM volumes here`,
		"  sizing Automatic: AwaitingApproval → 1Gi (approve: kubectl dbtune approve pool -n shop --change zzzz999999)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
}
