// Package conditions holds what the operator and the node agent share to write the conditions of
// the API's objects: messages that name a bounded number of items, plurals, and transition times
// that move only when a condition's status does. The condition types and reasons themselves are
// part of the API (api/v1alpha1).
package conditions

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxListed bounds the items named in a condition message, so that a large node or fleet keeps
// its conditions readable in `kubectl describe`.
const MaxListed = 8

// List joins sentences with "; ", naming at most limit of them: "a; b; and 3 more".
func List(items []string, limit int) string {
	return ListFirst(items[:min(len(items), limit)], len(items))
}

// ListFirst joins the sentences shown, the first of total, with "; " and counts the others:
// "a; b; and 3 more". It spares describing the items a message does not name.
func ListFirst(shown []string, total int) string {
	if total <= len(shown) {
		return strings.Join(shown, "; ")
	}
	return strings.Join(shown, "; ") + fmt.Sprintf("; and %d more", total-len(shown))
}

// Names joins names with ", ", naming at most limit of them: "a, b and 3 more".
func Names(items []string, limit int) string {
	return join(items, ", ", " ", limit)
}

func join(items []string, sep, beforeMore string, limit int) string {
	if len(items) <= limit {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:limit], sep) + fmt.Sprintf("%sand %d more", beforeMore, len(items)-limit)
}

// MaxEventNote is the API server's limit on an Event's note, in bytes.
const MaxEventNote = 1024

// Cut shortens s to at most limit bytes, on a character boundary, and ends what it shortened with
// " …". Event notes and condition messages have byte limits that a list of names can pass.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit-len(" …")], "") + " …"
}

// Plural picks the singular or plural of a noun for n.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// KeepTransitionTimes sets each condition's lastTransitionTime: the old one while its status
// stays, now when it changes or the condition is new.
func KeepTransitionTimes(conditions, old []metav1.Condition, now metav1.Time) {
	for i := range conditions {
		c := &conditions[i]
		c.LastTransitionTime = now
		if prev := meta.FindStatusCondition(old, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}
}
