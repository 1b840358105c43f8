package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// statusReport is what `status -o json|yaml` prints: the figures of the text view, named for
// scripts. Its fields only grow.
type statusReport struct {
	Kind           string          `json:"kind"`
	ScratchVolumes []volumeSummary `json:"scratchVolumes"`
}

const statusReportKind = "ScratchVolumeStatusReport"

// volumeSummary is one ScratchVolume as `status` shows it.
type volumeSummary struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Size      string `json:"size"`
	// Ready is the Ready condition; NextStep what to do when it is not True.
	Ready    condition `json:"ready"`
	NextStep string    `json:"nextStep,omitempty"`
	// Stale is set while the status describes an older generation than the spec.
	Stale           bool       `json:"stale,omitempty"`
	Memory          *condition `json:"memory,omitempty"`
	Capacity        *condition `json:"capacity,omitempty"`
	LargePages      *condition `json:"largePages,omitempty"`
	RecommendedSize string     `json:"recommendedSize,omitempty"`
	// PeakBytes is the highest use of any pod's volume; PeakPercent of the size.
	PeakBytes   int64          `json:"peakBytes,omitempty"`
	PeakPercent int32          `json:"peakPercent,omitempty"`
	Sizing      *sizingSummary `json:"sizing,omitempty"`
	Injected    int32          `json:"injectedTargets"`
	Targets     []targetRow    `json:"targets"`
}

type condition struct {
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
}

type sizingSummary struct {
	Mode     v1alpha1.SizingMode `json:"mode"`
	Proposed string              `json:"proposed,omitempty"`
	// ID is set when the proposed resize waits for an approval (approve takes it).
	ID      string `json:"id,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// targetRow is one target StatefulSet.
type targetRow struct {
	Name            string `json:"name"`
	Injected        bool   `json:"injected"`
	Replicas        int32  `json:"replicas"`
	UpdatedReplicas int32  `json:"updatedReplicas"`
	ReadyReplicas   int32  `json:"readyReplicas"`
	RolledOut       bool   `json:"rolledOut"`
	PeakBytes       int64  `json:"peakBytes,omitempty"`
	PeakPercent     int32  `json:"peakPercent,omitempty"`
	// LargePages counts the reported pods by the state of their volume's pages.
	LargePages map[v1alpha1.LargePagesState]int `json:"largePages,omitempty"`
	Pending    *pendingRow                      `json:"pending,omitempty"`
	// Refused quotes the API server's refusal of the injected pods.
	Refused string `json:"refused,omitempty"`
	// Message explains a target that is not injected.
	Message string `json:"message,omitempty"`
}

// pendingRow is a change that waits for approval or a maintenance window.
type pendingRow struct {
	ID         string       `json:"id"`
	Reason     string       `json:"reason,omitempty"`
	Why        string       `json:"why,omitempty"`
	Changes    []string     `json:"changes,omitempty"`
	Since      *metav1.Time `json:"since,omitempty"`
	NextWindow *metav1.Time `json:"nextWindow,omitempty"`
}

func (a *app) statusCommand() *cobra.Command {
	var all bool
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "status [SCRATCHVOLUME]",
		Short: "Every ScratchVolume and its targets: injected, pending, rolled out, memory, peak and recommended size",
		Long: `Shows every ScratchVolume of the namespace (or one, or with -A all of them) and each target
StatefulSet: whether it carries the volume, its pods on the injected template, the highest use of a
pod's volume against the size, the pages the volumes run with, and any change waiting for approval.
For a ScratchVolume that is not Ready it gives the reason and the next step.`,
		Example: `  kubectl dbtune status
  kubectl dbtune status mariadb-tmpdir -n shop
  kubectl dbtune status -A -o json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeScratchVolumes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all && len(args) == 1 {
				return errors.New("name one ScratchVolume or use --all-namespaces, not both: a name belongs to one namespace")
			}
			ctx, cancel := a.context(cmd)
			defer cancel()
			if err := a.requireAPI("status", need{"ScratchVolume", "status.targets.injected", "which targets carry the volume"}); err != nil {
				return err
			}
			svs, err := a.scratchVolumes(ctx, all, args)
			if err != nil {
				return err
			}
			report := statusReport{Kind: statusReportKind, ScratchVolumes: []volumeSummary{}}
			for i := range svs {
				report.ScratchVolumes = append(report.ScratchVolumes, summarize(&svs[i]))
			}
			if out.structured() {
				return out.print(a.streams.Out, report)
			}
			ns, _ := a.namespace()
			writeStatus(a.streams.Out, report, all, ns, a.now())
			return nil
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "show the ScratchVolumes of every namespace")
	out.add(cmd)
	return cmd
}

