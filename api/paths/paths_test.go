package paths

import "testing"

func TestWithin(t *testing.T) {
	tests := []struct {
		p, dir string
		want   bool
	}{
		{"/var/lib/mysql", "/var/lib/mysql", true},
		{"/var/lib/mysql/tmp", "/var/lib/mysql", true},
		{"/var/lib/mysql/tmp", "/var/lib/mysql/", true},
		{"/var/lib/mysql", "/var/lib/mysql/", true},
		{"/var/lib/mysql-old", "/var/lib/mysql", false},
		{"/var/lib", "/var/lib/mysql", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"/var/lib/mysql", "", false},
		{"", "", false},
		{"relative", "/", false},
	}
	for _, tt := range tests {
		if got := Within(tt.p, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q) = %t, want %t", tt.p, tt.dir, got, tt.want)
		}
	}
}
