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
	// Env is the environment variable the flags were added to (injection: ExtraFlags).
	Env string `json:"env,omitempty"`
	// EnvFlags are the flags added to Env.
	EnvFlags []string `json:"envFlags,omitempty"`
	// EnvBefore is Env's value before the controller wrote it; nil when the container did not set
	// it. A revert gives the owner back exactly this.
	EnvBefore *string `json:"envBefore,omitempty"`
	// EnvAfter is the value the controller wrote, to tell its own value from a later edit.
	EnvAfter string `json:"envAfter,omitempty"`
	// Memory is what was added to the container's memory request and limit (accounting: Reserve).
	Memory string `json:"memory,omitempty"`
	// Request is the container's memory request that resulted, to tell the controller's value from
	// a later edit.
	Request string `json:"request,omitempty"`
	// Limit is the container's memory limit that resulted, to tell the controller's value from a
	// later edit.
	Limit string `json:"limit,omitempty"`
	// PodRequest is the pod-level memory request that resulted, where the pod sets one: a reserve
	// goes there too, since the pod's resources must hold the containers'.
	PodRequest string `json:"podRequest,omitempty"`
	// PodLimit is the pod-level memory limit that resulted, where the pod sets one.
	PodLimit string `json:"podLimit,omitempty"`
}
