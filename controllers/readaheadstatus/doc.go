// Package readaheadstatus is the operator's side of read-ahead: it sums up the NodeIOProfiles
// that the node agents write into each ReadAheadPolicy's status (nodes matched, applied and
// degraded, and the Applied, Degraded and Overridden conditions).
//
// It is a package of its own because controller-gen merges every RBAC marker of a package into
// one role: kept apart from the node agent's reconciler (node-agent/readaheadctl), the operator's
// role gets write access to policy status only, and the agent's role to NodeIOProfiles only.
package readaheadstatus
