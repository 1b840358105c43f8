package controllers

// Event reasons and actions, predefined so that users can filter on them
// (`kubectl get events --field-selector reason=Injected`).
const (
	// EventInjected: the ScratchVolume's entries were added to a StatefulSet.
	EventInjected = "Injected"
	// EventUpdated: the injected entries of a StatefulSet changed (new size, image, layout…).
	EventUpdated = "Updated"
	// EventRestored: entries removed by another field manager or by hand were put back.
	EventRestored = "Restored"
	// EventReverted: the ScratchVolume's entries were removed from a StatefulSet.
	EventReverted = "Reverted"
	// EventBlocked: the StatefulSet was left untouched; the note says what the user must change.
	EventBlocked = "InjectionBlocked"
	// EventMemoryWarning: the injection goes ahead, but nothing bounds tmpfs plus the database.
	EventMemoryWarning = "MemoryNotBounded"
	// EventFightingAnotherWriter: another writer kept removing the entries from a StatefulSet, and
	// the controller stopped restoring them; recorded once per fight.
	EventFightingAnotherWriter = "FightingAnotherWriter"
	// EventScratchVolumeFull: a node agent found a pod's RAM volume full; recorded once per time
	// it filled up.
	EventScratchVolumeFull = "ScratchVolumeFull"

	actionInject = "Inject"
	actionRevert = "Revert"
	actionCheck  = "Check"
	actionHold   = "Hold"
)
