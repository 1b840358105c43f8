package mysql

import (
	"fmt"
	"regexp"
	"strings"
)

// The grammar follows the distribution reference grammar that container runtimes use, so a
// reference the kubelet can pull is one this package can parse.
var (
	domainRE        = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	pathComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagRE           = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE        = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
)

const (
	dockerHubDomain       = "docker.io"
	legacyDockerHubDomain = "index.docker.io"
	officialNamespace     = "library"
	maxPathLength         = 255
)

// ImageRef is a container image reference split into its parts, with Docker Hub shorthand
// expanded: "mysql:8.0" is Domain "docker.io", Path "library/mysql", Tag "8.0".
type ImageRef struct {
	// Domain is the registry host, with its port when one was given.
	Domain string
	// Path is the repository path inside the registry, e.g. "library/mysql" or "db/mysql".
	Path string
	// Tag is empty when the reference has none.
	Tag string
	// Digest is "algorithm:hex", empty when the reference has none.
	Digest string
}

// ParseImageRef parses a container image reference such as "mysql:8.0",
// "registry.example.com:5000/db/mysql:8.0.36" or "mysql@sha256:…".
func ParseImageRef(s string) (ImageRef, error) {
	var ref ImageRef
	rest := s
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		ref.Digest, rest = rest[i+1:], rest[:i]
		if !digestRE.MatchString(ref.Digest) {
			return ImageRef{}, fmt.Errorf("invalid image reference %q: malformed digest %q", s, ref.Digest)
		}
	}
	// A colon after the last slash starts the tag; one before it belongs to a registry port.
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		ref.Tag, rest = rest[i+1:], rest[:i]
		if !tagRE.MatchString(ref.Tag) {
			return ImageRef{}, fmt.Errorf("invalid image reference %q: malformed tag %q", s, ref.Tag)
		}
	}
	ref.Domain, ref.Path = splitDomain(rest)
	if err := ref.validateName(); err != nil {
		return ImageRef{}, fmt.Errorf("invalid image reference %q: %w", s, err)
	}
	return ref, nil
}

// splitDomain decides whether the first path element names a registry. Like the container
// runtimes, it takes "localhost" and anything with a dot, a colon or an upper-case letter as a
// host; everything else is a Docker Hub repository.
func splitDomain(name string) (domain, path string) {
	i := strings.IndexByte(name, '/')
	if i < 0 || !looksLikeHost(name[:i]) {
		domain, path = dockerHubDomain, name
	} else {
		domain, path = name[:i], name[i+1:]
	}
	if domain == legacyDockerHubDomain {
		domain = dockerHubDomain
	}
	if domain == dockerHubDomain && !strings.Contains(path, "/") {
		path = officialNamespace + "/" + path
	}
	return domain, path
}

func looksLikeHost(s string) bool {
	return strings.ContainsAny(s, ".:") || s == "localhost" || strings.ToLower(s) != s
}

func (r ImageRef) validateName() error {
	if !domainRE.MatchString(r.Domain) {
		return fmt.Errorf("malformed registry host %q", r.Domain)
	}
	if len(r.Path) > maxPathLength {
		return fmt.Errorf("repository path longer than %d characters", maxPathLength)
	}
	for _, c := range strings.Split(r.Path, "/") {
		if !pathComponentRE.MatchString(c) {
			return fmt.Errorf("malformed repository path element %q (lower-case letters, digits and separators only)", c)
		}
	}
	return nil
}

// String returns the fully qualified reference, which ParseImageRef maps back to the same
// ImageRef.
func (r ImageRef) String() string {
	var b strings.Builder
	b.WriteString(r.Domain)
	b.WriteByte('/')
	b.WriteString(r.Path)
	if r.Tag != "" {
		b.WriteByte(':')
		b.WriteString(r.Tag)
	}
	if r.Digest != "" {
		b.WriteByte('@')
		b.WriteString(r.Digest)
	}
	return b.String()
}

// pathElements returns the repository path's last element and the one before it (the vendor
// namespace on Docker Hub, e.g. "bitnami"), empty when the path has a single element.
func (r ImageRef) pathElements() (owner, name string) {
	elems := strings.Split(r.Path, "/")
	name = elems[len(elems)-1]
	if len(elems) > 1 {
		owner = elems[len(elems)-2]
	}
	return owner, name
}
