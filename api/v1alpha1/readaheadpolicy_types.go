package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Read-ahead bounds accepted by a ReadAheadPolicy, in KiB.
const (
	// MinReadAheadKiB is one 4 KiB page: the kernel cannot read ahead less than a page.
	MinReadAheadKiB = 4
	// MaxReadAheadKiB is 1 GiB, eight times the 128 MiB (`blockdev --setra 262144`) that is already
	// generous for sequential scans; more only wastes page cache.
	MaxReadAheadKiB = 1048576
)

// ReadAheadMode says how a policy's value combines with the device's current read-ahead.
//
// +kubebuilder:validation:Enum=Set;AtLeast
type ReadAheadMode string

const (
	// ReadAheadSet sets the device's read-ahead to the policy's value, up or down.
	ReadAheadSet ReadAheadMode = "Set"
	// ReadAheadAtLeast raises the device's read-ahead to the policy's value and never lowers it.
	ReadAheadAtLeast ReadAheadMode = "AtLeast"
)

// DeviceMapperResolution says which devices a device-mapper device (LVM, dm-crypt) stands for.
//
// +kubebuilder:validation:Enum=Device;Underlying;Both
type DeviceMapperResolution string

const (
	// DeviceMapperDevice tunes the dm device itself (dm-0): the one the filesystem reads through.
	DeviceMapperDevice DeviceMapperResolution = "Device"
	// DeviceMapperUnderlying tunes the disks under the dm device (its slaves), not the dm device.
	DeviceMapperUnderlying DeviceMapperResolution = "Underlying"
	// DeviceMapperBoth tunes the dm device and the disks under it.
	DeviceMapperBoth DeviceMapperResolution = "Both"
)

// DeviceGlob is a shell pattern over kernel block-device names, as in /sys/block: `*` and `?` match
// any characters, `[…]` a set or range (`sd[a-c]`, `nvme[0-9]n1`).
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="self.matches('^([-A-Za-z0-9_.:+*?]|[[]!?[-A-Za-z0-9_.:+]+[]])+$')",message="must be a device-name pattern such as dm-*, nvme*n1, sd? or sd[a-c]: letters, digits, '-', '_', '.', ':', '+', wildcards '*' and '?', and closed [...] sets, no '/'"
type DeviceGlob string

// DeviceSelector picks block devices on a node, by name and/or by what is mounted on them. Partitions
// resolve to their whole disk, because read-ahead belongs to the disk. Loop devices are only picked
// by a name pattern that starts with "loop"; removable media never.
//
// +kubebuilder:validation:XValidation:rule="(has(self.names) && size(self.names) > 0) || (has(self.mountPaths) && size(self.mountPaths) > 0)",message="spec.devices needs at least one name pattern (names) or mount path (mountPaths)"
type DeviceSelector struct {
	// Names are device-name patterns (dm-*, nvme*n1, sd?). A device matching any of them is selected.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	Names []DeviceGlob `json:"names,omitempty"`

	// MountPaths select the device under each mounted host path (for example /var/lib/mysql as the
	// kubelet sees it), resolved through /proc/self/mountinfo and /sys/dev/block.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	MountPaths []AbsolutePath `json:"mountPaths,omitempty"`

	// DeviceMapper says what a selected dm device stands for: Device (default: the dm device
	// itself), Underlying (the disks under it) or Both.
	//
	// +optional
	// +kubebuilder:default=Device
	DeviceMapper DeviceMapperResolution `json:"deviceMapper,omitempty"`
}

// ReadAheadPolicySpec is a read-ahead setting for some devices on some nodes.
type ReadAheadPolicySpec struct {
	// NodeSelector picks the nodes by label. Omitted: every node running the agent.
	//
	// +optional
	NodeSelector *LabelSelector `json:"nodeSelector,omitempty"`

	// Devices picks the block devices on each selected node.
	//
	// +required
	Devices DeviceSelector `json:"devices"`

	// ReadAheadKiB is the read-ahead in KiB (131072 = 128 MiB, `blockdev --setra 262144`), from 4
	// (one page) to 1048576 (1 GiB). The kernel rounds it down to whole pages.
	//
	// +required
	// +kubebuilder:validation:Minimum=4
	// +kubebuilder:validation:Maximum=1048576
	ReadAheadKiB int64 `json:"readAheadKiB"`

	// Mode is Set (default: set exactly this value) or AtLeast (raise to this value, never lower).
	//
	// +optional
	// +kubebuilder:default=Set
	Mode ReadAheadMode `json:"mode,omitempty"`

	// Priority decides between policies that select the same device: the higher wins, and on a tie
	// the older policy wins. From -1000 to 1000, default 0.
	//
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	Priority int32 `json:"priority,omitempty"`
}

// ReadAheadPolicyStatus sums up the policy across nodes.
type ReadAheadPolicyStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Applied, Degraded and Overridden (another policy wins on some device).
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// NodesMatched counts the nodes the node selector picks.
	//
	// +optional
	NodesMatched int32 `json:"nodesMatched,omitempty"`

	// NodesApplied counts the nodes where every selected device has the policy's value.
	//
	// +optional
	NodesApplied int32 `json:"nodesApplied,omitempty"`

	// NodesDegraded counts the nodes where a selected device could not be tuned.
	//
	// +optional
	NodesDegraded int32 `json:"nodesDegraded,omitempty"`
}

// ReadAheadPolicy sets block-device read-ahead on selected nodes and devices. The node agent saves
// each device's original value on the host before the first change and restores it when the policy
// no longer applies.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rap;readahead,categories=dbtune
// +kubebuilder:printcolumn:name="Read-Ahead-KiB",type=integer,JSONPath=`.spec.readAheadKiB`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.nodesMatched`,description="nodes selected"
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.nodesApplied`,description="nodes where every device is tuned"
// +kubebuilder:printcolumn:name="Degraded",type=integer,JSONPath=`.status.nodesDegraded`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReadAheadPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired read-ahead.
	//
	// +required
	Spec ReadAheadPolicySpec `json:"spec"`

	// Status sums up the policy across nodes.
	//
	// +optional
	Status ReadAheadPolicyStatus `json:"status,omitempty"`
}

// ReadAheadPolicyList is a list of ReadAheadPolicies.
//
// +kubebuilder:object:root=true
type ReadAheadPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReadAheadPolicy `json:"items"`
}

// SelectsNode reports whether the policy's nodeSelector picks a node with these labels; an
// omitted selector picks every node. The node agent applies the policy where it does, and the
// operator counts those nodes in the policy's status, so both ask here.
func (p *ReadAheadPolicy) SelectsNode(nodeLabels map[string]string) (bool, error) {
	if p.Spec.NodeSelector == nil {
		return true, nil
	}
	s, err := p.Spec.NodeSelector.AsSelector()
	if err != nil {
		return false, err
	}
	return s.Matches(labels.Set(nodeLabels)), nil
}
