package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// dnsSubdomain joins prefix and name into a valid object name (a DNS-1123 subdomain, at most 253
// characters), cutting and hashing a name that is too long.
func dnsSubdomain(prefix, name string) string {
	return shorten(prefix+name, name, 253)
}

// dnsLabel joins prefix and name into a valid DNS-1123 label (volume names must be one): dots become
// dashes, and a name too long is cut and given a short hash so two long names stay distinct.
func dnsLabel(prefix, name string) string {
	return shorten(prefix+strings.ReplaceAll(name, ".", "-"), name, 63)
}

func shorten(s, name string, limit int) string {
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	return strings.TrimRight(s[:limit-len(suffix)], "-.") + suffix
}
