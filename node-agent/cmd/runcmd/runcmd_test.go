package runcmd

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/cmd/cli"
	"github.com/dbtune/scratch-operator/node-agent/probe"
	"github.com/dbtune/scratch-operator/node-agent/probectl"
	"github.com/dbtune/scratch-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, o *options)
		wantErr string
	}{{
		name: "node and lease namespace from the downward API, device to the disk target",
		args: []string{"--target", "tmpfs=/probe/tmpfs", "--target", "disk=/probe/disk", "--device", "/dev/vda",
			"--churn", "5000:10", "--temp-files", "8Mi:5", "--probe-timeout", "30s", "--seq-write-bytes", "64Mi"},
		env: map[string]string{envNodeName: "worker-1", envPodNamespace: "dbtune"},
		check: func(t *testing.T, o *options) {
			want := []probe.Target{{Name: "tmpfs", Path: "/probe/tmpfs"}, {Name: "disk", Path: "/probe/disk", Device: "/dev/vda"}}
			if diff := cmp.Diff(want, o.cfg.Targets); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
			c := o.cfg
			if c.NodeName != "worker-1" || c.LeaseNamespace != "dbtune" || c.Period != probectl.DefaultPeriod || c.MaxProbingNodes != 1 ||
				c.MetricsAddr != ":8080" || c.HealthProbeAddr != ":8081" {
				t.Errorf("config = %+v", c)
			}
			if diff := cmp.Diff([]probe.ChurnSize{{FileBytes: 5000, Files: 10}}, c.Options.Churn); diff != "" {
				t.Errorf("churn (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]probe.TempFileSize{{FileBytes: 8 << 20, Files: 5}}, c.Options.TempFiles); diff != "" {
				t.Errorf("temporary files (-want +got):\n%s", diff)
			}
			if c.Options.MaxDuration != 30*time.Second || c.Options.SeqWriteBytes != 64*probe.MiB || c.Options.FsyncSamples != probe.DefaultOptions().FsyncSamples {
				t.Errorf("probe options = %+v", c.Options)
			}
		},
	}, {
		name: "flags win over the environment",
		args: []string{"--node-name", "worker-2", "--target", "/probe/disk", "--lease-namespace", "other",
			"--max-probing-nodes", "3", "--period", "1h", "--metrics-bind-address", "0"},
		env: map[string]string{envNodeName: "worker-1", envPodNamespace: "dbtune"},
		check: func(t *testing.T, o *options) {
			c := o.cfg
			if c.NodeName != "worker-2" || c.LeaseNamespace != "other" || c.MaxProbingNodes != 3 || c.Period != time.Hour || c.MetricsAddr != "0" {
				t.Errorf("config = %+v", c)
			}
		},
	}, {
		name:    "no node name",
		args:    []string{"--target", "/probe/disk"},
		wantErr: "no node name: give --node-name or set NODE_NAME",
	}, {
		name:    "no target",
		args:    []string{"--node-name", "n"},
		wantErr: "no target",
	}, {
		name:    "device for a target that is not there",
		args:    []string{"--node-name", "n", "--target", "a=/a", "--target", "b=/b", "--device", "/dev/vda"},
		wantErr: `needs a disk target to go with`,
	}, {
		name:    "zero slots",
		args:    []string{"--node-name", "n", "--target", "/a", "--max-probing-nodes", "0"},
		wantErr: "--max-probing-nodes must be at least 1",
	}, {
		name:    "bad size",
		args:    []string{"--node-name", "n", "--target", "/a", "--seq-write-bytes", "lots"},
		wantErr: `"lots" is not a size`,
	}, {
		name:    "unknown flag",
		args:    []string{"--node-name", "n", "--target", "/a", "--frobnicate"},
		wantErr: "flag provided but not defined: -frobnicate",
	}, {
		name:    "stray argument",
		args:    []string{"--node-name", "n", "/a"},
		wantErr: `unexpected argument "/a"`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseArgs(tc.args, io.Discard, envOf(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

// TestRunRejectsBadConfigurationBeforeConnecting: a bad configuration exits 2 with every problem,
// without looking for an API server.
func TestRunRejectsBadConfigurationBeforeConnecting(t *testing.T) {
	var stderr bytes.Buffer
	code := Run(context.Background(), []string{"--node-name", "Not_A_Node", "--target", "relative/dir", "--period", "10s",
		"--kubeconfig", "/nonexistent"}, io.Discard, &stderr)
	if code != cli.ExitBadUsage {
		t.Errorf("exit code %d, want %d", code, cli.ExitBadUsage)
	}
	for _, want := range []string{`node name "Not_A_Node" is not a valid object name`, `target path "relative/dir" is not absolute`,
		"the period must be at least 1m"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func httpGet(url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// ranAgainstAPIServer makes TestRunAgainstAPIServer run once per process (go test -count=N):
// controller names are unique process-wide, as a DaemonSet process has one agent.
var ranAgainstAPIServer bool

// TestRunAgainstAPIServer runs the command as a DaemonSet would, against a real API server.
func TestRunAgainstAPIServer(t *testing.T) {
	e := testenv.Require(t, env)
	if ranAgainstAPIServer {
		t.Skip("runs once per process: a process holds one agent, whose controller name is process-wide")
	}
	ranAgainstAPIServer = true
	ctx := context.Background()
	user, err := e.Environment().AddUser(envtest.User{Name: "node-agent", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "runcmd-test-"}}
	if err := e.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	disk := t.TempDir()
	metricsPort, healthPort := freePort(t), freePort(t)
	args := []string{"--kubeconfig", kubeconfigPath, "--target", "disk=" + disk, "--lease-namespace", e.Namespace(t),
		"--read-ahead-state-dir", t.TempDir(),
		"--metrics-bind-address", "127.0.0.1:" + metricsPort, "--health-probe-bind-address", "127.0.0.1:" + healthPort,
		"--seq-write-bytes", "4Mi", "--seq-write-block-bytes", "1Mi", "--direct-write-bytes", "1Mi", "--direct-write-block-bytes", "256Ki",
		"--churn", "5000:20", "--temp-files", "1Mi:4", "--fsync-samples", "10", "--zap-log-level", "error"}
	t.Setenv(envNodeName, node.Name)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() { exited <- Run(runCtx, args, io.Discard, &stderr) }()

	deadline := time.Now().Add(20 * time.Second)
	for {
		p := &v1alpha1.NodeIOProfile{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: node.Name}, p)
		if err == nil && meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionProbed) {
			break
		}
		select {
		case code := <-exited:
			t.Fatalf("node-agent run exited with %d:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("NodeIOProfile %s not probed within 20s (last error %v):\n%s", node.Name, err, stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for range 3 { // scrapes read the last run; they never start one
		code, body, err := httpGet("http://127.0.0.1:" + metricsPort + "/metrics")
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET /metrics: %d %v", code, err)
		}
		if !strings.Contains(body, `dbtune_node_probe_runs_total{result="success"} 1`) ||
			!strings.Contains(body, `dbtune_node_probe_write_bytes_per_second{device=`) ||
			!strings.Contains(body, `dbtune_node_probe_temp_file_bytes_per_second{device=`) {
			t.Fatalf("/metrics lacks the run's figures:\n%s", body)
		}
	}
	if code, _, err := httpGet("http://127.0.0.1:" + healthPort + "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("GET /healthz: %d %v", code, err)
	}
	cancel()
	select {
	case code := <-exited:
		if code != cli.ExitOK {
			t.Errorf("exit code %d after a clean stop:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node-agent run did not stop")
	}
}
