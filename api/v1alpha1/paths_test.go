package v1alpha1

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestPathRuleMatchesTheCRD reads the character rule of the path fields out of the generated
// CRDs and checks that it refuses exactly what IsSafePath refuses, character by character.
func TestPathRuleMatchesTheCRD(t *testing.T) {
	for _, crd := range []string{"dbtune.io_scratchvolumes.yaml", "dbtune.io_readaheadpolicies.yaml"} {
		rules := pathCharRules(t, "../../config/crd/bases/"+crd)
		if len(rules) == 0 {
			t.Fatalf("%s has no path character rule", crd)
		}
		for _, re := range rules {
			for r := rune(0); r < 0x300; r++ {
				p := "/srv/a" + string(r) + "b"
				if crdAccepts, goAccepts := !re.MatchString(p), IsSafePath(p); crdAccepts != goAccepts {
					t.Errorf("%s: U+%04X: the CRD accepts it %t, IsSafePath %t", crd, r, crdAccepts, goAccepts)
				}
			}
		}
	}
}

// pathCharRules finds the rules of the form !self.matches('[...]') that mention \x00 and
// compiles their patterns as CEL would: CEL's string literal unescapes \\ to \, and CEL's
// matches uses RE2, as Go's regexp does.
func pathCharRules(t *testing.T, file string) []*regexp.Regexp {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// In the YAML the rule is single-quoted, so each ' of the CEL text is written ''.
	line := regexp.MustCompile(`rule: '!self\.matches\(''(\[[^\n]*\\\\x00[^\n]*\])''\)'`)
	var out []*regexp.Regexp
	for _, m := range line.FindAllStringSubmatch(string(data), -1) {
		pattern := strings.ReplaceAll(m[1], `\\`, `\`)
		re, err := regexp.Compile(pattern)
		if err != nil {
			t.Fatalf("%s: the rule's pattern %q does not compile: %v", file, pattern, err)
		}
		out = append(out, re)
	}
	return out
}

func TestIsSafePath(t *testing.T) {
	for p, want := range map[string]bool{
		"/var/lib/mysql-tmp":     true,
		"/srv/scratch_1.tmp-a@b": true,
		"/var/lib/mysql-tmp\n":   false,
		"/var/lib/mysql tmp":     false,
		"/a:/b":                  false,
		"/scratch#1":             false,
		"/scratch\\1":            false,
		"/scratch\x7f":           false,
		"/data;rm":               false,
		"/caf\u00e9":             false,
		"/scratch/\u01a0":        false,
	} {
		if got := IsSafePath(p); got != want {
			t.Errorf("IsSafePath(%q) = %t, want %t", p, got, want)
		}
	}
}

// TestBoundsMatchTheCRD checks that the size, headroom and version bounds the controller enforces
// are the ones the CRD's rules spell, with the messages the controller repeats.
func TestBoundsMatchTheCRD(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bases/dbtune.io_scratchvolumes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := strings.Join(strings.Fields(string(data)), " ") // long messages are folded over lines
	for _, want := range []string{
		"!quantity(string(self)).isLessThan(quantity(''" + MinScratchVolumeSize + "''))",
		"!quantity(string(self)).isGreaterThan(quantity(''" + MaxScratchVolumeSize + "''))",
		"!quantity(string(self)).isGreaterThan(quantity(''" + MaxMemoryHeadroom + "''))",
		"must be at least " + MinScratchVolumeSize,
		"must be at most " + MaxScratchVolumeSize,
		"must be at most " + MaxMemoryHeadroom,
		"message: " + VersionShapeMessage,
		"message: " + VersionBoundsMessage,
		"[0-9]{1,4}", // MaxVersionComponent's four digits
	} {
		if !strings.Contains(crd, want) {
			t.Errorf("the ScratchVolume CRD has no rule with %q", want)
		}
	}
}
