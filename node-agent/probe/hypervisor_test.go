package probe

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFreePageReporting(t *testing.T) {
	root := t.TempDir()
	device := func(name, id, features string) {
		t.Helper()
		p := filepath.Join(root, "bus", "virtio", "devices", name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, content := range map[string]string{"device": id + "\n", "features": features + "\n"} {
			if err := os.WriteFile(filepath.Join(p, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if FreePageReporting(root) {
		t.Error("a machine without virtio devices was reported as reporting")
	}
	device("virtio0", "0x0002", "0010011001100100") // a block device: its bit 5 means something else
	if FreePageReporting(root) {
		t.Error("a block device's feature bit 5 was taken for free page reporting")
	}
	device("virtio1", "0x0005", "0110000000000000") // a balloon with statistics and deflate-on-OOM only
	if FreePageReporting(root) {
		t.Error("a balloon without VIRTIO_BALLOON_F_REPORTING was reported as reporting")
	}
	device("virtio2", "0x0005", "0110010100000000")
	if !FreePageReporting(root) {
		t.Error("a balloon with VIRTIO_BALLOON_F_REPORTING was not recognized")
	}
}
