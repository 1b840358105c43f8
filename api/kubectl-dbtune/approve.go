package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// approval is one pending change a ScratchVolume's status shows: a target's configuration
// change, or the resize spec.sizing proposes.
type approval struct {
	ID string `json:"id"`
	// Targets are the StatefulSets the change is pending for; empty for a resize.
	Targets []string `json:"targets,omitempty"`
	// Resize is "512Mi → 1Gi" for the resize spec.sizing proposes.
	Resize string `json:"resize,omitempty"`
	// Restarts counts the pods the change restarts.
	Restarts int32 `json:"restarts,omitempty"`
}

// approveResult is what `approve -o json|yaml` prints.
type approveResult struct {
	Namespace     string     `json:"namespace"`
	ScratchVolume string     `json:"scratchVolume"`
	Approved      []approval `json:"approved"`
	// AlreadyApproved are changes the annotation named before, still waiting for the controller.
	AlreadyApproved []approval `json:"alreadyApproved,omitempty"`
	// Annotation is the value of dbtune.io/approve-change written.
	Annotation string `json:"annotation"`
}

func (a *app) approveCommand() *cobra.Command {
	var target, change string
	var waitFor time.Duration
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "approve SCRATCHVOLUME [--target STATEFULSET] [--change ID]",
		Short: "Let through the change a ScratchVolume's status shows as pending",
		Long: `Approves the changes that wait on a ScratchVolume (status.targets[].pendingChange, and the resize
spec.sizing proposes): it adds their ids to the annotation dbtune.io/approve-change, and the
controller applies them, which restarts the targets' pods.

--target approves only the change of that StatefulSet, and refuses when other targets wait for the
same change (an approval names a change, and lets it through wherever it waits); --change approves
only the change with that id, as status showed it. The approval is written only if the ScratchVolume still shows what was read: when
the change moved on in between (applied, replaced by another, withdrawn), nothing is approved and
the command says what the status shows now.`,
		Example: `  kubectl dbtune approve mariadb-tmpdir
  kubectl dbtune approve mariadb-tmpdir --target mariadb-b
  kubectl dbtune approve mariadb-tmpdir --change 5c1f0e2a9b7d --wait 10m`,
		Args:              exactlyOne("a ScratchVolume name: kubectl dbtune approve SCRATCHVOLUME"),
		ValidArgsFunction: a.completeScratchVolumes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := a.context(cmd)
			defer cancel()
			if err := a.requireAPI("approve", need{"ScratchVolume", "status.targets.pendingChange.id", "the pending change of each target"}); err != nil {
				return err
			}
			res, err := a.approve(ctx, args[0], target, change)
			if err != nil {
				return err
			}
			if out.structured() {
				if err := out.print(a.streams.Out, res); err != nil {
					return err
				}
			} else {
				writeApproval(a.streams.Out, res)
			}
			if waitFor > 0 {
				return a.waitApplied(cmd.Context(), res, waitFor)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "approve only the pending change of this StatefulSet")
	cmd.Flags().StringVar(&change, "change", "", "approve only the change with this id, as status showed it; refused when it is no longer pending")
	cmd.Flags().DurationVar(&waitFor, "wait", 0, "wait this long for the approved changes to be applied and rolled out (such as 10m)")
	_ = cmd.RegisterFlagCompletionFunc("target", a.completeTargets)
	out.add(cmd)
	return cmd
}

// exactlyOne is cobra.ExactArgs with a message that says what the argument is.
func exactlyOne(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("expected one argument, %s", what)
		}
		return nil
	}
}

