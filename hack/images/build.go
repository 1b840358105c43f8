package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// compile builds one binary for one platform into dir and returns its path. CGO is off so the
// binary is static and runs on an empty base; -trimpath and -buildvcs=false keep build paths and
// the checkout's state out of it, so that the same sources give the same bytes (the version and
// the revision -revision names go in with -X, and into the image's labels); the symbol tables go
// (-s -w), while the stack traces panics print still carry function names and lines. The compiler
// writes no DWARF the link would drop: the Makefile's configuration, so the packages compile once.
func compile(ctx context.Context, o *options, b binary, repo, dir string, p platform) (string, error) {
	out := filepath.Join(dir, fmt.Sprintf("%s-%s-%s", b.name, p.os, p.arch))
	ldflags := "-s -w -X main.version=" + o.version + " -X main.revision=" + o.revision
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-gcflags=all=-dwarf=false", "-ldflags", ldflags, "-o", out, b.pkg)
	cmd.Dir = repo
	cmd.Env = append(buildEnv(os.Environ()), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch, "GOWORK=off")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "images: building %s for %s\n", b.pkg, p)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s for %s: %w", b.pkg, p, err)
	}
	return out, nil
}

// buildEnv drops what would change the build's target from the caller's environment: the
// platform and cgo settings are the image's, whatever the shell exported.
func buildEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch key, _, _ := strings.Cut(kv, "="); key {
		case "GOOS", "GOARCH", "CGO_ENABLED", "GOWORK", "GOARM", "GOAMD64", "GOARM64":
		default:
			out = append(out, kv)
		}
	}
	return out
}