// scratchVolumes reads the named ScratchVolume, or those of the namespace, or of every namespace.
func (a *app) scratchVolumes(ctx context.Context, all bool, names []string) ([]v1alpha1.ScratchVolume, error) {
	c, ns, err := a.clientIn()
	if err != nil {
		return nil, err
	}
	what := readScratchVolumes
	what.namespace = ns
	if len(names) == 1 {
		sv := &v1alpha1.ScratchVolume{}
		what.verb = "get"
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names[0]}, sv); err != nil {
			if apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) && strings.Contains(err.Error(), names[0]) {
				return nil, fmt.Errorf("there is no ScratchVolume %q in namespace %s: `kubectl dbtune status -n %s` lists those there, `kubectl dbtune status -A` all of them", names[0], ns, ns)
			}
			return nil, userError(err, what)
		}
		return []v1alpha1.ScratchVolume{*sv}, nil
	}
	list := &v1alpha1.ScratchVolumeList{}
	var opts []client.ListOption
	if all {
		what.namespace = ""
	} else {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, userError(err, what)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		if list.Items[i].Namespace != list.Items[j].Namespace {
			return list.Items[i].Namespace < list.Items[j].Namespace
		}
		return list.Items[i].Name < list.Items[j].Name
	})
	return list.Items, nil
}

// summarize reads what status shows of sv.
func summarize(sv *v1alpha1.ScratchVolume) volumeSummary {
	s := volumeSummary{
		Namespace: sv.Namespace, Name: sv.Name, Size: quantity.Exact(sv.Spec.Size),
		Ready:    condition{Status: metav1.ConditionUnknown, Reason: "NotReported", Message: "the controller has not reported on this ScratchVolume yet: is the manager running? (kubectl get pods -n dbtune-system)"},
		Stale:    sv.Status.ObservedGeneration != 0 && sv.Status.ObservedGeneration < sv.Generation,
		Injected: sv.Status.InjectedTargets,
		Targets:  []targetRow{},
	}
	if c := conditionOf(sv, v1alpha1.ConditionReady); c != nil {
		s.Ready = *c
	}
	s.Memory = conditionOf(sv, v1alpha1.ConditionMemoryBudget)
	s.Capacity = conditionOf(sv, v1alpha1.ConditionCapacity)
	s.LargePages = conditionOf(sv, v1alpha1.ConditionLargePages)
	if s.Ready.Status != metav1.ConditionTrue {
		s.NextStep = nextStep(s.Ready.Reason, sv)
	}
	if sv.Status.RecommendedSize != nil {
		s.RecommendedSize = quantity.Exact(*sv.Status.RecommendedSize)
	}
	if u := sv.Status.Usage; u != nil {
		s.PeakBytes, s.PeakPercent = u.PeakBytes, u.PeakPercent
	}
	if p := sv.Spec.Sizing; p != nil && p.Mode != "" && p.Mode != v1alpha1.SizingManual {
		sz := &sizingSummary{Mode: p.Mode}
		if st := sv.Status.Sizing; st != nil {
			sz.Reason, sz.Message = st.Reason, st.Message
			if st.Proposed != nil {
				sz.Proposed = quantity.Exact(*st.Proposed)
			}
			if sizingWaits(st) {
				sz.ID = st.ID
			}
		}
		s.Sizing = sz
	}
	for _, t := range sv.Status.Targets {
		s.Targets = append(s.Targets, targetOf(sv, t))
	}
	return s
}

// sizingWaits reports whether a proposed resize waits for an approval (or a window).
func sizingWaits(st *v1alpha1.SizingStatus) bool {
	return st.ID != "" && (st.Reason == v1alpha1.ReasonAwaitingApproval || st.Reason == v1alpha1.ReasonAwaitingWindow)
}

