package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBalloonReports(t *testing.T) {
	dir := t.TempDir()
	device := func(name, id, features string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, content := range map[string]string{"device": id + "\n", "features": features + "\n"} {
			if err := os.WriteFile(filepath.Join(p, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	device("virtio0", "0x0002", "0010001001100100") // a block device: bit 5 means something else
	if balloonReports(dir) {
		t.Error("a block device's feature bit 5 was taken for free page reporting")
	}
	device("virtio1", "0x0005", "0110000000000000") // a balloon with stats and deflate-on-OOM only
	if balloonReports(dir) {
		t.Error("a balloon without VIRTIO_BALLOON_F_REPORTING was reported as reporting")
	}
	device("virtio2", "0x0005", "0110010100000000")
	if !balloonReports(dir) {
		t.Error("a balloon with VIRTIO_BALLOON_F_REPORTING was not recognized")
	}
	if balloonReports(filepath.Join(dir, "missing")) {
		t.Error("a machine without virtio devices was reported as reporting")
	}
}

func TestWarmMemory(t *testing.T) {
	if err := warmMemory(0); err != nil {
		t.Errorf("warmMemory(0) = %v, want nothing done", err)
	}
	if err := warmMemory(8 << 20); err != nil {
		t.Errorf("warmMemory(8 MiB) = %v", err)
	}
	if d := defaultWarm(); d <= 0 || d > 4<<30 {
		t.Errorf("defaultWarm() = %d, want in (0, 4 GiB]", d)
	}
}

func TestBuddyOrders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "buddyinfo")
	content := "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n" +
		"Node 0, zone   Normal  12385   9804  10371   6672   3836   2167   3373   2846   1678   1442   2720 \n"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := buddyOrders(p); err != nil || n != 11 {
		t.Errorf("buddyOrders = %d, %v; want 11 orders (0 to 10)", n, err)
	}
	if err := os.WriteFile(p, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := buddyOrders(p); err == nil {
		t.Error("a buddyinfo without zones was accepted")
	}
}
