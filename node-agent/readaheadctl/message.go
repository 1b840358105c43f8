package readaheadctl

import (
	"fmt"
	"strings"
)

// messageJoin separates the items of a condition or event message.
const messageJoin = "; "

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
