package readahead

import (
	"slices"
	"strings"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Arbitration is the outcome when several policies select the same device.
type Arbitration struct {
	// Winner is the policy whose value the device gets; nil when there were no policies.
	Winner *v1alpha1.ReadAheadPolicy
	// Losers are the other policies, best first, for their Overridden condition.
	Losers []*v1alpha1.ReadAheadPolicy
}

// Arbitrate picks the policy that owns a device: the highest spec.priority, then the oldest
// (creationTimestamp), then the first by name. Age breaks ties so that creating a new policy
// never silently takes a device from one already in force; the name makes the order total, so
// every agent picks the same winner.
func Arbitrate(policies []*v1alpha1.ReadAheadPolicy) Arbitration {
	if len(policies) == 0 {
		return Arbitration{}
	}
	ordered := slices.Clone(policies)
	slices.SortStableFunc(ordered, comparePolicies)
	a := Arbitration{Winner: ordered[0]}
	if len(ordered) > 1 {
		a.Losers = ordered[1:]
	}
	return a
}

// Precedes reports whether policy a wins over policy b on a device both select.
func Precedes(a, b *v1alpha1.ReadAheadPolicy) bool { return comparePolicies(a, b) < 0 }

func comparePolicies(a, b *v1alpha1.ReadAheadPolicy) int {
	if a.Spec.Priority != b.Spec.Priority {
		if a.Spec.Priority > b.Spec.Priority {
			return -1
		}
		return 1
	}
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		if ta.Before(tb) {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}
