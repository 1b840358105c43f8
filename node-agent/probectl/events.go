package probectl

// Event reasons and actions on a NodeIOProfile, predefined so that users can filter on them
// (`kubectl get events --field-selector reason=ProbeDegraded`).
const (
	// EventProbed: a run measured every target.
	EventProbed = "Probed"
	// EventProbeDegraded: a run measured some targets only, or none; the note says why and what
	// to do.
	EventProbeDegraded = "ProbeDegraded"

	actionProbe = "Probe"
)
