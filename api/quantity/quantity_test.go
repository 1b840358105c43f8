package quantity

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExact(t *testing.T) {
	sum := resource.MustParse("512Mi")
	sum.Add(resource.MustParse("256Mi"))
	milli := resource.MustParse("805306368512m")
	huge := resource.MustParse("8E")
	huge.Add(resource.MustParse("8E"))
	for _, tt := range []struct {
		q    resource.Quantity
		want string
	}{
		{sum, "768Mi"},
		{resource.MustParse("2G"), "2G"},
		{resource.MustParse("2000M"), "2G"},
		{resource.MustParse("1.5Gi"), "1536Mi"},
		{milli, "805306369"},
		{resource.MustParse("512m"), "1"},
		{huge, "more than 8Ei"},
	} {
		if got := Exact(tt.q); got != tt.want {
			t.Errorf("Exact(%s) = %q, want %q", tt.q.String(), got, tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		5000: "5k", 5_000_000: "5M", 512 << 10: "512Ki", 128 << 20: "128Mi", 2 << 30: "2Gi", 1500 << 20: "1500Mi", 2300: "2300",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestApprox(t *testing.T) {
	for n, want := range map[int64]string{0: "0Ki", 1000: "1Ki", 300 * mi: "300Mi", 300*mi + 1: "301Mi", 1024 * mi: "1Gi", 1536 * mi: "1.5Gi", 64 << 30: "64Gi"} {
		if got := Approx(n); got != want {
			t.Errorf("Approx(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSpaced(t *testing.T) {
	for n, want := range map[int64]string{
		5000: "5000 B", 5_000_000: "5 MB", 512 << 10: "512 KiB", 128 << 20: "128 MiB", 2 << 30: "2 GiB", 1500 << 20: "1500 MiB", 2300: "2300 B",
	} {
		if got := Spaced(n); got != want {
			t.Errorf("Spaced(%d) = %q, want %q", n, got, want)
		}
	}
}
