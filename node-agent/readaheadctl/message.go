package readaheadctl

import (
	"fmt"
	"strings"
)

// A device entry in a NodeIOProfile says which policy owns the device; the policies it beat are
// recorded at the end of the entry's message, in a fixed form that the operator's ReadAheadPolicy
// status controller (controllers/readaheadstatus) reads back for their Overridden condition.
// Policy names are DNS subdomains, so they never hold the ", " and ":" that delimit the list.
const (
	overridesPrefix = "overrides ReadAheadPolicy "
	overridesSuffix = ": they select this device too but rank lower (priority, then age)"
	messageJoin     = "; "
)

// EntryMessage joins what went wrong with a device (may be empty) and the policies that lost it.
func EntryMessage(issue string, losers []string) string {
	var parts []string
	if issue != "" {
		parts = append(parts, issue)
	}
	if len(losers) > 0 {
		parts = append(parts, overridesPrefix+strings.Join(losers, ", ")+overridesSuffix)
	}
	return strings.Join(parts, messageJoin)
}

// ParseEntryMessage splits an entry's message into what went wrong and the policies that lost. It
// is exported for the operator, which reads the NodeIOProfiles the agents write.
func ParseEntryMessage(msg string) (issue string, losers []string) {
	i := strings.LastIndex(msg, overridesPrefix)
	if i < 0 || (i > 0 && !strings.HasSuffix(msg[:i], messageJoin)) {
		return msg, nil
	}
	list, _, ok := strings.Cut(msg[i+len(overridesPrefix):], ":")
	if !ok {
		return msg, nil
	}
	return strings.TrimSuffix(msg[:i], messageJoin), strings.Split(list, ", ")
}

// maxListed bounds the items named in a condition message, so that a large node or fleet keeps
// its conditions readable.
const maxListed = 8

// listed joins items, naming at most maxListed of them.
func listed(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, messageJoin)
	}
	return strings.Join(items[:maxListed], messageJoin) + fmt.Sprintf("%sand %d more", messageJoin, len(items)-maxListed)
}

// plural picks the singular or plural of a noun for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
