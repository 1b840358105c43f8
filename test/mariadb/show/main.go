// Command show runs a StatefulSet's pod template, as a ScratchVolume injects it, through the
// real-server harness on this machine and prints what the database then reports: where tmpdir,
// the replica load directory and innodb_tmpdir are, what backs each of them, and that SHOW DATABASES
// lists none of the operator's directories. `make demo` runs it on the samples when mariadbd is
// installed and it runs as root.
//
//	go run ./test/mariadb/show [-statefulset FILE] [-scratchvolume FILE]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

func main() {
	mariadb.RunSandboxIfRequested()
	stsFile := flag.String("statefulset", "config/samples/mariadb-statefulset.yaml", "the StatefulSet manifest")
	svFile := flag.String("scratchvolume", "config/samples/dbtune_v1alpha1_scratchvolume.yaml", "the ScratchVolume manifest")
	flag.Parse()
	if err := run(*stsFile, *svFile); err != nil {
		fmt.Fprintf(os.Stderr, "show: %v\n", err)
		os.Exit(1)
	}
}

func run(stsFile, svFile string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root to mount the tmpfs and run mariadbd in its own namespaces")
	}
	sts := &appsv1.StatefulSet{}
	sv := &v1alpha1.ScratchVolume{}
	if err := load(stsFile, sts); err != nil {
		return err
	}
	if err := load(svFile, sv); err != nil {
		return err
	}
	h, err := mariadb.NewHost("")
	if err != nil {
		return err
	}
	defer func() { _ = h.Close() }()
	// The installed server stands in for the image: name it, so that the profile matches it.
	line := fmt.Sprintf("mariadb:%d.%d", h.Server.Version.Major, h.Server.Version.Minor)
	for i := range sts.Spec.Template.Spec.Containers {
		if c := &sts.Spec.Template.Spec.Containers[i]; strings.HasPrefix(c.Image, "mariadb:") && c.Image != line {
			fmt.Printf("(the %s image is played by this machine's MariaDB %s, so the pod runs as %s)\n", c.Image, h.Server.Version, line)
			c.Image = line
		}
	}
	pod, err := h.NewPod(sts, sv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pod.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = pod.Stop(context.Background()) }()
	return report(ctx, pod)
}

func report(ctx context.Context, pod *mariadb.Pod) error {
	var tmpdir, loadDir, innodbTmpdir string
	row := pod.DB().QueryRowContext(ctx, "SELECT @@tmpdir, @@slave_load_tmpdir, IFNULL(@@innodb_tmpdir, '')")
	if err := row.Scan(&tmpdir, &loadDir, &innodbTmpdir); err != nil {
		return fmt.Errorf("failed to read the server's directories: %w", err)
	}
	fmt.Println("mariadb> SELECT @@tmpdir, @@slave_load_tmpdir, @@innodb_tmpdir;")
	for _, v := range []struct{ name, dir string }{{"@@tmpdir", tmpdir}, {"@@slave_load_tmpdir", loadDir}, {"@@innodb_tmpdir", innodbTmpdir}} {
		fmt.Printf("  %-20s %-50s %s\n", v.name, v.dir, backing(pod, v.dir))
	}
	rows, err := pod.DB().QueryContext(ctx, "SHOW DATABASES")
	if err != nil {
		return fmt.Errorf("SHOW DATABASES: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		names = append(names, n)
	}
	fmt.Printf("mariadb> SHOW DATABASES;\n  %s\n", strings.Join(names, ", "))
	return rows.Err()
}

// backing says what filesystem holds a directory as the container sees it.
func backing(pod *mariadb.Pod, dir string) string {
	p, err := pod.Path(dir)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return "(" + err.Error() + ")"
	}
	if st.Type == unix.TMPFS_MAGIC {
		return fmt.Sprintf("tmpfs, %d MiB: RAM", st.Blocks*uint64(st.Bsize)>>20)
	}
	return "disk (the data volume): survives a restart"
}

func load(file string, into any) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
