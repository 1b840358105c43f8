package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// managerSettings are the manager flags a measurement runs with.
type managerSettings struct {
	// Name labels the settings in the report.
	Name string `json:"name"`
	// QPS and Burst are --kube-api-qps and --kube-api-burst; Workers is --max-concurrent-reconciles.
	QPS     float64 `json:"qps"`
	Burst   int     `json:"burst"`
	Workers int     `json:"workers"`
	// MaxInFlight is --max-in-flight; empty is 100%: every target at once.
	MaxInFlight string `json:"maxInFlight,omitempty"`
	// Commit is the commit of the checkout the manager was built from when it is not this tree
	// (-against).
	Commit string `json:"commit,omitempty"`
}

// runtimeEnv sets the Go runtime's garbage collection of the managers as -gomemlimit and -gogc
// say; none is set when they are empty.
func (cfg config) runtimeEnv() []string {
	var env []string
	if cfg.goMemLimit != "" {
		env = append(env, "GOMEMLIMIT="+cfg.goMemLimit)
	}
	if cfg.goGC != "" {
		env = append(env, "GOGC="+cfg.goGC)
	}
	return env
}

// inFull reports whether a level with s measures every phase (the steady state, the GitOps
// re-apply, one ScratchVolume per StatefulSet): the defaults do, this tree's or another commit's.
func (s managerSettings) inFull() bool {
	s.Name, s.Commit = defaultSettings.Name, ""
	return s == defaultSettings
}

func (s managerSettings) args() []string {
	// Most phases measure how fast the controller writes a fleet, not how fast a fleet rolls out:
	// every target at once, as before rollouts were paced.
	inFlight := cmp.Or(s.MaxInFlight, "100%")
	return []string{
		"--kube-api-qps=" + strconv.FormatFloat(s.QPS, 'f', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(s.Burst),
		"--max-concurrent-reconciles=" + strconv.Itoa(s.Workers),
		"--max-in-flight=" + inFlight,
	}
}

// launch is how a manager process is started, beyond the settings a report compares.
type launch struct {
	// kubeconfig is the manager's kubeconfig; empty is the cluster's admin.
	kubeconfig string
	// args are more flags, such as leader election's.
	args []string
}

// manager is a running manager binary, started beside the control plane as the admin.
type manager struct {
	proc        *localcluster.Process
	metricsAddr string
	// pprofAddr serves the manager's profiles.
	pprofAddr string
	settings  managerSettings
	// name names the manager's log and profile files.
	name string
}

// buildManager compiles the manager from the working tree into dir.
func buildManager(ctx context.Context, root, dir string) (string, error) {
	out := dir + "/manager"
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -o %s .: %w\n%s", out, err, b)
	}
	return out, nil
}

// startManager starts the manager with settings, informers that resync every resync and the Go
// runtime settings of runtimeEnv (config.runtimeEnv), and waits until it is ready.
func startManager(ctx context.Context, c *localcluster.Cluster, bin, name string, settings managerSettings, resync time.Duration, runtimeEnv []string, l launch) (*manager, error) {
	addrs, err := localcluster.FreeAddresses(3)
	if err != nil {
		return nil, err
	}
	args := append(settings.args(), "--metrics-bind-address="+addrs[0], "--health-probe-bind-address="+addrs[1],
		"--pprof-bind-address="+addrs[2], "--sync-period="+resync.String())
	args = append(args, l.args...)
	kubeconfig := c.KubeconfigEnv()
	if l.kubeconfig != "" {
		kubeconfig = "KUBECONFIG=" + l.kubeconfig
	}
	env := append([]string{kubeconfig}, runtimeEnv...)
	p, err := c.StartProcess(name, bin, args, env)
	if err != nil {
		return nil, err
	}
	m := &manager{proc: p, metricsAddr: addrs[0], pprofAddr: addrs[2], settings: settings, name: name}
	deadline := time.Now().Add(2 * time.Minute)
	for !localcluster.HTTPOK(ctx, http.DefaultClient, "http://"+addrs[1]+"/readyz") {
		if !p.Alive() || time.Now().After(deadline) {
			_ = p.Stop()
			return nil, fmt.Errorf("manager did not become ready; the end of %s:\n%s", p.Log, localcluster.Tail(p.Log, 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return m, nil
}

func (m *manager) stop() error { return m.proc.Stop() }

// waitWorkers waits until the manager's log says that the controller named controller started its
// workers, which it does once its informers have synced: a phase timed from then on does not time
// the manager's start.
func (m *manager) waitWorkers(ctx context.Context, controller string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		log, err := os.ReadFile(m.proc.Log)
		if err != nil {
			return fmt.Errorf("failed to read the manager's log: %w", err)
		}
		if workersStarted(log, controller) {
			return nil
		}
		if !m.proc.Alive() || time.Now().After(deadline) {
			return fmt.Errorf("the manager's %s controller did not start its workers; the end of %s:\n%s", controller, m.proc.Log, localcluster.Tail(m.proc.Log, 20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// workersStarted reports whether a JSON log (controller-runtime's, one entry a line) says that the
// controller named controller started its workers.
func workersStarted(log []byte, controller string) bool {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var entry struct {
			Msg        string `json:"msg"`
			Controller string `json:"controller"`
		}
		if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Msg == "Starting workers" && entry.Controller == controller {
			return true
		}
	}
	return false
}

// scrape reads the manager's metrics.
func (m *manager) scrape(ctx context.Context) (snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metricsAddr+"/metrics", http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to read the manager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	return parseMetrics(resp.Body)
}

// procStats are what the kernel says about a process.
type procStats struct {
	// RSSMiB is the resident set now, PeakRSSMiB its high-water mark since start.
	RSSMiB, PeakRSSMiB float64
	// CPUSeconds is user plus system time since start.
	CPUSeconds float64
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

func readProcStats(pid int) (procStats, error) {
	var s procStats
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kib, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			s.RSSMiB = kib / 1024
		case "VmHWM:":
			s.PeakRSSMiB = kib / 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name may hold spaces; the fields after it are fixed: utime and stime are the
	// 12th and 13th after the closing parenthesis.
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(rest) > 12 {
		ut, _ := strconv.ParseFloat(rest[11], 64)
		st, _ := strconv.ParseFloat(rest[12], 64)
		s.CPUSeconds = (ut + st) / clockTicks
	}
	return s, sc.Err()
}