// approve writes the approval of what sv shows pending, within what target and change narrow it to.
// The write is conditional on the resourceVersion read: when the ScratchVolume changed in between
// and its pending changes are still the same, it tries again; when they moved on, it refuses.
func (a *app) approve(ctx context.Context, name, target, change string) (*approveResult, error) {
	c, ns, err := a.clientIn()
	if err != nil {
		return nil, err
	}
	var first []approval
	for attempt := 0; ; attempt++ {
		sv := &v1alpha1.ScratchVolume{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sv); err != nil {
			if apierrors.IsNotFound(err) && strings.Contains(err.Error(), name) {
				return nil, fmt.Errorf("there is no ScratchVolume %q in namespace %s: `kubectl dbtune status -n %s` lists those there", name, ns, ns)
			}
			what := readScratchVolumes
			what.verb, what.namespace = "get", ns
			return nil, userError(err, what)
		}
		chosen, err := choose(sv, target, change)
		if err != nil {
			return nil, err
		}
		if attempt == 0 {
			first = chosen
		} else if !sameApprovals(first, chosen) {
			return nil, fmt.Errorf("the pending change of ScratchVolume %s moved on while it was being approved: it was %s, it is now %s; nothing was approved. Run `kubectl dbtune status %s -n %s` and approve what it shows",
				name, describeApprovals(first), describeApprovals(chosen), name, ns)
		}
		res := &approveResult{Namespace: ns, ScratchVolume: name}
		have := approvedIDs(sv)
		for _, ap := range chosen {
			if slices.Contains(have, ap.ID) {
				res.AlreadyApproved = append(res.AlreadyApproved, ap)
			} else {
				res.Approved = append(res.Approved, ap)
			}
		}
		res.Annotation = annotationValue(sv, have, chosen)
		if len(res.Approved) == 0 {
			return res, nil // nothing to write: the annotation names every one already
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": sv.ResourceVersion,
			"annotations":     map[string]string{v1alpha1.ApproveChangeAnnotation: res.Annotation},
		}})
		err = c.Patch(ctx, sv, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManager))
		switch {
		case err == nil:
			return res, nil
		case apierrors.IsConflict(err) && attempt < 5:
			continue // the status moved: read it again, and approve only if it still shows the same
		case apierrors.IsConflict(err):
			return nil, fmt.Errorf("ScratchVolume %s kept changing while it was being approved; nothing was approved: try again", name)
		}
		what := approveChanges
		what.namespace = ns
		return nil, userError(err, what)
	}
}

// choose picks the pending changes sv shows that target and change narrow it to, or says why there
// is nothing to approve.
func choose(sv *v1alpha1.ScratchVolume, target, change string) ([]approval, error) {
	pending := pendingApprovals(sv)
	if target != "" {
		var found *v1alpha1.ScratchTargetStatus
		for i := range sv.Status.Targets {
			if sv.Status.Targets[i].Name == target {
				found = &sv.Status.Targets[i]
			}
		}
		if found == nil {
			return nil, fmt.Errorf("ScratchVolume %s has no target %q; its targets are: %s", sv.Name, target, targetNames(sv))
		}
		if found.PendingChange == nil {
			return nil, fmt.Errorf("nothing is pending for StatefulSet %s of ScratchVolume %s: it carries what the manager renders for it (injected: %s)", target, sv.Name, yesNo(found.Injected))
		}
		pending = slices.DeleteFunc(pending, func(ap approval) bool { return !slices.Contains(ap.Targets, target) })
		if len(pending) == 1 && len(pending[0].Targets) > 1 {
			ap := pending[0]
			return nil, fmt.Errorf("change %s is pending on StatefulSets %s alike: an approval names the change, not a StatefulSet, so it would restart the pods of all %d (%d pods). Approve it for all of them with `kubectl dbtune approve %s -n %s --change %s`; set spec.rollout.maxInFlight: 1 first to have them roll one at a time",
				ap.ID, strings.Join(ap.Targets, ", "), len(ap.Targets), ap.Restarts, sv.Name, sv.Namespace, ap.ID)
		}
	}
	if change != "" {
		kept := slices.DeleteFunc(slices.Clone(pending), func(ap approval) bool { return ap.ID != change })
		if len(kept) == 0 {
			now := "nothing is pending"
			if len(pending) > 0 {
				now = "it shows " + describeApprovals(pending)
			}
			return nil, fmt.Errorf("change %s is not pending on ScratchVolume %s any more (applied, replaced or withdrawn since it was shown): %s. Nothing was approved; run `kubectl dbtune status %s -n %s`", change, sv.Name, now, sv.Name, sv.Namespace)
		}
		pending = kept
	}
	if len(pending) == 0 {
		return nil, fmt.Errorf("nothing is pending on ScratchVolume %s: every target carries what the manager renders for it, and no resize waits", sv.Name)
	}
	return pending, nil
}

// pendingApprovals lists the changes sv shows pending: one per id, with the targets sharing it,
// then the resize spec.sizing proposes.
func pendingApprovals(sv *v1alpha1.ScratchVolume) []approval {
	byID := map[string]*approval{}
	var out []approval
	for _, t := range sv.Status.Targets {
		if t.PendingChange == nil || t.PendingChange.ID == "" {
			continue
		}
		if ap, ok := byID[t.PendingChange.ID]; ok {
			ap.Targets = append(ap.Targets, t.Name)
			continue
		}
		out = append(out, approval{ID: t.PendingChange.ID, Targets: []string{t.Name}})
		byID[t.PendingChange.ID] = &out[len(out)-1]
	}
	for i := range out {
		out[i].Restarts = restartsOf(sv, out[i].Targets)
	}
	if st := sv.Status.Sizing; st != nil && sizingWaits(st) {
		resize := "a resize"
		if st.Proposed != nil {
			resize = sv.Spec.Size.String() + " → " + st.Proposed.String()
		}
		out = append(out, approval{ID: st.ID, Resize: resize})
	}
	return out
}

