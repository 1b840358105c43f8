// Package inject decides, without any client I/O, what a ScratchVolume adds to a StatefulSet's pod
// template: the memory-backed emptyDir, its mount, the my.cnf drop-in or flags that point the
// database's temporary files at it, the init container that creates the directories that must stay
// on the persistent volume, and the memory accounting. It also reads back what is already there, so
// the controller can skip a write when nothing changed and remove exactly what it added.
package inject

import (
	"fmt"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Problem is why a ScratchVolume cannot be injected into one StatefulSet, with a message that tells
// the user what to change.
type Problem struct {
	Reason  string
	Message string
}

func (p *Problem) Error() string { return p.Reason + ": " + p.Message }

func problemf(reason, format string, args ...any) *Problem {
	return &Problem{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Note is something the user should know about an injection that still goes ahead.
type Note struct {
	Reason  string
	Message string
}

// Rechecked reports whether the problem depends on what the namespace uses, not only on the
// objects: a ResourceQuota's room, which every pod of the namespace moves. A decision with such a
// problem is made again on every sync instead of being remembered.
func (p *Problem) Rechecked() bool { return p != nil && p.Reason == v1alpha1.ReasonResourceQuota }
