//go:build tools

// Package tools pins the containerd commands built by hack/k8s-binaries.sh (the daemon, the runc
// shim and the ctr client) so that go mod tidy keeps everything they need in go.mod and go.sum.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
