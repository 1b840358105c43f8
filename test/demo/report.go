package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// report prints what a user wants to see after the rollout, mostly as the kubectl commands they
// would type, and how to go on. A command that fails here is shown with its error; the demo goes on.
func (d *demo) report(ctx context.Context, r *results) {
	d.section("The ScratchVolume and what it did")
	d.show(ctx, "get", "scratchvolumes,statefulsets,pods,persistentvolumeclaims", "-n", demoNamespace, "-o", "wide")
	d.showConditions(ctx)
	d.showInjected(ctx)
	d.showDropIn(ctx)
	d.show(ctx, "get", "events", "-n", demoNamespace, "--field-selector", "involvedObject.kind=ScratchVolume")

	if r.realNode != "" {
		d.showInsideTheRealPod(ctx)
		if r.agentRuns {
			d.showUsage(ctx)
		}
	} else {
		d.showInsideThePod(ctx)
		fmt.Fprintf(d.out, "(No real node in this demo; it needs %s.)\n\n", strings.Join(r.noRealNode, ", "))
	}

	d.section("The node agent")
	d.show(ctx, "get", "nodeioprofiles,readaheadpolicies", "-o", "wide")
	if !r.agentRuns {
		fmt.Fprintln(d.out, "(This node-agent build has no DaemonSet mode (`node-agent run`) yet, so no NodeIOProfile is published; the one-shot probe below measures the same things.)")
		fmt.Fprintln(d.out)
	}
	d.showCommand(append([]string{"bin/node-agent"}, r.probeArgs...), r.probe)
	d.showReadAhead(ctx, r)

	d.section("Explore")
	fmt.Fprintf(d.out, `The cluster keeps running. In another shell:

  export KUBECONFIG=%s
  export PATH=%s:$PATH    # for the kubectl commands below

  kubectl get dbtune -A                                 # every ScratchVolume, NodeIOProfile, ReadAheadPolicy
  kubectl describe scratchvolume %s -n %s
  kubectl get statefulset %s -n %s -o yaml --show-managed-fields
  kubectl delete scratchvolume %s -n %s       # watch the clean revert: kubectl get pods -n %s -w
  kubectl explain scratchvolume.spec --recursive

Logs of every process: %s
Stop everything: make demo-down
`, d.kubeconfig(), d.binDir, scratchVolume, demoNamespace, statefulSet, demoNamespace, scratchVolume, demoNamespace,
		demoNamespace, d.rel(filepath.Join(d.clusterDir, "logs")))
}

// showInsideThePod runs the injected pod template of the samples as real processes (kwok runs no
// containers) and shows where MariaDB puts its temporary files. It needs root and mariadbd.
func (d *demo) showInsideThePod(ctx context.Context) {
	d.section("Inside the pod: the injected template run by a real MariaDB")
	if _, err := exec.LookPath("mariadbd"); err != nil || os.Geteuid() != 0 {
		fmt.Fprintln(d.out, "(Skipped: needs root and MariaDB — apt-get install mariadb-server — to run the injected pod template as real processes.)")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./test/mariadb/show")
	cmd.Dir, cmd.Env = d.root, append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		out = append(out, []byte(err.Error())...)
	}
	d.showCommand([]string{"go", "run", "./test/mariadb/show"}, out)
}

func (d *demo) section(title string) {
	fmt.Fprintf(d.out, "\n=== %s %s\n\n", title, strings.Repeat("=", max(3, 96-len(title))))
}

// show runs kubectl and prints it as a user would see it in a terminal.
func (d *demo) show(ctx context.Context, args ...string) {
	out, err := d.kubectl(ctx, args...)
	if err != nil {
		out = []byte(err.Error())
	}
	d.showCommand(append([]string{"kubectl"}, args...), out)
}

func (d *demo) showCommand(cmd []string, out []byte) {
	fmt.Fprintf(d.out, "$ %s\n%s\n", shellJoin(cmd), strings.TrimRight(string(out), "\n")+"\n")
}

