package readaheadctl

import (
	"time"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// FieldManager owns status.readAhead and the ReadAheadApplied condition of a NodeIOProfile. It
// differs from the probe's manager so that server-side apply keeps the two writers' fields
// apart: neither can drop or overwrite the other's. The Degraded condition is the probe's: a
// condition written by two managers with different values would flip with every write, so
// read-ahead problems are told by ReadAheadApplied (False, with the problem's reason) instead.
const FieldManager = v1alpha1.AgentFieldManager + "-readahead"

// Defaults and names.
const (
	// DefaultResyncPeriod is how often a node re-reads its devices to repair drift.
	DefaultResyncPeriod = time.Minute
	// DefaultDeviceScanPeriod is how often the host's list of block devices is compared with the
	// last one, so that a new disk is tuned without waiting for the resync.
	DefaultDeviceScanPeriod = 10 * time.Second
	// DefaultStateDir is the conventional host directory for the state file: under /run it is
	// cleared on reboot, when the kernel has forgotten every read-ahead change anyway.
	DefaultStateDir = "/run/dbtune-node-agent"

	nodeControllerName = "readahead-node"
	eventSource        = "dbtune-node-agent"
)

// Event reasons on the Node, predefined so that users can filter on them
// (`kubectl get events --field-selector reason=ReadAheadDriftRepaired`).
const (
	// EventApplied: a device's read-ahead was set for a policy.
	EventApplied = "ReadAheadApplied"
	// EventDriftRepaired: a device's read-ahead had been changed outside the agent and was set
	// back to the policy's value.
	EventDriftRepaired = "ReadAheadDriftRepaired"
	// EventRestored: a device no policy owns any more got its original read-ahead back.
	EventRestored = "ReadAheadRestored"
	// EventDeviceGone: a device with a saved original has gone away; its original was dropped.
	EventDeviceGone = "ReadAheadDeviceGone"
	// EventFailed: a device, a policy or the state file could not be handled; the note says why.
	EventFailed = "ReadAheadFailed"

	actionSet     = "SetReadAhead"
	actionRestore = "RestoreReadAhead"
	actionCheck   = "CheckReadAhead"
)
