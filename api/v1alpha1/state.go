package v1alpha1

// InjectionState is the content of a ScratchVolume's state annotation on a pod template
// (StateAnnotationPrefix + the ScratchVolume's name): what the controller changed in fields that
// server-side apply cannot share, and the values that resulted. The controller reads it to take
// back exactly its own flags and memory; kubectl dbtune explain reads it to say what was added.
//
// +kubebuilder:object:generate=false
type InjectionState struct {
	// Container is the container the changes were made in.
	Container string `json:"container"`
	// Args are the flags appended to the container's args (injection: Args).
	Args []string `json:"args,omitempty"`
	// Env is the variable EnvFlags were added to (injection: ExtraFlags); EnvBefore is its value
	// before (nil: the container did not set it) and EnvAfter the value written, to tell the
	// controller's value from a later edit and to give the owner back exactly theirs.
	Env       string   `json:"env,omitempty"`
	EnvFlags  []string `json:"envFlags,omitempty"`
	EnvBefore *string  `json:"envBefore,omitempty"`
	EnvAfter  string   `json:"envAfter,omitempty"`
	// Memory is what was added to the container's memory request and limit (accounting: Reserve).
	Memory string `json:"memory,omitempty"`
	// Request and Limit are the container's values that resulted, to tell the controller's value
	// from a later edit.
	Request string `json:"request,omitempty"`
	Limit   string `json:"limit,omitempty"`
	// PodRequest and PodLimit are the pod-level memory request and limit that resulted, where the
	// pod sets them: a reserve goes there too, which must hold the containers'.
	PodRequest string `json:"podRequest,omitempty"`
	PodLimit   string `json:"podLimit,omitempty"`
}