// showConditions prints the ScratchVolume's conditions as a table; kubectl's jsonpath separates the
// columns with tabs, which a terminal does not align.
func (d *demo) showConditions(ctx context.Context) {
	args := []string{"get", "scratchvolume", scratchVolume, "-n", demoNamespace, "-o",
		`jsonpath={range .status.conditions[*]}{.type}{"\t"}{.status}{"\t"}{.reason}{"\t"}{.message}{"\n"}{end}`}
	out, err := d.kubectl(ctx, args...)
	if err != nil {
		d.showCommand(append([]string{"kubectl"}, args...), []byte(err.Error()))
		return
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tSTATUS\tREASON\tMESSAGE")
	_, _ = tw.Write(out)
	_ = tw.Flush()
	d.showCommand(append([]string{"kubectl"}, args...), []byte(b.String()))
}

// showInjected prints the parts of the StatefulSet that the operator owns: server-side apply records
// them per field manager, and client-go can extract one manager's fields from an object.
func (d *demo) showInjected(ctx context.Context) {
	args := []string{"get", "statefulset", statefulSet, "-n", demoNamespace, "-o", "json", "--show-managed-fields"}
	header := fmt.Sprintf("# The fields of statefulset/%s owned by field manager %s: everything the ScratchVolume added.\n# (kubectl get statefulset %s -n %s -o yaml --show-managed-fields shows them among the rest.)\n",
		statefulSet, v1alpha1.FieldManager, statefulSet, demoNamespace)
	out, err := d.kubectl(ctx, args...)
	if err == nil {
		out, err = ownedFields(out)
	}
	if err != nil {
		out = []byte(err.Error())
	}
	fmt.Fprintf(d.out, "%s%s\n", header, strings.TrimRight(string(out), "\n"))
	fmt.Fprintln(d.out)
}

func ownedFields(stsJSON []byte) ([]byte, error) {
	var sts appsv1.StatefulSet
	if err := json.Unmarshal(stsJSON, &sts); err != nil {
		return nil, err
	}
	owned, err := appsv1ac.ExtractStatefulSet(&sts, v1alpha1.FieldManager)
	if err != nil {
		return nil, fmt.Errorf("failed to extract the fields of %s: %w", v1alpha1.FieldManager, err)
	}
	// The identity fields are there for apply, not news.
	owned.APIVersion, owned.Kind, owned.Name, owned.Namespace = nil, nil, nil, nil
	if m := owned.ObjectMetaApplyConfiguration; m != nil && len(m.Labels) == 0 && len(m.Annotations) == 0 {
		owned.ObjectMetaApplyConfiguration = nil
	}
	return yaml.Marshal(owned)
}

// showDropIn prints the my.cnf drop-in file(s) the operator wrote for the StatefulSet.
func (d *demo) showDropIn(ctx context.Context) {
	args := []string{"get", "configmaps", "-n", demoNamespace, "-l", v1alpha1.ScratchVolumeLabel + "=" + scratchVolume, "-o", "json"}
	out, err := d.kubectl(ctx, args...)
	var list corev1.ConfigMapList
	if err == nil {
		err = json.Unmarshal(out, &list)
	}
	if err != nil {
		d.showCommand(append([]string{"kubectl"}, args...), []byte(err.Error()))
		return
	}
	for _, cm := range list.Items {
		for key, content := range cm.Data {
			d.showCommand([]string{"kubectl", "get", "configmap", cm.Name, "-n", demoNamespace, "-o",
				"jsonpath={.data." + strings.ReplaceAll(key, ".", `\.`) + "}"}, []byte(content))
		}
	}
}

// showReadAhead lists the block devices' read-ahead and, as root, sets it on the demo's loop device
// the way `blockdev --setra 262144` would (128 MiB).
func (d *demo) showReadAhead(ctx context.Context, r *results) {
	agent := d.bin("node-agent")
	d.showOwn(ctx, agent, "readahead", "report")
	if r.loop == nil {
		fmt.Fprintln(d.out, "(Setting read-ahead needs root and /dev/loop-control; run make demo as root to see it on a loop device.)")
		return
	}
	d.showOwn(ctx, agent, "readahead", "get", r.loop.Name)
	d.showOwn(ctx, agent, "readahead", "set", r.loop.Name, "131072")
	sysfs := "/sys/block/" + r.loop.Name + "/queue/read_ahead_kb"
	if data, err := os.ReadFile(sysfs); err == nil {
		d.showCommand([]string{"cat", sysfs}, data)
	}
	fmt.Fprintf(d.out, "(make demo-down restores /dev/%s's read-ahead and detaches it.)\n", r.loop.Name)
}

func (d *demo) showOwn(ctx context.Context, path string, args ...string) {
	out, err := execOutput(ctx, path, args...)
	if err != nil {
		out = append(out, []byte(err.Error())...)
	}
	d.showCommand(append([]string{d.rel(path)}, args...), out)
}

// shellJoin quotes the arguments that need it, so that a printed command can be pasted into a shell.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'`$\\|&;<>(){}[]*?!#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted[i] = a
	}
	return strings.Join(quoted, " ")
}
