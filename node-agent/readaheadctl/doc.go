// Package readaheadctl applies ReadAheadPolicies on one node and reports the outcome.
//
// Setup adds the node reconciler to the node agent's manager. It has a single work item, the node,
// queued by ReadAheadPolicy events, by label changes of its own Node, when the host's list of block
// devices changes and every Config.ResyncPeriod. Each pass gathers the policies, the Node's labels,
// the host's block devices and the saved originals, decides in pure functions which policy owns
// which device and which saved devices no policy owns any more, acts through a readahead.Host and
// readahead.Store (saving originals before the first change, repairing values changed by hand,
// restoring originals), and reports per device in the node's NodeIOProfile (status.readAhead, and
// the ReadAheadApplied condition, which carries every problem with its reason), with Events on the
// Node and the dbtune_node_read_ahead_bytes gauge.
//
// Each ReadAheadPolicy's status is summed up from the NodeIOProfiles by the operator
// (controllers/readaheadstatus), so that no two agents ever write the same policy, and so that
// the agent's role needs no write access to policies. Each device entry names its policy and the
// policies it outranks (OverriddenPolicies), which is all the operator needs; node selection
// (ReadAheadPolicy.SelectsNode) and the condition reasons are the API's, so the operator shares
// nothing with this package.
//
// Originals are restored when a policy stops applying to a device (the policy is deleted, the
// node no longer matches its nodeSelector, the device is no longer selected, another policy's
// value now wins), never because the agent stops: the state file lives in a host directory and
// a restarted agent carries on from it. A state file that cannot be read stops every change
// until it is repaired, since guessing would lose the originals it holds.
package readaheadctl
