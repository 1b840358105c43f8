package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportsSample is a run of the reports workload alone, on a cloud-shaped volume, tmpfs against
// the volume variant: tmpfs's p99 is lower in every run.
func reportsSample() *results {
	r := sample()
	r.Machine = machine{CPUs: 2, Kernel: "6.18.44", Server: "MySQL 9.7.4", Image: "mysql-sid"}
	r.Variants = map[string]*variant{
		"tmpfs":       {TmpDir: "/var/lib/mysql-tmp", FS: "tmpfs", DataFS: "ext4", DataVolume: "gp3 (125 MiB/s, 3000 IOPS, 1ms)"},
		volumeVariant: {TmpDir: dataDir, FS: "ext4", DataFS: "ext4", DataVolume: "gp3 (125 MiB/s, 3000 IOPS, 1ms)"},
	}
	r.order = []string{"tmpfs", volumeVariant}
	r.Runs = map[string][]runResult{}
	for i, p99 := range []float64{40, 44, 42} {
		free := 0.4
		for name, f := range map[string]float64{"tmpfs": 1, volumeVariant: 3} {
			r.Runs[name] = append(r.Runs[name], runResult{Workload: reportsWorkload, Round: i + 1, Position: 1, TPS: 500,
				P95Millis: 20, P99Millis: p99 * f, StageSeconds: 2, ScanMiBPerSecond: 300, Reports: 6, BufferPoolFreePercent: &free})
		}
	}
	r.Settings.Reports = &reportSettings{Seconds: 150, Clients: 2, StageMiB: 160, HoldSeconds: 45}
	r.summarize()
	return r
}

func TestReportsRowsAndName(t *testing.T) {
	r := reportsSample()
	if got := r.baseName(); got != "mysql-9.7-reports-gp3" {
		t.Errorf("a reports-only run on gp3 is named %q", got)
	}
	block := r.block()
	for _, want := range []string{
		"| reports: sysbench p99 latency | 42.00 ms | 126.00 ms | 0.33x (",
		"| tmpfs better |",
		"buffer pool free at its start |",
		"| 0.4 % |",
	} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "| temp:") || strings.Contains(block, "| mixed:") {
		t.Errorf("block has rows of workloads that did not run:\n%s", block)
	}
	if md := r.markdown("x.png", "x.json"); !strings.Contains(md, "2 report jobs each stage 160 MiB") {
		t.Errorf("the reports section does not say what the jobs did:\n%s", md)
	}
	if got := len(r.chart().Panels); got != 4 {
		t.Errorf("the chart of a reports-only run has %d panels, want the 4 reports ones", got)
	}
}

func TestSelectWorkloads(t *testing.T) {
	cfg := config{bigSortMiB: 0, alterMiB: 0, reportsDuration: 1}
	all := workloads(cfg)
	got, err := selectWorkloads(all, []string{reportsWorkload})
	if err != nil || len(got) != 1 || got[0].name != reportsWorkload {
		t.Fatalf("selectWorkloads(reports) = %v, %v", workloadNames(got), err)
	}
	if _, err := selectWorkloads(all, []string{"bigsort"}); err == nil || !strings.Contains(err.Error(), "temp, mixed, reports") && !strings.Contains(err.Error(), "[temp mixed reports]") {
		t.Errorf("a workload the sizes disable was taken, or the error does not list the others: %v", err)
	}
	if got, _ := selectWorkloads(all, nil); len(got) != len(all) {
		t.Errorf("no -workloads keeps %d of %d", len(got), len(all))
	}
}

func TestVariantsFor(t *testing.T) {
	for _, c := range []struct {
		volume  string
		list    []string
		want    string
		wantErr string
	}{
		{volume: "none", want: "tmpfs,tmpfs-4k,disk"},
		{volume: "gp3", want: "tmpfs,tmpfs-4k,disk,volume"},
		{volume: "gp3", list: []string{"tmpfs", "volume"}, want: "tmpfs,volume"},
		{volume: "none", list: []string{"tmpfs", "volume"}, wantErr: `"volume" is not a variant of this run`},
		{volume: "gp3", list: []string{"disk", "volume"}, wantErr: "has it"},
	} {
		got, err := variantsFor(config{volume: c.volume, variantList: c.list})
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s %v: error %v, want one saying %q", c.volume, c.list, err, c.wantErr)
		case c.wantErr == "" && (err != nil || strings.Join(got, ",") != c.want):
			t.Errorf("%s %v: %v, %v, want %s", c.volume, c.list, got, err, c.want)
		}
	}
}

func TestBufferPoolFreePercent(t *testing.T) {
	if got := bufferPoolFreePercent(map[string]int64{"Innodb_buffer_pool_pages_total": 65536, "Innodb_buffer_pool_pages_free": 1024}); got != 1.5625 {
		t.Errorf("1024 of 65536 pages free is %v %%", got)
	}
	if got := bufferPoolFreePercent(map[string]int64{}); got != 0 {
		t.Errorf("no counters give %v %%", got)
	}
}

func TestStageRows(t *testing.T) {
	// 160 MiB of 264-byte rows.
	if got := stageRows(160); got != 635500 {
		t.Errorf("stageRows(160) = %d", got)
	}
	if s := stageStatements(16)[1]; !strings.Contains(s, "seq <= 63550") {
		t.Errorf("the staging insert does not take 16 MiB of rows: %s", s)
	}
}

func TestPaysBlockSortsComparisons(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r *results) string {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	// In the reports sample tmpfs's p99 is a third of the volume's in every run; in the sample
	// temp and mixed, tmpfs takes half the time and has half the throughput.
	block, err := paysBlock(dir, []string{write("a.json", reportsSample()), write("b.json", sample())})
	if err != nil {
		t.Fatal(err)
	}
	paid, notPaid, _ := strings.Cut(block, "**Where it did not**")
	if !strings.Contains(paid, "| MySQL 9.7.4 · gp3 volume · ") {
		t.Errorf("the reports run's setting is not in the first table:\n%s", block)
	}
	for _, want := range []string{"reports: sysbench p99 latency | 42.00 ms | volume: tmpdir on the data volume | 0.33x", "temp: time for all queries | 10.00 s | disk: tmpdir on the node's disk | 0.50x"} {
		if !strings.Contains(paid, want) {
			t.Errorf("the first table lacks %q:\n%s", want, paid)
		}
	}
	for _, want := range []string{"reports: sysbench transactions/s | 500.00 | volume: tmpdir on the data volume |", "| mixed: temporary-table queries/s |"} {
		if !strings.Contains(notPaid, want) {
			t.Errorf("the second table lacks %q:\n%s", want, notPaid)
		}
	}
	if !strings.Contains(block, "Drawn from `a.json`, `b.json`") {
		t.Errorf("the block does not name its files:\n%s", block)
	}
}
