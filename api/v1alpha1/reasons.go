package v1alpha1

// The reasons of every condition the operator and the node agent write, one place for both
// binaries and for users filtering on them. A reason is part of the API: renaming one breaks
// alerts and scripts that match it, so the Go names may change and the values may not.

// Reasons of a ScratchVolume's conditions, set by the controller itself.
const (
	ReasonReady                = "Ready"
	ReasonTargetFound          = "TargetFound"
	ReasonTargetNotFound       = "TargetNotFound"
	ReasonNoConflict           = "NoConflict"
	ReasonInjected             = "Injected"
	ReasonRolledOut            = "RolledOut"
	ReasonRollingOut           = "RollingOut"
	ReasonWaitingForController = "WaitingForStatefulSetController"
	ReasonOnDelete             = "WaitingForPodDeletion"
	ReasonPartitioned          = "HeldBackByPartition"
	// ReasonScratchVolumeConflict: another, older ScratchVolume already serves the same container
	// and purpose, or mounts at the same path.
	ReasonScratchVolumeConflict = "ScratchVolumeConflict"
	// ReasonInvalidSelector: spec.target.selector cannot be parsed (stored before the API checked
	// label keys and values); nothing is selected, injected or reverted until it is fixed.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonAdmissionDenied: admission control (a ValidatingAdmissionPolicy or an admission
	// webhook) refused the controller's change to a StatefulSet; the message quotes the API
	// server's answer, which names the policy or webhook. The StatefulSet keeps what it had.
	ReasonAdmissionDenied = "AdmissionDenied"
	// ReasonControlledByOperator: the StatefulSet has a controller owner reference to a kind that
	// spec.target.allowedControllers does not list; it is left untouched, and the message names
	// the owner and says how to get the RAM volume through it instead.
	ReasonControlledByOperator = "ControlledByOperator"
	// ReasonFightingAnotherWriter: another writer kept removing the controller's entries from the
	// StatefulSet, so the controller stopped restoring them (each restore rolls the pods); the
	// message says what was removed, lists the field managers that update the StatefulSet as
	// candidates with their last update (the API server does not record who removes a field), and
	// when the controller tries again.
	ReasonFightingAnotherWriter = "FightingAnotherWriter"
	// ReasonWriteFailed: the API server refused or failed the controller's write to the
	// StatefulSet for a reason other than admission control; the message quotes the error, and
	// the controller retries with a growing delay.
	ReasonWriteFailed = "WriteFailed"
	// ReasonReconcileFailed: a step that is not tied to one StatefulSet failed (listing targets,
	// reverting a dropped one, deleting an unused ConfigMap); Ready is Unknown until a retry
	// succeeds.
	ReasonReconcileFailed = "ReconcileFailed"
)

// Reasons a ScratchVolume cannot be injected into a StatefulSet. Each becomes a condition reason
// and an Event; the StatefulSet is then left untouched.
const (
	ReasonContainerNotFound  = "ContainerNotFound"
	ReasonContainerAmbiguous = "ContainerAmbiguous"
	ReasonMountPathInUse     = "MountPathInUse"
	ReasonVolumeNameInUse    = "VolumeNameInUse"
	ReasonOverriddenByArgs   = "OverriddenByArgs"
	ReasonConfigDirUnusable  = "ConfigDirUnusable"
	ReasonArgsIgnored        = "ArgsCannotConfigure"
	ReasonUnknownImage       = "UnknownImage"
	ReasonInvalidLayout      = "InvalidLayout"
	ReasonMemoryBudget       = "MemoryLimitTooLow"
	ReasonInvalidArgs        = "InvalidArgs"
	// ReasonExtraFlagsNotMergeable: the container takes MYSQL_EXTRA_FLAGS or MARIADB_EXTRA_FLAGS
	// from a ConfigMap or Secret (valueFrom), whose words the controller can neither read nor add to.
	ReasonExtraFlagsNotMergeable = "ExtraFlagsNotMergeable"
	// ReasonEntrypointRemovesTmpdir: the container's start script removes the directory the option
	// files name as tmpdir at every start (the Percona Operator for MySQL's ps-entrypoint.sh does,
	// under set -e); with tmpdir at the RAM volume's mount point the removal fails on the busy mount
	// point and the container stops, so the drop-in is not written. Args injection, which the
	// script does not read, works.
	ReasonEntrypointRemovesTmpdir = "EntrypointRemovesTmpdir"
	// ReasonInvalidSpec: a value the current API refuses (a size that is not a whole number of
	// bytes or out of bounds, a headroom out of bounds, a spec.mysql.version with a number above
	// 9999) in an object stored before the rule; the message is the API's own.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonLimitRange: reserving the volume's memory (spec.memory.accounting: Reserve) would
	// raise a memory limit above a LimitRange's maximum for a container or a pod, so the
	// StatefulSet controller could not create the new pods; the message names the LimitRange and
	// the numbers. Nothing is written.
	ReasonLimitRange = "LimitRangeExceeded"
	// ReasonResourceQuota: reserving the volume's memory would need more memory than a
	// ResourceQuota of the namespace has left for the pods the rollout replaces; the message names
	// the quota, what it allows, what is in use and what is missing. Nothing is written.
	ReasonResourceQuota = "ResourceQuotaExceeded"
	// ReasonPodsRefused: the API server refused to create the pods of the revision that carried
	// the injection (admission control: a webhook, a ValidatingAdmissionPolicy, a quota or a
	// LimitRange); the message quotes it. The controller put the StatefulSet back at once, so its
	// controller recreates the pods from the template that worked, and does not inject again until
	// the ScratchVolume's spec, the StatefulSet's pod template or the namespace's LimitRanges and
	// ResourceQuotas change.
	ReasonPodsRefused = "PodCreationRefused"
)

