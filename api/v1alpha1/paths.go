package v1alpha1

import "strings"

// unsafePathChars are the printable characters an option file or a mount table reads specially:
// quotes and the backslash escape, '#' and ';' start comments in my.cnf, and ':' separates the
// directories of tmpdir.
const unsafePathChars = "\"'`#;:\\"

// IsSafePath reports whether a path is printable ASCII without the characters the API's path
// fields (AbsolutePath, ConfigPath) refuse: whitespace and unsafePathChars. Beyond ASCII, the
// option-file parser of the servers trims bytes it takes for Latin-1 spaces (0xA0 ends the UTF-8
// of U+01A0, U+0120, …), so such a path would not read back as written. The
// CRD rule on those types says the same in CEL, and a test checks that the two agree on every
// character, so the controller's layout check and admission can never drift apart.
func IsSafePath(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(unsafePathChars, r)
	})
}
