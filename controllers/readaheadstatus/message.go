package readaheadstatus

import (
	"fmt"
	"strings"
)

// maxListed bounds the items named in a condition message, so that a large fleet keeps its
// conditions readable. It matches the node agent's bound for the NodeIOProfile conditions.
const maxListed = 8

const messageJoin = "; "

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