func targetOf(sv *v1alpha1.ScratchVolume, t v1alpha1.ScratchTargetStatus) targetRow {
	row := targetRow{
		Name: t.Name, Injected: t.Injected, Replicas: t.Replicas, UpdatedReplicas: t.UpdatedReplicas, ReadyReplicas: t.ReadyReplicas,
		Message: t.Message,
	}
	row.RolledOut = t.Injected && t.UpdatedReplicas == t.Replicas && t.ReadyReplicas == t.Replicas
	if u := t.Usage; u != nil && u.Pods > 0 {
		row.PeakBytes = u.PeakBytes
		row.PeakPercent = percentOf(u.PeakBytes, sv.Spec.Size.Value())
	}
	for _, p := range t.LargePages {
		if row.LargePages == nil {
			row.LargePages = map[v1alpha1.LargePagesState]int{}
		}
		row.LargePages[p.State]++
	}
	if pc := t.PendingChange; pc != nil {
		row.Pending = &pendingRow{ID: pc.ID, Reason: pendingReason(pc), Why: pc.Reason, Changes: pc.Changes, NextWindow: pc.NextWindow}
		if !pc.Since.IsZero() {
			row.Pending.Since = &pc.Since
		}
	}
	if r := t.Refused; r != nil {
		row.Refused = r.Message
	}
	return row
}

// pendingReason is AwaitingMaintenanceWindow when the change waits for a window, else
// AwaitingApproval.
func pendingReason(pc *v1alpha1.PendingChange) string {
	if pc.NextWindow != nil {
		return v1alpha1.ReasonAwaitingWindow
	}
	return v1alpha1.ReasonAwaitingApproval
}

func percentOf(n, of int64) int32 {
	if of <= 0 {
		return 0
	}
	return int32((n*100 + of - 1) / of)
}

func conditionOf(sv *v1alpha1.ScratchVolume, t string) *condition {
	c := meta.FindStatusCondition(sv.Status.Conditions, t)
	if c == nil {
		return nil
	}
	return &condition{Status: c.Status, Reason: c.Reason, Message: c.Message}
}

// writeStatus writes the text view: a block per ScratchVolume, its targets in a table.
func writeStatus(w io.Writer, r statusReport, all bool, ns string, now time.Time) {
	if len(r.ScratchVolumes) == 0 {
		if all {
			fmt.Fprintln(w, "No ScratchVolumes in any namespace.")
		} else {
			fmt.Fprintf(w, "No ScratchVolumes in namespace %s (-A shows every namespace).\n", ns)
		}
		return
	}
	for i, s := range r.ScratchVolumes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeVolume(w, s, now)
	}
}

