package main

import (
	"context"
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

	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// nodesReport is what `nodes -o json|yaml` prints.
type nodesReport struct {
	Kind  string    `json:"kind"`
	Nodes []nodeRow `json:"nodes"`
}

const nodesReportKind = "NodeIOReport"

// nodeRow is one node's NodeIOProfile as `nodes` shows it.
type nodeRow struct {
	Node string `json:"node"`
	// Probed, ReadAhead and Degraded are the profile's conditions.
	Probed    *condition   `json:"probed,omitempty"`
	ReadAhead *condition   `json:"readAhead,omitempty"`
	Degraded  *condition   `json:"degraded,omitempty"`
	LastRun   *metav1.Time `json:"lastRun,omitempty"`
	Kernel    string       `json:"kernel,omitempty"`
	// ShmemEnabled is the kernel's shmem_enabled: deny and force override every tmpfs's option.
	ShmemEnabled string `json:"shmemEnabled,omitempty"`
	// The ratios are tmpfs/disk, as the profile's comparison has them ("" when not measured).
	LargePageTempFiles string `json:"largePageTempFileRatio,omitempty"`
	TempFiles          string `json:"tempFileRatio,omitempty"`
	BufferedWrite      string `json:"bufferedWriteRatio,omitempty"`
	SmallFiles         string `json:"smallFileCreateRatio,omitempty"`
	// DiskFdatasyncP50 and P99 are the disk's fdatasync latencies in microseconds.
	DiskFdatasyncP50 int64 `json:"diskFdatasyncP50Microseconds,omitempty"`
	DiskFdatasyncP99 int64 `json:"diskFdatasyncP99Microseconds,omitempty"`
	// ScratchVolumes counts the RAM volumes the agent samples there; Full how many are full now.
	ScratchVolumes int                              `json:"scratchVolumes"`
	Full           int                              `json:"fullScratchVolumes,omitempty"`
	UsedBytes      int64                            `json:"scratchUsedPeakBytes,omitempty"`
	Devices        []v1alpha1.DeviceReadAheadStatus `json:"readAheadDevices,omitempty"`
}

func (a *app) nodesCommand() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "nodes [NODE]",
		Short: "The node agents' measurements (RAM volume against disk) and the read-ahead of each device",
		Long: `Shows each node's NodeIOProfile: how temporary files move on a RAM volume with large pages and in
the kubelet's 4 KiB pages against the node's disk (above 1 the RAM volume is faster), the disk's
fdatasync latency, the RAM volumes the agent samples there, and the read-ahead of every device a
ReadAheadPolicy selects: the value found before, the policy's and the kernel's.

NodeIOProfiles belong to no namespace: reading them needs a ClusterRoleBinding to view or
dbtune-viewer.`,
		Example: `  kubectl dbtune nodes
  kubectl dbtune nodes worker-3 -o yaml`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := a.context(cmd)
			defer cancel()
			if err := a.requireAPI("nodes",
				need{"NodeIOProfile", "status.comparison.largePageTempFileRatio", "the temporary-file figures with large pages"},
				need{"NodeIOProfile", "status.readAhead.currentKiB", "each device's read-ahead"}); err != nil {
				return err
			}
			profiles, err := a.profiles(ctx, args)
			if err != nil {
				return err
			}
			report := nodesReport{Kind: nodesReportKind, Nodes: []nodeRow{}}
			for i := range profiles {
				report.Nodes = append(report.Nodes, nodeOf(&profiles[i]))
			}
			if out.structured() {
				return out.print(a.streams.Out, report)
			}
			writeNodes(a.streams.Out, report, a.now())
			return nil
		},
	}
	out.add(cmd)
	return cmd
}