// Reasons of a ScratchVolume's notes: what the user should know about an injection that still
// goes ahead (the MemoryBudget condition's reasons when the budget is not short).
const (
	ReasonNoMemoryLimit       = "NoMemoryLimit"
	ReasonNoPersistentVolume  = "NoPersistentVolume"
	ReasonMemoryReserved      = "MemoryReserved"
	ReasonMemoryNotAccounted  = "MemoryNotAccounted"
	ReasonMemoryBudgetCovered = "MemoryLimitSufficient"
	// ReasonVolumeSmallerThanSize: the pod's memory limit is below spec.size (accounting Ignore),
	// and the kubelet sizes a memory emptyDir to the smaller of the two.
	ReasonVolumeSmallerThanSize = "VolumeSmallerThanSize"
	ReasonGaleraSST             = "GaleraSSTNotMoved"
	// ReasonNotInjected: MemoryBudget is Unknown because StatefulSets were found but none is
	// planned for injection (each refused or held off for a reason the Injected condition gives),
	// so there is no memory to account for.
	ReasonNotInjected = "NotInjected"
	// ReasonNoSessionTempTablespaces: spec.mysql.sessionTempTablespaces asks for Memory on a server
	// that has none (MariaDB, MySQL before 8.0.13).
	ReasonNoSessionTempTablespaces = "NoSessionTempTablespaces"
	// ReasonNoSessionTempSpaceLimit: spec.mysql.sessionTempSpacePercent asks for a per-session
	// share of a limit the server does not have (MySQL, MariaDB before 11.5.1) or that
	// spec.mysql.tempSpaceLimit None turns off.
	ReasonNoSessionTempSpaceLimit = "NoSessionTempSpaceLimit"
)

// Reasons of a ScratchVolume's Capacity condition, from the node agents' observations of the
// pods' RAM volumes.
const (
	// ReasonCapacitySufficient: no pod's volume was found full, and none came within
	// NearFullPercent of its size over the agents' window.
	ReasonCapacitySufficient = "Sufficient"
	// ReasonCapacityNearFull: a pod's volume reached NearFullPercent of its size over the window.
	ReasonCapacityNearFull = "NearFull"
	// ReasonCapacityFull: a pod's volume was found full within the window: a write on it failed
	// with "No space left on device", or was about to.
	ReasonCapacityFull = "Full"
	// ReasonCapacityNotObserved: no node agent has sampled a pod of the targets yet (no pod runs
	// the injected template, or no agent runs on its node).
	ReasonCapacityNotObserved = "NotObserved"

	// ReasonLargePagesAsRequested: every reported pod's volume runs with the pages asked for. The
	// False reasons of the LargePages condition are the LargePagesState values; its Unknown reason
	// is NotObserved.
	ReasonLargePagesAsRequested = "AsRequested"

	// ReasonAwaitingApproval: a change nobody wrote waits for dbtune.io/approve-change.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonAwaitingWindow: a change nobody wrote waits for a maintenance window (or approval).
	ReasonAwaitingWindow = "AwaitingMaintenanceWindow"
	// ReasonNoPendingChanges: every target carries what the controller renders for it.
	ReasonNoPendingChanges = "NoPendingChanges"
	// ReasonWaitingForRolloutSlot: a target's change waits until fewer targets are in flight
	// (spec.rollout.maxInFlight).
	ReasonWaitingForRolloutSlot = "WaitingForRolloutSlot"
	// ReasonRolloutStopped: a target stayed in flight past spec.rollout.progressDeadline, and no
	// further target is changed until it is rolled out and ready.
	ReasonRolloutStopped = "RolloutStopped"
)

