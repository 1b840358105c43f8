package v1alpha1

// Every label, annotation, finalizer and field-manager name the project writes lives here, so that a
// reader can see in one place what the operator and the node agent leave on other objects.
const (
	// FieldManager is the server-side apply field manager of the ScratchVolume controller. It is the
	// only manager name the controller uses, so `kubectl get sts -o yaml --show-managed-fields` shows
	// exactly which entries belong to us.
	FieldManager = "dbtune-scratch-operator"

	// AgentFieldManager is the field manager of the node agent.
	AgentFieldManager = "dbtune-node-agent"

	// ScratchVolumeFinalizer holds a ScratchVolume until everything it injected has been removed.
	ScratchVolumeFinalizer = "dbtune.io/scratch-volume-cleanup"

	// ConfigHashAnnotation is set on an injected pod template. Its value is a hash of everything the
	// ScratchVolume injected, so a change to the injected configuration rolls the pods.
	ConfigHashAnnotation = "dbtune.io/scratch-config-hash"

	// ScratchVolumeAnnotation is set on an injected pod template and names the ScratchVolume that
	// owns the injection.
	ScratchVolumeAnnotation = "dbtune.io/scratch-volume"

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

	// ScratchVolumeLabel on an object the operator creates names the ScratchVolume it belongs to.
	ScratchVolumeLabel = "dbtune.io/scratch-volume"
)
