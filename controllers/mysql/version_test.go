package mysql

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr string
	}{
		{in: "8", want: Version{Major: 8}},
		{in: "8.0", want: Version{Major: 8, MinorGiven: true}},
		{in: "8.0.36", want: Version{Major: 8, Patch: 36, MinorGiven: true, PatchGiven: true}},
		{in: "10.11.6", want: Version{Major: 10, Minor: 11, Patch: 6, MinorGiven: true, PatchGiven: true}},
		{in: "", wantErr: `invalid version "": component "" is not a number`},
		{in: "8.", wantErr: `invalid version "8.": component "" is not a number`},
		{in: "8.0.36.1", wantErr: `invalid version "8.0.36.1": want MAJOR.MINOR or MAJOR.MINOR.PATCH`},
		{in: "-8", wantErr: `invalid version "-8": component "-8" is not a number`},
		{in: "8.0.99999", wantErr: `invalid version "8.0.99999": component "99999" is out of range`},
	}
	for _, tt := range tests {
		got, err := ParseVersion(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseVersion(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseVersion(%q) failed: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseVersion(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
		if got.String() != tt.in {
			t.Errorf("ParseVersion(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestVersionFromTag(t *testing.T) {
	tests := []struct {
		tag    string
		want   string
		wantOK bool
	}{
		{"", "latest", true},
		{"latest", "latest", true},
		{"lts-oracle", "latest", true},
		{"innovation", "latest", true},
		{"noble", "latest", true},
		{"8.0", "8.0", true},
		{"8.0-debian", "8.0", true},
		{"10.11.6-jammy", "10.11.6", true},
		{"8.0.36-debian-12-r8", "8.0.36", true},
		{"8.0.35-27", "8.0.35", true},
		{"5.7.44-31.65", "5.7.44", true},
		{"v8.0.36", "8.0.36", true},
		{"8.0.36_hotfix", "8.0.36", true},
		{"stable", "", false},
		{"8.0.36.1", "", false},
		{"v", "", false},
		{"sha-1a2b3c", "", false},
	}
	for _, tt := range tests {
		got, ok := versionFromTag(tt.tag)
		if ok != tt.wantOK || (ok && got.String() != tt.want) {
			t.Errorf("versionFromTag(%q) = %q, %v; want %q, %v", tt.tag, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	tests := []struct {
		v                   string
		major, minor, patch int
		want                bool
	}{
		{"8.0.26", 8, 0, 26, true},
		{"8.0.25", 8, 0, 26, false},
		{"8.0", 8, 0, 26, true},
		{"8", 8, 0, 26, true},
		{"8.4", 8, 0, 26, true},
		{"9.0.0", 8, 0, 26, true},
		{"5.7", 8, 0, 0, false},
		{"5", 8, 0, 0, false},
		{"5", 5, 6, 3, true},
		{"5.6.2", 5, 6, 3, false},
		{"10.1.48", 10, 2, 1, false},
		{"10.2.0", 10, 2, 1, false},
		{"10.2", 10, 2, 1, true},
		{"11.4", 10, 2, 1, true},
		{"latest", 99, 99, 99, true},
	}
	for _, tt := range tests {
		v := ver(t, tt.v)
		if got := v.AtLeast(tt.major, tt.minor, tt.patch); got != tt.want {
			t.Errorf("%s.AtLeast(%d, %d, %d) = %v, want %v", tt.v, tt.major, tt.minor, tt.patch, got, tt.want)
		}
	}
}
