package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// pauseTag names the pause image. The registry is localhost so that no runtime ever tries to pull
// it from the network: it only exists where it was imported. test/realnode pins this name as
// containerd's sandbox image and runs its test pods from it.
const pauseTag = "localhost/dbtune/pause:busybox"

// pauseApplets are the busybox applets linked in /bin: sleep for the sandbox and the test pods, a
// shell and the few tools that tests and kubectl exec use to look around inside a container.
var pauseApplets = []string{
	"cat", "df", "echo", "env", "false", "grep", "head", "id", "ls", "mkdir", "mount", "ps", "rm",
	"sh", "sleep", "stat", "tail", "test", "touch", "true", "wc",
}

// buildPause writes <out>/pause.tar: one layer holding a static busybox and its applet links, whose
// default command sleeps forever, which is all a pod sandbox's container has to do. It is built for
// this machine's architecture, the busybox's own.
func buildPause(o *options, busybox string) error {
	contents, err := readStatic(busybox)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(pauseTag)
	if err != nil {
		return err
	}
	entries := []entry{
		{path: "bin/", mode: 0o755, dir: true},
		{path: "bin/busybox", mode: 0o755, contents: contents},
		{path: "tmp/", mode: 0o1777, dir: true},
	}
	for _, applet := range pauseApplets {
		entries = append(entries, entry{path: "bin/" + applet, mode: 0o777, link: "busybox"})
	}
	layer, err := newLayer(entries, o.created)
	if err != nil {
		return err
	}
	// busybox's sleep takes "inf" for forever; pods override the command with their own.
	img, err := localImage(o, v1.Config{
		Entrypoint: []string{"/bin/sleep", "inf"},
		WorkingDir: "/",
		Env:        []string{"PATH=/bin"},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "pause",
			"org.opencontainers.image.description": "busybox that sleeps forever: the sandbox and test image of a local test node",
			"org.opencontainers.image.source":      sourceURL,
		},
	}, mutate.Addendum{Layer: layer, History: history(o.created, "busybox from "+busybox)})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	return writeTarball(filepath.Join(o.out, "pause.tar"), tag, img)
}

// readStatic reads a program that must run in an empty image: a dynamically linked busybox would
// fail there at exec time with a "no such file" that names neither the loader nor the cause.
func readStatic(path string) ([]byte, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not a program (install busybox-static): %w", path, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, errors.New(path + " is dynamically linked; install Debian's busybox-static, whose /bin/busybox is static")
		}
	}
	return os.ReadFile(path)
}
