package v1alpha1

// Condition types of a ScratchVolume.
const (
	// ConditionReady sums up the others: True when every target is injected and rolled out.
	ConditionReady = "Ready"
	// ConditionTargetFound is True when the target selects at least one StatefulSet.
	ConditionTargetFound = "TargetFound"
	// ConditionMemoryBudget is False when a container's memory cannot hold the volume.
	ConditionMemoryBudget = "MemoryBudget"
	// ConditionInjected is True when every selected StatefulSet carries the volume.
	ConditionInjected = "Injected"
	// ConditionRolledOut is True when every pod of every target runs the injected template.
	ConditionRolledOut = "RolledOut"
	// ConditionConflict is True when the injection would collide with something the user, another
	// ScratchVolume or another controller owns (an owning operator, a writer that keeps removing
	// the entries); the StatefulSet is then left untouched.
	ConditionConflict = "Conflict"
	// ConditionCapacity is True when the pods' RAM volumes have room to spare (reason Sufficient),
	// False when one came close to full or filled up (NearFull, Full), Unknown before a node agent
	// has observed any (NotObserved). It does not count towards Ready.
	ConditionCapacity = "Capacity"
	// ConditionChangesPending is True when a change nobody wrote in the ScratchVolume or a
	// StatefulSet waits for approval or a maintenance window (reasons AwaitingApproval,
	// AwaitingMaintenanceWindow), False when none does (NoPendingChanges). It does not count
	// towards Ready: the targets keep a working configuration meanwhile.
	ConditionChangesPending = "ChangesPending"
	// ConditionLargePages is True when every reported pod's RAM volume runs with the pages
	// spec.largePages asks for (reason AsRequested), False when one does not (the LargePagesState
	// of the first such pod: Unsupported, Overridden, Disabled or Failed), Unknown before a node
	// agent has reported a pod (NotObserved). It does not count towards Ready: a volume without
	// large pages works, only slower.
	ConditionLargePages = "LargePages"
)

// Condition types of a NodeIOProfile.
const (
	// ConditionProbed is True when the last probe run completed.
	ConditionProbed = "Probed"
	// ConditionReadAheadApplied is True when every device a policy selects has its value.
	ConditionReadAheadApplied = "ReadAheadApplied"
	// ConditionDegraded is True when a probe target or a device could not be handled.
	ConditionDegraded = "Degraded"
)

// Condition types of a ReadAheadPolicy.
const (
	// ConditionApplied is True when every matched node applied the policy.
	ConditionApplied = "Applied"
	// ConditionOverridden is True when a policy of higher priority wins on some device.
	ConditionOverridden = "Overridden"
)
