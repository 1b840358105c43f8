package main

import (
	"os"
	"path/filepath"
	"testing"
)

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
