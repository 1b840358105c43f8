package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// MountTmpfs mounts a fresh tmpfs of the given size (a tmpfs size= value, such as 64m) with flags,
// and unmounts it when the test ends. Without root it skips, or fails when Strict.
func MountTmpfs(t testing.TB, size string, flags uintptr) string {
	t.Helper()
	RequireRoot(t, "mount a tmpfs")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size="+size); err != nil {
		SkipOrFail(t, "needs CAP_SYS_ADMIN to mount a tmpfs (%v): run as root, as CI does", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("failed to unmount the test tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// AdminKubeconfig adds a user named name in system:masters to the API server and writes its
// kubeconfig, for tests that run kubectl or another process as a user would.
func (e *Env) AdminKubeconfig(t testing.TB, name string) string {
	t.Helper()
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("failed to add user %s: %v", name, err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("failed to write a kubeconfig for %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kubectl returns the kubectl built beside kube-apiserver, or skips (fails when Strict) without it.
func Kubectl(t testing.TB) string {
	t.Helper()
	kubectl := filepath.Join(os.Getenv(AssetsEnv), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		SkipOrFail(t, "kubectl not found in %s: run `make k8s-binaries`", os.Getenv(AssetsEnv))
	}
	return kubectl
}
