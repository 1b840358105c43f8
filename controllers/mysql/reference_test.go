package mysql

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseImageRef(t *testing.T) {
	tests := []struct {
		in   string
		want ImageRef
	}{
		{"mysql", ImageRef{Domain: "docker.io", Path: "library/mysql"}},
		{"mysql:8.0", ImageRef{Domain: "docker.io", Path: "library/mysql", Tag: "8.0"}},
		{"bitnami/mysql:8.0", ImageRef{Domain: "docker.io", Path: "bitnami/mysql", Tag: "8.0"}},
		{"docker.io/mysql:8.0", ImageRef{Domain: "docker.io", Path: "library/mysql", Tag: "8.0"}},
		{"index.docker.io/library/mysql", ImageRef{Domain: "docker.io", Path: "library/mysql"}},
		{"registry.example.com:5000/db/mysql:8.0.36",
			ImageRef{Domain: "registry.example.com:5000", Path: "db/mysql", Tag: "8.0.36"}},
		{"registry.example.com:5000/db/mysql",
			ImageRef{Domain: "registry.example.com:5000", Path: "db/mysql"}},
		{"localhost/mysql:5.7", ImageRef{Domain: "localhost", Path: "mysql", Tag: "5.7"}},
		{"localhost:5000/mysql", ImageRef{Domain: "localhost:5000", Path: "mysql"}},
		{"[::1]:5000/mysql:8.0", ImageRef{Domain: "[::1]:5000", Path: "mysql", Tag: "8.0"}},
		{"Registry/mysql", ImageRef{Domain: "Registry", Path: "mysql"}},
		{"mysql@" + testDigest, ImageRef{Domain: "docker.io", Path: "library/mysql", Digest: testDigest}},
		{"mysql:8.0@" + testDigest,
			ImageRef{Domain: "docker.io", Path: "library/mysql", Tag: "8.0", Digest: testDigest}},
		{"container-registry.oracle.com/mysql/community-server:8.0",
			ImageRef{Domain: "container-registry.oracle.com", Path: "mysql/community-server", Tag: "8.0"}},
		{"a/b__c/d-e.f_g:T_a-g.1", ImageRef{Domain: "docker.io", Path: "a/b__c/d-e.f_g", Tag: "T_a-g.1"}},
	}
	for _, tt := range tests {
		got, err := ParseImageRef(tt.in)
		if err != nil {
			t.Errorf("ParseImageRef(%q) failed: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseImageRef(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseImageRefErrors(t *testing.T) {
	const rule = " (lower-case letters, digits and separators only)"
	tests := []struct {
		in, want string
	}{
		{"", `invalid image reference "": malformed repository path element ""` + rule},
		{"MySQL", `invalid image reference "MySQL": malformed repository path element "MySQL"` + rule},
		{"mysql:", `invalid image reference "mysql:": malformed tag ""`},
		{"mysql:-x", `invalid image reference "mysql:-x": malformed tag "-x"`},
		{"mysql@sha256:abc", `invalid image reference "mysql@sha256:abc": malformed digest "sha256:abc"`},
		{"reg.io//mysql", `invalid image reference "reg.io//mysql": malformed repository path element ""` + rule},
		{"-reg.io/mysql", `invalid image reference "-reg.io/mysql": malformed registry host "-reg.io"`},
		{"mysql/", `invalid image reference "mysql/": malformed repository path element ""` + rule},
		{"my_-sql", `invalid image reference "my_-sql": malformed repository path element "my_-sql"` + rule},
		{strings.Repeat("a", 250) + "/mysql", `invalid image reference "` + strings.Repeat("a", 250) +
			`/mysql": repository path longer than 255 characters`},
	}
	for _, tt := range tests {
		_, err := ParseImageRef(tt.in)
		if err == nil {
			t.Errorf("ParseImageRef(%q) succeeded, want error", tt.in)
			continue
		}
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("ParseImageRef(%q) error mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

// FuzzParseImageRef checks that parsing never panics, that whatever parses prints back to a
// reference that parses to the same thing, and that classification copes with any input.
func FuzzParseImageRef(f *testing.F) {
	for _, s := range []string{
		"mysql", "mysql:8.0", "mariadb:10.11.6-jammy", "bitnami/mariadb-galera:11.4",
		"registry.example.com:5000/db/mysql:8.0.36", "mysql:8.0@" + testDigest, "[::1]:5000/x",
		"localhost:5000", "index.docker.io/x", "Registry/y:Z", "a@b:c", "::", "@", "/", "a//b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = IsDatabaseImage(s)
		_, _ = Detect(s, nil)
		ref, err := ParseImageRef(s)
		if err != nil {
			return
		}
		printed := ref.String()
		again, err := ParseImageRef(printed)
		if err != nil {
			t.Fatalf("ParseImageRef(%q) = %+v, but its String %q does not parse: %v", s, ref, printed, err)
		}
		if again != ref {
			t.Fatalf("round trip of %q changed %+v into %+v", s, ref, again)
		}
		if again.String() != printed {
			t.Fatalf("String is not stable: %q then %q", printed, again.String())
		}
	})
}