// Reasons of a NodeIOProfile's Probed and Degraded conditions. Probed says whether the figures in
// the status are fresh; Degraded says what went wrong, with the same reason as Probed when
// nothing could be measured.
const (
	// ReasonProbed: every target was measured completely.
	ReasonProbed = "Probed"
	// ReasonPartiallyProbed: some figures are fresh, others are missing; Degraded says why.
	ReasonPartiallyProbed = "PartiallyProbed"
	// ReasonWaitingForSlot: as many nodes as allowed are probing; this one waits for a slot.
	ReasonWaitingForSlot = "WaitingForProbeSlot"
	// ReasonAllTargetsMeasured: Degraded is False.
	ReasonAllTargetsMeasured = "AllTargetsMeasured"

	ReasonProbeTargetNotFound = "TargetNotFound"
	ReasonTargetNotDirectory  = "TargetNotDirectory"
	ReasonTargetReadOnly      = "TargetReadOnly"
	ReasonTargetNotWritable   = "TargetNotWritable"
	ReasonNotEnoughSpace      = "NotEnoughSpace"
	ReasonTargetFull          = "TargetFull"
	ReasonDeviceUnreadable    = "DeviceUnreadable"
	ReasonTimeLimit           = "TimeLimitReached"
	ReasonCanceled            = "ProbeCanceled"
	ReasonSlotLost            = "ProbeSlotLost"
	ReasonInvalidOptions      = "InvalidProbeOptions"
	ReasonProbeFailed         = "ProbeFailed"
)

// Reasons of a NodeIOProfile's ReadAheadApplied condition (written by the node agent) and of a
// ReadAheadPolicy's Applied, Degraded and Overridden conditions (summed up by the operator).
const (
	ReasonApplied             = "Applied"
	ReasonNoPolicy            = "NoPolicy"
	ReasonNoProblems          = "NoProblems"
	ReasonPending             = "Pending"
	ReasonStateFileCorrupt    = "StateFileCorrupt"
	ReasonStateFileUnreadable = "StateFileUnreadable"
	ReasonInventoryUnreadable = "InventoryUnreadable"
	ReasonDeviceNotFound      = "DeviceNotFound"
	ReasonDeviceChanged       = "DeviceChanged"
	ReasonPermissionDenied    = "PermissionDenied"
	ReasonReadOnlySysfs       = "ReadOnlySysfs"
	ReasonReadAheadFailed     = "ReadAheadFailed"
	ReasonRestoreFailed       = "RestoreFailed"
	ReasonNoDeviceMatched     = "NoDeviceMatched"
	ReasonMountPathUnresolved = "MountPathUnresolved"
	ReasonInvalidNodeSelector = "InvalidNodeSelector"
	ReasonNoMatchingNodes     = "NoMatchingNodes"
	ReasonWaitingForAgent     = "WaitingForAgent"
	ReasonNoDevices           = "NoDevices"
	ReasonDegraded            = "Degraded"
	ReasonOverridden          = "Overridden"
	ReasonNotOverridden       = "NotOverridden"
)

// Reasons of status.sizing: where an automatic resize stands (spec.sizing).
const (
	// ReasonSizingSteady: the recent peaks call for a size within a step of spec.size.
	ReasonSizingSteady = "Steady"
	// ReasonSizingNotObserved: no node agent has reported a pod of the targets yet.
	ReasonSizingNotObserved = "NotObserved"
	// ReasonSizingSustaining: the peaks call for a resize, not yet for spec.sizing.sustainFor.
	ReasonSizingSustaining = "Sustaining"
	// ReasonSizingInterval: the last automatic resize is more recent than spec.sizing.interval.
	ReasonSizingInterval = "WaitingForInterval"
	// ReasonSizingRecommendOnly: mode Recommend: the resize Automatic would make now.
	ReasonSizingRecommendOnly = "RecommendOnly"
	// ReasonSizingMemory: under accounting Validate a container's memory limit would not hold
	// the proposed size, so the controller does not apply it.
	ReasonSizingMemory = "MemoryLimitTooLow"
	// ReasonResized: the controller set spec.size.
	ReasonResized = "Resized"
)