func (a *app) profiles(ctx context.Context, names []string) ([]v1alpha1.NodeIOProfile, error) {
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	if len(names) == 1 {
		p := &v1alpha1.NodeIOProfile{}
		if err := c.Get(ctx, types.NamespacedName{Name: names[0]}, p); err != nil {
			if apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) && strings.Contains(err.Error(), names[0]) {
				return nil, fmt.Errorf("there is no NodeIOProfile %q: the node agent writes one per node it runs on (kubectl get pods -n dbtune-system -o wide shows where it runs)", names[0])
			}
			what := readNodeProfiles
			what.verb = "get"
			return nil, userError(err, what)
		}
		return []v1alpha1.NodeIOProfile{*p}, nil
	}
	list := &v1alpha1.NodeIOProfileList{}
	if err := c.List(ctx, list); err != nil {
		return nil, userError(err, readNodeProfiles)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

func nodeOf(p *v1alpha1.NodeIOProfile) nodeRow {
	find := func(t string) *condition {
		c := meta.FindStatusCondition(p.Status.Conditions, t)
		if c == nil {
			return nil
		}
		return &condition{Status: c.Status, Reason: c.Reason, Message: c.Message}
	}
	row := nodeRow{
		Node: p.Name, Probed: find(v1alpha1.ConditionProbed), ReadAhead: find(v1alpha1.ConditionReadAheadApplied),
		Degraded: find(v1alpha1.ConditionDegraded), LastRun: p.Status.LastRunTime, Kernel: p.Status.Kernel,
		ScratchVolumes: len(p.Status.ScratchVolumes), Devices: p.Status.ReadAhead,
	}
	if thp := p.Status.TransparentHugePages; thp != nil {
		row.ShmemEnabled = thp.ShmemEnabled
	}
	if c := p.Status.Comparison; c != nil {
		row.LargePageTempFiles, row.TempFiles, row.BufferedWrite, row.SmallFiles = c.LargePageTempFileRatio, c.TempFileRatio, c.BufferedWriteRatio, c.SmallFileCreateRatio
	}
	for _, t := range p.Status.Targets {
		if t.Kind == v1alpha1.TargetDisk && t.Fdatasync != nil {
			row.DiskFdatasyncP50, row.DiskFdatasyncP99 = t.Fdatasync.P50Microseconds, t.Fdatasync.P99Microseconds
		}
	}
	for _, v := range p.Status.ScratchVolumes {
		if v.Full {
			row.Full++
		}
		row.UsedBytes = max(row.UsedBytes, v.PeakBytes)
	}
	return row
}

func writeNodes(w io.Writer, r nodesReport, now time.Time) {
	if len(r.Nodes) == 0 {
		fmt.Fprintln(w, "No NodeIOProfiles: no node agent has reported yet (kubectl get daemonset -n dbtune-system).")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPROBED\tLAST-RUN\tTEMP-FILES LARGE-PAGES/DISK\t4K-PAGES/DISK\tWRITE/DISK\tSMALL-FILES/DISK\tDISK FDATASYNC P50/P99\tSHMEM\tRAM VOLUMES\tREAD-AHEAD")
	for _, n := range r.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, condStatus(n.Probed), since(n.LastRun, now),
			ratio(n.LargePageTempFiles), ratio(n.TempFiles), ratio(n.BufferedWrite), ratio(n.SmallFiles), fdatasync(n),
			dash(n.ShmemEnabled), volumes(n), condStatus(n.ReadAhead))
	}
	_ = tw.Flush()
	var notes []string
	for _, n := range r.Nodes {
		for _, c := range []*condition{n.Probed, n.ReadAhead} {
			if c != nil && c.Status == metav1.ConditionFalse {
				notes = append(notes, fmt.Sprintf("%s: %s: %s", n.Node, c.Reason, c.Message))
			}
		}
		if c := n.Degraded; c != nil && c.Status == metav1.ConditionTrue {
			notes = append(notes, fmt.Sprintf("%s: degraded (%s): %s", n.Node, c.Reason, c.Message))
		}
	}
	for _, note := range notes {
		fmt.Fprintf(w, "  %s\n", note)
	}
	var devices bool
	for _, n := range r.Nodes {
		devices = devices || len(n.Devices) > 0
	}
	if !devices {
		fmt.Fprintln(w, "\nNo device is selected by a ReadAheadPolicy.")
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tDEVICE\tPOLICY\tORIGINAL\tDESIRED\tCURRENT\tNOTE")
	for _, n := range r.Nodes {
		for _, d := range n.Devices {
			note := d.Message
			if note == "" && len(d.OverriddenPolicies) > 0 {
				note = "wins over " + strings.Join(d.OverriddenPolicies, ", ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, d.Device, dash(d.Policy), kib(d.OriginalKiB), kib(d.DesiredKiB), kib(d.CurrentKiB), dash(note))
		}
	}
	_ = tw.Flush()
}

// ratio writes a tmpfs/disk ratio as a factor: "2.61x".
func ratio(s string) string {
	if s == "" {
		return "-"
	}
	return s + "x"
}

func fdatasync(n nodeRow) string {
	if n.DiskFdatasyncP99 == 0 {
		return "-"
	}
	return fmt.Sprintf("%dµs/%dµs", n.DiskFdatasyncP50, n.DiskFdatasyncP99)
}

func volumes(n nodeRow) string {
	if n.ScratchVolumes == 0 {
		return "0"
	}
	s := fmt.Sprintf("%d, peak %s", n.ScratchVolumes, quantity.Approx(n.UsedBytes))
	if n.Full > 0 {
		s += fmt.Sprintf(", %d full", n.Full)
	}
	return s
}

func kib(v *int64) string {
	if v == nil {
		return "-"
	}
	return quantity.Bytes(*v * 1024)
}

func condStatus(c *condition) string {
	if c == nil {
		return "-"
	}
	return string(c.Status)
}

func since(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "never"
	}
	return age(now.Sub(t.Time)) + " ago"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