func writeVolume(w io.Writer, s volumeSummary, now time.Time) {
	state := "Ready"
	if s.Ready.Status != metav1.ConditionTrue {
		state = fmt.Sprintf("not Ready (%s)", s.Ready.Reason)
	}
	fmt.Fprintf(w, "%s/%s: %s, %d of %d %s injected\n", s.Namespace, s.Name, state, s.Injected, len(s.Targets), conditions.Plural(len(s.Targets), "StatefulSet", "StatefulSets"))
	facts := []string{"size " + s.Size}
	if s.Memory != nil {
		facts = append(facts, "memory "+s.Memory.Reason)
	}
	if s.PeakBytes > 0 {
		facts = append(facts, fmt.Sprintf("peak %s (%d%%)", quantity.Approx(s.PeakBytes), s.PeakPercent))
	}
	if s.Capacity != nil {
		facts = append(facts, "capacity "+s.Capacity.Reason)
	}
	if s.RecommendedSize != "" {
		facts = append(facts, "recommended "+s.RecommendedSize)
	}
	if s.LargePages != nil {
		facts = append(facts, "large pages "+s.LargePages.Reason)
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(facts, " · "))
	if s.Stale {
		fmt.Fprintln(w, "  the status describes an earlier generation of the spec: the controller has not caught up with the last edit yet")
	}
	if s.Ready.Status != metav1.ConditionTrue {
		fmt.Fprintf(w, "  why:  %s\n", s.Ready.Message)
		fmt.Fprintf(w, "  next: %s\n", s.NextStep)
	}
	if s.Memory != nil && s.Memory.Status == metav1.ConditionFalse && s.Ready.Reason != s.Memory.Reason {
		fmt.Fprintf(w, "  memory: %s\n", s.Memory.Message)
	}
	if s.Capacity != nil && s.Capacity.Status == metav1.ConditionFalse {
		fmt.Fprintf(w, "  capacity: %s\n", s.Capacity.Message)
	}
	if z := s.Sizing; z != nil {
		line := fmt.Sprintf("  sizing %s: %s", z.Mode, z.Reason)
		if z.Proposed != "" {
			line += " → " + z.Proposed
		}
		if z.ID != "" {
			line += fmt.Sprintf(" (approve: kubectl dbtune approve %s -n %s --change %s)", s.Name, s.Namespace, z.ID)
		}
		fmt.Fprintln(w, line)
	}
	if len(s.Targets) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STATEFULSET\tINJECTED\tPODS\tPEAK/SIZE\tLARGE-PAGES\tWAITING")
	for _, t := range s.Targets {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", t.Name, yesNo(t.Injected), pods(t), peak(t, s.Size), largePages(t.LargePages), waiting(t, now))
	}
	_ = tw.Flush()
	// A change is described once, with every target it waits on: an approval names the change.
	var ids []string
	waitingOn := map[string][]targetRow{}
	for _, t := range s.Targets {
		if p := t.Pending; p != nil {
			if _, seen := waitingOn[p.ID]; !seen {
				ids = append(ids, p.ID)
			}
			waitingOn[p.ID] = append(waitingOn[p.ID], t)
		}
	}
	for _, id := range ids {
		targets := waitingOn[id]
		var names []string
		for _, t := range targets {
			names = append(names, t.Name)
		}
		p := targets[0].Pending
		fmt.Fprintf(w, "  %s: change %s %s: %s\n", strings.Join(names, ", "), p.ID, describeWait(p, now), p.Why)
		for _, c := range p.Changes {
			fmt.Fprintf(w, "    - %s\n", c)
		}
		fmt.Fprintf(w, "    approve: kubectl dbtune approve %s -n %s --change %s\n", s.Name, s.Namespace, p.ID)
	}
	for _, t := range s.Targets {
		if t.Refused != "" {
			fmt.Fprintf(w, "  %s: the API server refused its injected pods: %s\n", t.Name, t.Refused)
		} else if !t.Injected && t.Message != "" {
			fmt.Fprintf(w, "  %s: %s\n", t.Name, t.Message)
		}
	}
}

func pods(t targetRow) string {
	if !t.Injected {
		return fmt.Sprintf("%d/%d ready", t.ReadyReplicas, t.Replicas)
	}
	return fmt.Sprintf("%d/%d updated, %d ready", t.UpdatedReplicas, t.Replicas, t.ReadyReplicas)
}

func peak(t targetRow, size string) string {
	if t.PeakBytes == 0 {
		return "-/" + size
	}
	return fmt.Sprintf("%s/%s (%d%%)", quantity.Approx(t.PeakBytes), size, t.PeakPercent)
}

// largePages counts the pods by state: "3 Applied", "2 Applied, 1 Unsupported"; "-" when no agent
// has reported a pod.
func largePages(by map[v1alpha1.LargePagesState]int) string {
	if len(by) == 0 {
		return "-"
	}
	var parts []string
	for state, n := range by {
		parts = append(parts, fmt.Sprintf("%d %s", n, state))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func waiting(t targetRow, now time.Time) string {
	switch {
	case t.Pending != nil:
		return "change " + t.Pending.ID + " " + describeWait(t.Pending, now)
	case t.Refused != "":
		return "pods refused"
	case !t.Injected:
		return "not injected"
	case !t.RolledOut:
		return "rolling out"
	}
	return "-"
}

func describeWait(p *pendingRow, now time.Time) string {
	if p.NextWindow != nil {
		return "waits for the window at " + p.NextWindow.UTC().Format(time.RFC3339) + " (in " + age(p.NextWindow.Sub(now)) + ")"
	}
	s := "awaits approval"
	if p.Since != nil {
		s += " for " + age(now.Sub(p.Since.Time))
	}
	return s
}

// age writes a duration as kubectl writes ages: 45s, 12m, 3h, 5d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