func restartsOf(sv *v1alpha1.ScratchVolume, targets []string) int32 {
	var n int32
	for _, t := range sv.Status.Targets {
		if slices.Contains(targets, t.Name) {
			n += t.Replicas
		}
	}
	return n
}

func sameApprovals(a, b []approval) bool {
	return describeApprovals(a) == describeApprovals(b)
}

// describeApprovals names changes: "change 1a2b (mariadb, mariadb-b); resize 3c4d (512Mi → 1Gi)".
func describeApprovals(aps []approval) string {
	if len(aps) == 0 {
		return "nothing pending"
	}
	var parts []string
	for _, ap := range aps {
		if ap.Resize != "" {
			parts = append(parts, fmt.Sprintf("resize %s (%s)", ap.ID, ap.Resize))
		} else {
			parts = append(parts, fmt.Sprintf("change %s (%s)", ap.ID, strings.Join(ap.Targets, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

// approvedIDs is what sv's approval annotation names.
func approvedIDs(sv *v1alpha1.ScratchVolume) []string {
	var ids []string
	for _, id := range strings.Split(sv.Annotations[v1alpha1.ApproveChangeAnnotation], ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// annotationValue is the approval annotation with chosen added. Ids of changes that are no longer
// pending anywhere are dropped: they approve nothing any more, and a list that only grows would
// one day approve a change nobody saw, should an id come back.
func annotationValue(sv *v1alpha1.ScratchVolume, have []string, chosen []approval) string {
	pending := map[string]bool{}
	for _, ap := range pendingApprovals(sv) {
		pending[ap.ID] = true
	}
	keep := map[string]bool{}
	for _, id := range have {
		if pending[id] {
			keep[id] = true
		}
	}
	for _, ap := range chosen {
		keep[ap.ID] = true
	}
	ids := make([]string, 0, len(keep))
	for id := range keep {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

func targetNames(sv *v1alpha1.ScratchVolume) string {
	if len(sv.Status.Targets) == 0 {
		return "none reported"
	}
	var names []string
	for _, t := range sv.Status.Targets {
		names = append(names, t.Name)
	}
	return conditions.Names(names, 16)
}

func writeApproval(w interface{ Write([]byte) (int, error) }, res *approveResult) {
	for _, ap := range res.Approved {
		fmt.Fprintf(w, "approved %s on %s/%s%s\n", describeApprovals([]approval{ap}), res.Namespace, res.ScratchVolume, restartNote(ap))
	}
	for _, ap := range res.AlreadyApproved {
		fmt.Fprintf(w, "%s was already approved on %s/%s; the controller has not applied it yet (kubectl dbtune status %s -n %s says why)\n",
			describeApprovals([]approval{ap}), res.Namespace, res.ScratchVolume, res.ScratchVolume, res.Namespace)
	}
	if len(res.Approved) > 0 {
		fmt.Fprintf(w, "the controller applies it now; follow it with: kubectl dbtune status %s -n %s\n", res.ScratchVolume, res.Namespace)
	}
}

func restartNote(ap approval) string {
	switch {
	case ap.Resize != "":
		return ": the targets' pods restart with the new size"
	case ap.Restarts > 0:
		return fmt.Sprintf(": %d %s restart as the StatefulSet controller rolls them", ap.Restarts, conditions.Plural(int(ap.Restarts), "pod", "pods"))
	}
	return ""
}

// waitApplied waits until none of the approved changes is pending any more and every target is
// rolled out, or says what still waits when the time is up.
func (a *app) waitApplied(ctx context.Context, res *approveResult, timeout time.Duration) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, ap := range append(slices.Clone(res.Approved), res.AlreadyApproved...) {
		ids[ap.ID] = true
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		sv := &v1alpha1.ScratchVolume{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: res.Namespace, Name: res.ScratchVolume}, sv); err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // a failed read is tried again until the time is up
		}
		for _, ap := range pendingApprovals(sv) {
			if ids[ap.ID] {
				last = describeApprovals([]approval{ap}) + " is still pending"
				return false, nil
			}
		}
		for _, t := range sv.Status.Targets {
			if t.Injected && (t.UpdatedReplicas != t.Replicas || t.ReadyReplicas != t.Replicas) {
				last = fmt.Sprintf("StatefulSet %s has %d of %d pods updated, %d ready", t.Name, t.UpdatedReplicas, t.Replicas, t.ReadyReplicas)
				return false, nil
			}
		}
		return sv.Status.ObservedGeneration >= sv.Generation, nil
	})
	if err != nil {
		return fmt.Errorf("the approved change is not rolled out after %s: %s", timeout, last)
	}
	fmt.Fprintf(a.streams.Out, "applied and rolled out: %s/%s\n", res.Namespace, res.ScratchVolume)
	return nil
}
