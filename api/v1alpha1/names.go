package v1alpha1

// Every label, annotation, finalizer and field-manager name the project writes lives here, so that a
// reader can see in one place what the operator and the node agent leave on other objects.
const (
	// FieldManager is the server-side apply field manager of the ScratchVolume controller. It is the
	// only manager name the controller uses, so `kubectl get sts -o yaml --show-managed-fields` shows
	// exactly which entries belong to us.
	FieldManager = "dbtune-scratch-operator"

	// SizingFieldManager is the field manager of the controller's writes of spec.size under
	// spec.sizing.mode Automatic: the field a GitOps tool must leave to it (docs/gitops.md).
	SizingFieldManager = "dbtune-scratch-operator-sizing"

	// AgentFieldManager is the field manager of the node agent.
	AgentFieldManager = "dbtune-node-agent"

	// ScratchVolumeFinalizer holds a ScratchVolume until everything it injected has been removed.
	ScratchVolumeFinalizer = "dbtune.io/scratch-volume-cleanup"

	// InjectionAnnotationPrefix starts the pod-template annotation each ScratchVolume sets on the
	// StatefulSets it injects: `scratch.dbtune.io/<ScratchVolume name>: <config hash>`. The hash covers
	// everything injected, so a change rolls the pods; the key tells which ScratchVolumes are present.
	InjectionAnnotationPrefix = "scratch.dbtune.io/"

	// StateAnnotationPrefix starts the pod-template annotation that records what a ScratchVolume
	// changed outside its own keyed entries: the flags it appended to a container's args
	// (`injection: Args`) and the memory it added to the container's request and limit
	// (`memory.accounting: Reserve`), with the values that resulted. It is how the controller removes
	// exactly its own flags and memory later, and notices when someone else changed them.
	StateAnnotationPrefix = "state.scratch.dbtune.io/"

	// ObjectPrefix starts the names of the volumes, init container and ConfigMaps the controller adds,
	// so that they can never be mistaken for the user's.
	ObjectPrefix = "dbtune-"

	// ProbeRequestedAnnotation on a NodeIOProfile asks the node agent to probe again now. Any new
	// value (a timestamp is customary) triggers one run; the agent records the value it served in
	// ProbeServedAnnotation.
	ProbeRequestedAnnotation = "dbtune.io/probe-requested"

	// ProbeServedAnnotation records the last ProbeRequestedAnnotation value the agent has served.
	ProbeServedAnnotation = "dbtune.io/probe-served"

	// ManagedByLabel marks objects the operator creates (the my.cnf drop-in ConfigMaps).
	ManagedByLabel = "app.kubernetes.io/managed-by"

	// ManagedByValue is the value of ManagedByLabel on objects the operator creates.
	ManagedByValue = "dbtune-scratch-operator"

	// TargetAnnotation on a drop-in ConfigMap names the StatefulSet it serves.
	TargetAnnotation = "dbtune.io/target"

	// ScratchVolumeLabel on an object the operator creates names the ScratchVolume it belongs to.
	ScratchVolumeLabel = "dbtune.io/scratch-volume"

	// ApproveChangeAnnotation on a ScratchVolume approves pending changes: its value is a
	// comma-separated list of status.targets[].pendingChange.id values. Every target whose pending
	// change has one of them gets it applied; a change with another ID keeps waiting.
	ApproveChangeAnnotation = "dbtune.io/approve-change"

	// ScratchOptInLabel, set to "true" on a StatefulSet, is what the sample ValidatingAdmissionPolicy
	// of config/samples/policy requires before the operator may add or change its entries there.
	// The operator itself never reads it: the policy enforces it, at admission.
	ScratchOptInLabel = "dbtune.io/scratch-opt-in"
)
