//go:build tools

// Package tools pins the kwok command built by hack/k8s-binaries.sh so that
// go mod tidy keeps everything it needs in go.mod and go.sum.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
