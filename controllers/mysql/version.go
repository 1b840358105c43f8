package mysql

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Version is a server release ("8.0.36") or a release line named by a floating tag ("8.0", "8",
// "latest").
//
// A release line stands for its newest release, because that is what the floating tag pulls:
// "mysql:8.0" has named 8.0.26 or later since July 2021, so it reads replica_load_tmpdir, and
// "mysql:5.7" is past 5.7.11, so it has innodb_tmpdir. This is safe even where a node still
// runs an older build under the same tag (a cached image, a digest pinned years ago): the
// option the newer name implies is unknown to the older server, and mysqld refuses to start on
// an unknown option rather than ignoring it. The pod fails visibly, the StatefulSet rollout
// stops at it, and no temporary file silently lands on the RAM volume; spec.mysql.version fixes
// it. The option files are never written with the "loose-" prefix for the same reason.
type Version struct {
	Major, Minor, Patch int
	// MinorGiven and PatchGiven say which components were named; a missing one floats forward.
	MinorGiven, PatchGiven bool
	// Latest is a floating tag with no number at all: no tag, "latest", "lts", "innovation" and
	// the like. Such tags have named releases past every threshold checked here for years.
	Latest bool
}

// maxVersionComponent bounds each number so that absurd tags are rejected instead of guessed at.
// spec.mysql.version has the same bound at admission.
const maxVersionComponent = v1alpha1.MaxVersionComponent

// errComponentRange is a version number above maxVersionComponent.
var errComponentRange = errors.New("is out of range")

// floatingTag reports whether a tag (cut before its distribution suffix) names the newest
// release rather than a version number.
func floatingTag(head string) bool {
	switch head {
	case "latest", "lts", "innovation", "oracle", "debian", "ubi", "focal", "jammy", "noble":
		return true
	}
	return false
}

// ParseVersion parses "MAJOR", "MAJOR.MINOR" or "MAJOR.MINOR.PATCH".
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		return Version{}, fmt.Errorf("invalid version %q: want MAJOR.MINOR or MAJOR.MINOR.PATCH", s)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := parseComponent(p)
		if err != nil {
			return Version{}, fmt.Errorf("invalid version %q: %w", s, err)
		}
		nums[i] = n
	}
	return Version{
		Major: nums[0], Minor: nums[1], Patch: nums[2],
		MinorGiven: len(parts) > 1, PatchGiven: len(parts) > 2,
	}, nil
}

func parseComponent(p string) (int, error) {
	if p == "" || strings.TrimLeft(p, "0123456789") != "" {
		return 0, fmt.Errorf("component %q is not a number", p)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n > maxVersionComponent {
		return 0, fmt.Errorf("component %q %w", p, errComponentRange)
	}
	return n, nil
}

// versionFromTag reads the version an image tag names. Tags carry distribution suffixes
// ("10.11.6-jammy", "8.0-oracle", "8.0.36-debian-12-r8", Percona's "8.0.35-27"), which are cut
// at the first '-' or '_'. No tag means "latest".
func versionFromTag(tag string) (Version, bool) {
	if tag == "" {
		return Version{Latest: true}, true
	}
	head := tag
	if i := strings.IndexAny(head, "-_"); i >= 0 {
		head = head[:i]
	}
	if floatingTag(head) {
		return Version{Latest: true}, true
	}
	if len(head) > 1 && head[0] == 'v' && head[1] >= '0' && head[1] <= '9' {
		head = head[1:]
	}
	v, err := ParseVersion(head)
	return v, err == nil
}

// String renders the version as it was given: "8.0.36", "8.0", "8" or "latest".
func (v Version) String() string {
	switch {
	case v.Latest:
		return "latest"
	case v.PatchGiven:
		return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	case v.MinorGiven:
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	default:
		return strconv.Itoa(v.Major)
	}
}

// AtLeast reports whether v is major.minor.patch or later. A floating component counts as the
// newest release of its line, so "8.0" is at least 8.0.26 and "5.7" is at least 5.7.11.
func (v Version) AtLeast(major, minor, patch int) bool {
	if v.Latest {
		return true
	}
	if v.Major != major {
		return v.Major > major
	}
	if !v.MinorGiven {
		return true
	}
	if v.Minor != minor {
		return v.Minor > minor
	}
	return !v.PatchGiven || v.Patch >= patch
}
