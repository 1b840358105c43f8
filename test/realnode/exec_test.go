//go:build realnode

package realnode_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// assertThroughKubelet reads the pod's log and runs a command in its container through the API
// server, which reaches the kubelet with its client certificate: what kubectl logs and exec do. The
// command reads the container's own mount table, which must agree with what the host saw.
func assertThroughKubelet(ctx context.Context, t *testing.T, cfg *rest.Config, pod *corev1.Pod, wantKiB int64) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Running says the container's process started, not that its first line reached the log file
	// the kubelet serves: the line is waited for.
	var logs []byte
	waitFor(t, 30*time.Second, "the pod's log saying started", func() (bool, string) {
		var err error
		if logs, err = cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil {
			return false, "reading it through the API server: " + err.Error()
		}
		return strings.Contains(string(logs), "started"), fmt.Sprintf("the log is %q", logs)
	})
	out, err := execInPod(ctx, cfg, cs, pod, "grep", " "+scratchPath+" ", "/proc/mounts")
	if err != nil {
		t.Fatalf("failed to exec in the pod through the API server: %v", err)
	}
	if want := fmt.Sprintf("size=%dk", wantKiB); !strings.Contains(out, "tmpfs") || !strings.Contains(out, want) {
		t.Errorf("inside the container %s is %q, want a tmpfs with %s", scratchPath, strings.TrimSpace(out), want)
	}
	t.Logf("through the API server: log %q, exec: %s", strings.TrimSpace(string(logs)), strings.TrimSpace(out))
}

// execInPod runs a command in the pod's first container as kubectl exec does: over WebSocket,
// falling back to SPDY when the server cannot upgrade.
func execInPod(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, pod *corev1.Pod, command ...string) (string, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: pod.Spec.Containers[0].Name, Command: command, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return "", fmt.Errorf("%w (stderr: %s)", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
