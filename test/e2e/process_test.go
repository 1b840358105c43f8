package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// process is the manager or the node agent, with the loopback addresses of its endpoints.
type process struct {
	*localcluster.Process
	metricsAddr, healthAddr string
}

// startManager starts a manager process with leader election on, as a Deployment runs it. Each
// start gets its own log file.
func (s *suite) startManager(ctx context.Context) error {
	s.mu.Lock()
	s.managerStarts++
	name := "manager"
	if s.managerStarts > 1 {
		name = fmt.Sprintf("manager-%d", s.managerStarts)
	}
	s.mu.Unlock()
	// The manager finds its kubeconfig the way controller-runtime programs do: $KUBECONFIG.
	p, err := s.start(ctx, name, s.binary("manager"),
		[]string{"--leader-elect", "--leader-election-namespace=" + systemNamespace},
		[]string{"KUBECONFIG=" + s.manager.kubeconfig})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.managerProc = p
	s.mu.Unlock()
	return nil
}

// startAgent starts `node-agent run` for one fake node, probing a directory on tmpfs and one on this
// machine's disk with runs small enough to finish in about a second. Its kubelet root is on tmpfs
// too: no kubelet mounts the fake node's volumes, so a test that wants a pod's RAM volume sampled
// creates the volume's directory there (kubeletVolumeDir).
func (s *suite) startAgent(ctx context.Context) error {
	shm, err := os.MkdirTemp("/dev/shm", "dbtune-e2e-")
	if err != nil {
		// Without /dev/shm the probe still runs; the tmpfs target is just not on tmpfs.
		shm = filepath.Join(s.dir, "shm")
	} else {
		s.tmpfsDir = shm
	}
	tmpfs, disk := filepath.Join(shm, "probe"), filepath.Join(s.dir, "disk")
	s.kubeletRoot = filepath.Join(shm, "kubelet")
	for _, d := range []string{tmpfs, disk, s.kubeletRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	args := []string{"run",
		"--kubeconfig=" + s.agent.kubeconfig, "--node-name=" + agentNode, "--lease-namespace=" + systemNamespace,
		"--target=tmpfs=" + tmpfs, "--target=disk=" + disk,
		// Read-ahead needs a block device to tune; the loop-device tests of node-agent/readahead
		// cover it.
		"--read-ahead=false", "--read-ahead-state-dir=" + filepath.Join(s.dir, "read-ahead"),
		"--kubelet-root=" + s.kubeletRoot,
		"--seq-write-bytes=8Mi", "--seq-write-block-bytes=1Mi",
		"--direct-write-bytes=4Mi", "--direct-write-block-bytes=1Mi",
		"--churn=5000:200", "--churn=1M:4", "--temp-files=1Mi:4", "--fsync-samples=100", "--probe-timeout=30s",
	}
	p, err := s.start(ctx, "node-agent", s.binary("node-agent"), args, nil)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.agentProc = p
	s.mu.Unlock()
	return nil
}

// start runs a controller-runtime program beside the control plane with its metrics and health
// endpoints on loopback ports (their defaults listen on every address), and waits until it is ready.
func (s *suite) start(ctx context.Context, name, path string, args, env []string) (*process, error) {
	addrs, err := localcluster.FreeAddresses(2)
	if err != nil {
		return nil, err
	}
	args = append(args, "--metrics-bind-address="+addrs[0], "--health-probe-bind-address="+addrs[1])
	lp, err := s.cluster.StartProcess(name, path, args, env)
	if err != nil {
		return nil, err
	}
	s.logs.add(lp.Log)
	p := &process{Process: lp, metricsAddr: addrs[0], healthAddr: addrs[1]}
	if err := p.waitReady(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if !p.Alive() {
			return fmt.Errorf("%s exited; the end of %s:\n%s", p.Name, p.Log, localcluster.Tail(p.Log, 20))
		}
		if httpOK(ctx, http.DefaultClient, "http://"+p.healthAddr+"/readyz") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become ready: %w; the end of %s:\n%s", p.Name, ctx.Err(), p.Log, localcluster.Tail(p.Log, 20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *suite) currentManager() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.managerProc
}

// killManager kills the manager with SIGKILL: no deferred function, no lease release, no flush.
func (s *suite) killManager(t *testing.T) {
	t.Helper()
	p := s.currentManager()
	if err := syscall.Kill(-p.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("failed to kill %s (pid %d): %v", p.Name, p.PID, err)
	}
	if !waitGone(p.Process, 10*time.Second) {
		t.Fatalf("%s (pid %d) still runs after SIGKILL", p.Name, p.PID)
	}
}

func waitGone(p *localcluster.Process, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for p.Alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// statefulSetWrites reads the manager's own count of its StatefulSet writes from its metrics
// endpoint, summed over the kinds of change.
func (p *process) statefulSetWrites(t *testing.T) int {
	t.Helper()
	const metric = "dbtune_scratch_statefulset_writes_total"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+p.metricsAddr+"/metrics", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("failed to read the metrics of %s: %v", p.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	total := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("unreadable metric line %q: %v", line, err)
		}
		total += int(v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// restartAPIServer stops kube-apiserver and starts it again with the command line it ran with, and
// returns how long the API was unreachable. localcluster has no restart of its own; the command line
// comes from /proc.
func (s *suite) restartAPIServer(t *testing.T) time.Duration {
	t.Helper()
	old := s.apiServer(t)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", old.PID))
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	mark := s.logs.mark()
	start := time.Now()
	// On SIGTERM the API server closes its port at once but holds open watches for up to a minute;
	// a supervisor with a short grace period kills it, which also cuts the watches.
	_ = syscall.Kill(-old.PID, syscall.SIGTERM)
	if !waitGone(&old, 2*time.Second) {
		_ = syscall.Kill(-old.PID, syscall.SIGKILL)
		if !waitGone(&old, 10*time.Second) {
			t.Fatalf("%s (pid %d) still runs after SIGKILL", old.Name, old.PID)
		}
	}
	s.mu.Lock()
	s.apiServerStarts++
	name := fmt.Sprintf("kube-apiserver-%d", s.apiServerStarts+1)
	s.mu.Unlock()
	p, err := s.cluster.StartProcess(name, argv[0], argv[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	s.waitAPIServerReady(t, p)
	downtime := time.Since(start)
	// A starting API server refuses requests until its RBAC caches are filled, then allows them:
	// refusals from that window say nothing about the roles. A missing permission keeps being
	// refused, by the retries, after it.
	time.Sleep(time.Second)
	s.logs.exempt(mark)
	return downtime
}

// apiServer returns the running kube-apiserver process.
func (s *suite) apiServer(t *testing.T) localcluster.Process {
	t.Helper()
	for _, p := range s.cluster.Processes() {
		if strings.HasPrefix(p.Name, "kube-apiserver") && p.Alive() {
			return p
		}
	}
	t.Fatal("no kube-apiserver process is running")
	return localcluster.Process{}
}

func (s *suite) waitAPIServerReady(t *testing.T, p *localcluster.Process) {
	t.Helper()
	cfg := s.cluster.Config()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !httpOK(t.Context(), hc, cfg.Host+"/readyz") {
		if !p.Alive() {
			t.Fatalf("%s exited; the end of %s:\n%s", p.Name, p.Log, localcluster.Tail(p.Log, 20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become ready within a minute; the end of %s:\n%s", p.Name, p.Log, localcluster.Tail(p.Log, 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httpOK(ctx context.Context, hc *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// logScanner finds the log lines of the operator's processes that report a refused request. Each line
// is reported once, to the first test that looks after it was written.
type logScanner struct {
	mu      sync.Mutex
	files   []string
	offsets map[string]int64
	// exempted holds byte ranges per file where refusals are expected.
	exempted map[string][]span
}

type span struct{ from, to int64 }

func newLogScanner() *logScanner {
	return &logScanner{offsets: map[string]int64{}, exempted: map[string][]span{}}
}

func (l *logScanner) add(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.files = append(l.files, path)
}

// mark returns the current size of every log, the start of a later exempt range.
func (l *logScanner) mark() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	sizes := map[string]int64{}
	for _, f := range l.files {
		if st, err := os.Stat(f); err == nil {
			sizes[f] = st.Size()
		}
	}
	return sizes
}

// exempt excuses what the logs gained since mark.
func (l *logScanner) exempt(mark map[string]int64) {
	now := l.mark()
	l.mu.Lock()
	defer l.mu.Unlock()
	for f, from := range mark {
		l.exempted[f] = append(l.exempted[f], span{from: from, to: now[f]})
	}
}

// scan returns the new complete lines that mention "forbidden", prefixed with their file's name.
// Lines inside an exempt range are left out.
func (l *logScanner) scan() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var found []string
	for _, path := range l.files {
		lines, end := readLines(path, l.offsets[path])
		for _, ln := range lines {
			if !strings.Contains(strings.ToLower(ln.text), "forbidden") || quotesAnotherRefusal(ln.text) || l.excused(path, ln.offset) {
				continue
			}
			found = append(found, filepath.Base(path)+": "+summarize(ln.text))
		}
		l.offsets[path] = end
	}
	return found
}

// quotesAnotherRefusal reports whether a log line is the manager's report of pods the API server
// refused to create for the StatefulSet controller: it quotes that refusal, not one of its own.
func quotesAnotherRefusal(line string) bool {
	return strings.Contains(line, "Found the pods of a StatefulSet's injected revision refused")
}

func (l *logScanner) excused(path string, offset int64) bool {
	for _, sp := range l.exempted[path] {
		if offset >= sp.from && offset < sp.to {
			return true
		}
	}
	return false
}

// summarize shortens a JSON log line to its message and error, leaving out the stack trace.
func summarize(line string) string {
	var entry struct {
		Msg   string `json:"msg"`
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(line), &entry) != nil || entry.Msg == "" {
		return line
	}
	if entry.Error == "" {
		return entry.Msg
	}
	return entry.Msg + ": " + entry.Error
}

type logLine struct {
	offset int64
	text   string
}

// readLines reads the complete lines of path from offset on, and returns the offset after the last.
func readLines(path string, offset int64) ([]logLine, int64) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, offset
	}
	var lines []logLine
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return lines, offset
		}
		lines = append(lines, logLine{offset: offset, text: string(data[:i])})
		offset += int64(i + 1)
		data = data[i+1:]
	}
}
